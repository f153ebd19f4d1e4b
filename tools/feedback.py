"""The ``feedback`` tool: judge a recall's results so future recalls rank better."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from doxa.tools.answer import answer
from doxa.tools.context import call
from doxa.tools.identity import writer

if TYPE_CHECKING:
    from doxa.store.sharing import SharedMemory

DESCRIPTION = """Judge a recall after using its results: `accepted` are the ids that
answered the question, `rejected` those that were wrong or off-topic. Similar later queries
rank accepted results higher; the same query ranks rejected ones lower. Each recall can be
judged once."""


class FeedbackResult(BaseModel):
    """What was recorded."""

    recall_id: str
    accepted: list[str] = Field(default_factory=list)
    rejected: list[str] = Field(default_factory=list)
    impressions: int = Field(description="results of the recall that were counted as shown")


async def feedback(
    ctx: Context[Any],
    recall_id: Annotated[str, Field(description="from recall")],
    accepted: Annotated[list[str], Field(description="ids that helped")] = [],  # noqa: B006
    rejected: Annotated[list[str], Field(description="ids that did not")] = [],  # noqa: B006
) -> Annotated[CallToolResult, FeedbackResult]:
    """Record a judgement on a recall."""
    writer("feedback")  # judging changes the ranking every agent gets: not for read-only

    def run(memory: SharedMemory) -> CallToolResult:
        judged = memory.feedback(recall_id, accepted, rejected)
        return answer(
            FeedbackResult(
                recall_id=judged.recall_id,
                accepted=judged.accepted,
                rejected=judged.rejected,
                impressions=judged.impressions,
            )
        )

    return await call(ctx, run)
