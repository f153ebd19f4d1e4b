"""The ``find_conflicts`` tool: contradictions and clashing facts, current or planned."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from doxa.store.values import iso
from doxa.tools.answer import answer
from doxa.tools.budget import cap, cut, cut_note
from doxa.tools.context import WholeNumber, call, exact

if TYPE_CHECKING:
    from doxa.store.sharing import SharedMemory

DESCRIPTION = """Find what the memory holds that cannot all be true: "contradiction"
(linked by `contradicts`, until a newer fact supersedes a side) and "clash" (current or planned
facts, same subject and predicate, different objects, e.g. from different agents). Filter by
`agent`, by `agent` and `other_agent` (where the two disagree), or by `topic`. Call it before
acting on a shared plan."""


class Side(BaseModel):
    """One side of a conflict."""

    observation_id: str
    text: str
    confidence: str
    agents: list[str] = Field(default_factory=list)


class Conflict(BaseModel):
    """Two observations that cannot both be true."""

    kind: Literal["contradiction", "clash"]
    a: Side
    b: Side
    subject: str | None = None
    predicate: str | None = None
    since: str | None = Field(None, description="when the contradiction was recorded")
    begins: str | None = None  # a clash to come: where both sides first hold


class ConflictsResult(BaseModel):
    """The conflicts found: the first ``limit``, and how many there are."""

    conflicts: list[Conflict]
    count: int
    note: str | None = Field(None, description="why none was found, or what was cut")


def within_budget(conflicts: list[Conflict]) -> tuple[list[Conflict], str | None]:
    """``conflicts`` with their sides' longest texts cut, each to one length, to keep the
    answer within the text budget, and a note of what was cut; as given, and None, when they
    fit. A long text is cut in every conflict it is a side of: fifty conflicts over one
    design document repeated it fifty times."""
    sides = [side for c in conflicts for side in (c.a, c.b)]
    most = cap([len(side.text) for side in sides])
    if most is None:
        return conflicts, None

    def shortened(side: Side) -> Side:
        return side.model_copy(update={"text": cut(side.text, most)})

    kept = [c.model_copy(update={"a": shortened(c.a), "b": shortened(c.b)}) for c in conflicts]
    return kept, cut_note(sum(len(side.text) > most for side in sides), most)


def _conflict(c: dict[str, Any]) -> Conflict:
    return Conflict(
        kind=c["kind"],
        a=Side(
            observation_id=c["a"],
            text=c["a_text"],
            confidence=exact(c["a_confidence"]) or "0",
            agents=c["a_agents"],
        ),
        b=Side(
            observation_id=c["b"],
            text=c["b_text"],
            confidence=exact(c["b_confidence"]) or "0",
            agents=c["b_agents"],
        ),
        subject=c.get("subject"),
        predicate=c.get("predicate"),
        since=iso(c.get("at")),
        begins=iso(c.get("begins")),
    )


async def find_conflicts(
    ctx: Context[Any],
    agent: Annotated[str | None, Field(description="only those involving this agent")] = None,
    other_agent: Annotated[
        str | None, Field(description="with agent: only between the two")
    ] = None,
    topic: Annotated[str | None, Field(description="only those naming this topic")] = None,
    known_at: Annotated[
        str | None, Field(description="ISO 8601: answer with what the memory held then")
    ] = None,
    limit: Annotated[WholeNumber, Field(description="1..1000; count tells all")] = 50,
) -> Annotated[CallToolResult, ConflictsResult]:
    """List contradictions and clashing facts."""

    def run(memory: SharedMemory) -> CallToolResult:
        found = memory.conflicts(agent, other_agent, topic, known_at, limit)
        conflicts, cut = within_budget([_conflict(c) for c in found["conflicts"]])
        note = found.get("note") or cut
        return answer(ConflictsResult(conflicts=conflicts, count=found["count"], note=note))

    return await call(ctx, run)
