"""The ``remember`` tool: store one observation (or many) as the agent's belief."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from doxa.store.drafts import FactDraft, MemoryDraft, SupportDraft
from doxa.tools.context import DecimalInput, call
from doxa.tools.identity import own_agent, writer

if TYPE_CHECKING:
    from doxa.store.memory import Remembered
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ConfigDict, Field

DESCRIPTION = """Store something worth remembering as a typed, dated observation that the
agent believes.

Call it when you learn a fact, a preference, a decision or an event that may matter in a later
conversation. One observation per call, or many at once with `memories` (for imports and
end-of-conversation summaries). Facts with identity: give `fact` {subject, predicate, object}
and a newer fact with the same agent, subject and predicate replaces the old one (the old one
stays queryable with `recall(as_of=...)`). Confidence is an exact decimal between 0 and 1.
Link evidence with `supports` [{belief_id, weight}] and disagreement with `contradicts`
[observation ids]. Remembering the same text again returns the existing ids (`duplicate_of`).

Returns {observation_id, belief_id, topics, superseded, duplicate_of, conflicts, remembered}.
Example: remember(text="The bridge on Route 9 is closed for repairs.", topics=["bridge",
"route-9"], confidence="0.9", source="radio report")"""


class FactInput(BaseModel):
    """A subject-predicate-object fact with optional validity."""

    # An unknown key is refused, not dropped: a misspelt field would store the default.
    model_config = ConfigDict(extra="forbid")

    subject: str = Field(description='what the fact is about, e.g. "Alice"')
    predicate: str = Field(description='the relation, e.g. "lives in"')
    object: str = Field(description='the value, e.g. "Paris"')
    valid_from: str | None = Field(None, description="ISO 8601; default: observed_at")
    valid_until: str | None = Field(None, description="ISO 8601; default: open-ended")
    cardinality: Literal["one", "many"] | None = Field(
        None,
        description='"many": objects accumulate (likes); "one": a newer object replaces the'
        " current one; default: the predicate's own (set by its first fact)",
    )


class SupportInput(BaseModel):
    """This observation is evidence for an existing belief."""

    model_config = ConfigDict(extra="forbid")

    belief_id: str = Field(description="a belief_id returned by remember or recall")
    weight: DecimalInput = Field("1", description="exact decimal 0..1, how strongly")


class MemoryInput(BaseModel):
    """One memory in a batch: the same fields as a single remember call."""

    model_config = ConfigDict(extra="forbid")

    text: str
    topics: list[str] = Field(default_factory=list)
    agent: str | None = None
    confidence: DecimalInput = "1"
    observed_at: str | None = None
    source: str | None = None
    episode: str | None = None
    fact: FactInput | None = None
    supports: list[SupportInput] = Field(default_factory=list)
    contradicts: list[str] = Field(default_factory=list)


class RememberedItem(BaseModel):
    """What happened to one memory."""

    observation_id: str
    belief_id: str
    topics: list[str]
    superseded: list[str] = Field(description="ids of older facts this one replaced")
    duplicate_of: str | None = Field(description="set when the text was already remembered")
    conflicts: list[str] = Field(description="other agents' current facts this one disagrees with")
    shared_with: list[str] = Field(
        default_factory=list,
        description="agents that already held this observation: it is now your belief in it too",
    )


class RememberResult(BaseModel):
    """The first (or only) memory's ids at the top level; every memory in ``remembered``."""

    observation_id: str
    belief_id: str
    topics: list[str]
    superseded: list[str]
    duplicate_of: str | None
    conflicts: list[str]
    shared_with: list[str] = Field(default_factory=list)
    remembered: list[RememberedItem]


def _draft(item: MemoryInput) -> MemoryDraft:
    fact = None
    if item.fact is not None:
        fact = FactDraft(
            item.fact.subject,
            item.fact.predicate,
            item.fact.object,
            item.fact.valid_from,
            item.fact.valid_until,
            item.fact.cardinality,
        )
    return MemoryDraft(
        text=item.text,
        topics=list(item.topics),
        agent=item.agent,
        confidence=item.confidence,
        observed_at=item.observed_at,
        source=item.source,
        episode=item.episode,
        fact=fact,
        supports=[SupportDraft(s.belief_id, s.weight) for s in item.supports],
        contradicts=list(item.contradicts),
    )


def _item(done: Remembered) -> RememberedItem:
    return RememberedItem(
        observation_id=done.observation_id,
        belief_id=done.belief_id,
        topics=done.topics,
        superseded=done.superseded,
        duplicate_of=done.duplicate_of,
        conflicts=done.conflicts,
        shared_with=done.shared_with,
    )


async def remember(
    ctx: Context[Any],
    text: Annotated[
        str | None, Field(description="the observation, in one or two sentences")
    ] = None,
    topics: Annotated[
        list[str],
        Field(description="what it is about: people, places, projects (created on first use)"),
    ] = [],  # noqa: B006 - the schema shows the default; pydantic copies it per call
    agent: Annotated[
        str | None,
        Field(description="who believes it; default: this server's agent (or the token's)"),
    ] = None,
    confidence: Annotated[
        DecimalInput, Field(description='exact decimal 0..1, e.g. "0.8"; default "1"')
    ] = "1",
    observed_at: Annotated[
        str | None, Field(description="ISO 8601 time it was observed; default now")
    ] = None,
    source: Annotated[
        str | None, Field(description="where it came from: a URL, a person, a file")
    ] = None,
    episode: Annotated[
        str | None, Field(description="conversation or session id it was learned in")
    ] = None,
    fact: Annotated[
        FactInput | None, Field(description="optional subject/predicate/object triple")
    ] = None,
    supports: Annotated[
        list[SupportInput], Field(description="beliefs this observation is evidence for")
    ] = [],  # noqa: B006
    contradicts: Annotated[
        list[str], Field(description="observation ids this one contradicts")
    ] = [],  # noqa: B006
    memories: Annotated[
        list[MemoryInput] | None, Field(description="many memories at once instead of text")
    ] = None,
) -> RememberResult:
    """Store one observation, or many with ``memories``."""
    who = writer("remember")
    if who is not None:
        # A token's agent is who remembers: naming another is refused, naming none means it.
        own_agent(who, agent, "agent")
        for i, item in enumerate(memories or []):
            own_agent(who, item.agent, f"memories[{i}].agent")
        agent = who.agent
    if memories is not None and text is not None:
        raise ToolError("text: give either text (one memory) or memories (many), not both")
    if memories is None:
        if text is None:
            raise ToolError("text: give the text to remember, or memories: [...] for many")
        items = [
            MemoryInput(
                text=text,
                topics=topics,
                agent=agent,
                confidence=confidence,
                observed_at=observed_at,
                source=source,
                episode=episode,
                fact=fact,
                supports=supports,
                contradicts=contradicts,
            )
        ]
    else:
        if not memories:
            raise ToolError("memories: give at least one memory")
        items = memories
    drafts = [_draft(i) for i in items]
    batch = memories is not None
    done = await call(ctx, lambda memory: memory.remember(drafts, batch=batch, agent=agent))
    listed = [_item(d) for d in done]
    first = listed[0]
    return RememberResult(**first.model_dump(), remembered=listed)
