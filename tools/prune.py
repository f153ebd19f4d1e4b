"""The ``prune`` tool: retire what nobody uses and merge near-duplicates; a dry run unless
told otherwise."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import BaseModel, Field, StrictBool

from doxa.tools.answer import answer
from doxa.tools.context import DecimalInput, Number, WholeNumber, call
from doxa.tools.identity import writer

if TYPE_CHECKING:
    from doxa.store.pruning import Pruned
    from doxa.store.sharing import SharedMemory

DESCRIPTION = """Retire unused memories (confidence <= max_confidence, shown >=
min_impressions times, never accepted, min_age_days old) and merge an agent's near-duplicates
(cosine >= merge_similarity, same numbers and names); audited as by forget. dry_run (the
default) only lists; values left out: the server's."""

#: Retirements listed in an answer (the counts count them all): a model needs a sample to
#: judge the rule by, not thousands of texts.
LISTED = 20
#: Characters of each listed text.
TEXT_CHARS = 80


class PrunedItem(BaseModel):
    """One observation retired, or that would be."""

    observation_id: str
    text: str
    reason: str = Field(description="unused or merged")
    merged_into: str | None = None


class PruneResult(BaseModel):
    """What was, or would be, retired."""

    dry_run: bool
    unused: int
    merged: int
    retired: list[PrunedItem] = Field(default_factory=list)
    more: int = Field(0, description="retired but not listed")


def summary(done: Pruned) -> PruneResult:
    """The tool's lean view of a prune (the CLI prints the same)."""
    return PruneResult(
        dry_run=not done.applied,
        unused=done.unused,
        merged=done.merged,
        retired=[
            PrunedItem(
                observation_id=r.observation_id,
                text=r.text if len(r.text) <= TEXT_CHARS else r.text[: TEXT_CHARS - 1] + "…",
                reason=r.reason,
                merged_into=r.merged_into,
            )
            for r in done.retired[:LISTED]
        ],
        more=max(0, len(done.retired) - LISTED),
    )


async def prune(
    ctx: Context[Any],
    # Named in the description, which says what each does: no descriptions of their own.
    dry_run: StrictBool = True,
    max_confidence: DecimalInput | None = None,
    min_impressions: WholeNumber | None = None,
    min_age_days: Number | None = None,
    merge_similarity: Number | None = None,
    merge: StrictBool | None = None,
) -> Annotated[CallToolResult, PruneResult]:
    """Prune the memory (dry run by default)."""
    who = writer("prune")
    if who is not None and not who.admin:
        # It retires any agent's observations: as forget does for others', an admin's call.
        raise ToolError(
            f"prune: this connection's token (agent {who.agent!r}) is not an admin token;"
            " pruning retires every agent's observations. Use a token created with --admin"
        )
    rule = {
        "max_confidence": max_confidence,
        "min_impressions": min_impressions,
        "min_age_days": min_age_days,
        "merge_similarity": merge_similarity,
        "merge": merge,
    }

    def run(memory: SharedMemory) -> CallToolResult:
        return answer(summary(memory.prune(rule, apply=not dry_run)))

    return await call(ctx, run)
