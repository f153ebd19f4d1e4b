"""The ``find_conflicts`` tool: contradictions and clashing current facts."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from doxa.store.values import iso
from doxa.tools.context import call, exact

DESCRIPTION = """Find what the memory holds that cannot all be true.

Two kinds: "contradiction" (observations explicitly linked with `contradicts` when
remembered) and "clash" (two current facts with the same subject and predicate but different
objects, e.g. believed by different agents). With `agent`: only conflicts involving that
agent's beliefs; with `agent` and `other_agent`: only where the two agents disagree; with
`topic`: only where either side mentions the topic. Call it before acting on a shared plan.

Returns {conflicts: [{kind, a: {observation_id, text, confidence, agents}, b: {...}, subject,
predicate, since}], count}.
Example: find_conflicts(agent="scout", other_agent="driver")"""


class Side(BaseModel):
    """One side of a conflict."""

    observation_id: str
    text: str
    confidence: str
    agents: list[str]


class Conflict(BaseModel):
    """Two observations that cannot both be true."""

    kind: Literal["contradiction", "clash"]
    a: Side
    b: Side
    subject: str | None = None
    predicate: str | None = None
    since: str | None = Field(None, description="when the contradiction was recorded")


class ConflictsResult(BaseModel):
    """The conflicts found."""

    conflicts: list[Conflict]
    count: int


async def find_conflicts(
    ctx: Context[Any],
    agent: Annotated[str | None, Field(description="only conflicts involving this agent")] = None,
    other_agent: Annotated[
        str | None, Field(description="with agent: only between the two")
    ] = None,
    topic: Annotated[str | None, Field(description="only conflicts mentioning this topic")] = None,
    known_at: Annotated[
        str | None, Field(description="ISO 8601: answer with what the memory held then")
    ] = None,
) -> ConflictsResult:
    """List contradictions and clashing facts."""
    found = await call(ctx, lambda memory: memory.conflicts(agent, other_agent, topic, known_at))
    conflicts = [
        Conflict(
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
        )
        for c in found
    ]
    return ConflictsResult(conflicts=conflicts, count=len(conflicts))
