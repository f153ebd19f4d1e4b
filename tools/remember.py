"""The ``remember`` tool: store one observation (or many) as the agent's belief."""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from doxa.store.drafts import FactDraft, MemoryDraft, SupportDraft
from doxa.store.progress import REMEMBER_STEPS
from doxa.store.values import iso
from doxa.tools.answer import answer
from doxa.tools.context import DecimalInput, call
from doxa.tools.identity import own_agent, writer
from doxa.tools.progress import notifier

if TYPE_CHECKING:
    from doxa.store.memory import Remembered
    from doxa.store.sharing import SharedMemory

DESCRIPTION = """Store what may matter later: a fact, preference, decision or event; many
at once with `memories`.
`fact` {subject, predicate, object}: for a single-valued predicate (lives_in) the same
agent's newer object replaces the older (kept for `as_of`); many-valued ones (likes)
accumulate; your fact told again with only `valid_until` ends there.
`supports` [{belief_id, weight}] adds evidence, `contradicts` [ids] disagreement.
A repeat returns `duplicate_of`."""


class FactInput(BaseModel):
    """A subject-predicate-object fact with optional validity."""

    # An unknown key is refused, not dropped: a misspelt field would store the default.
    model_config = ConfigDict(extra="forbid")

    subject: str = Field(description='e.g. "Alice"')
    predicate: str = Field(description='e.g. "lives in"')
    object: str = Field(description='e.g. "Paris"')
    valid_from: str | None = Field(None, description="ISO 8601; default observed_at")
    valid_until: str | None = Field(None, description="ISO 8601; default open")
    cardinality: Literal["one", "many"] | None = Field(
        None,
        description='"one": a newer object replaces; "many": they accumulate; default: the'
        " predicate's own",
    )


class SupportInput(BaseModel):
    """This observation is evidence for an existing belief."""

    model_config = ConfigDict(extra="forbid")

    belief_id: str
    weight: DecimalInput = Field("1", description="exact decimal 0..1")


#: A structured record, ``{"type": str, "fields": {name: value}}``: an object here, its
#: parts checked by the store, whose errors name each (``record.type``, ``record.fields.at``).
RecordInput = dict[str, Any]

# The description's example says the shape in fewer characters than the model's schema.
_RECORD_SCHEMA = {"type": "object"}


class MemoryInput(BaseModel):
    """One memory in a batch: the same fields as a single remember call."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    topics: list[str] = Field(default_factory=list)
    agent: str | None = None
    confidence: DecimalInput = "1"
    observed_at: str | None = None
    source: str | None = None
    episode: str | None = None
    # Their shapes are those of the single call's `fact` and `supports`, validated the same
    # way; the schema says so instead of spelling them out a second time.
    fact: Annotated[FactInput | None, WithJsonSchema({"type": "object"})] = None
    supports: Annotated[
        list[SupportInput], WithJsonSchema({"type": "array", "items": {"type": "object"}})
    ] = Field(default_factory=list)
    contradicts: list[str] = Field(default_factory=list)
    record: Annotated[RecordInput | None, WithJsonSchema({"type": "object"})] = None


# Each item's fields are the single call's, spelt out once there: naming them here (closed to
# others) costs a third of what repeating their types did.
_MEMORIES_SCHEMA = {
    "type": "array",
    "description": "many at once, each like one call",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "properties": {name: {} for name in MemoryInput.model_fields},
    },
}


_ENDS = (
    "the fact's valid_until, read from its words (none was given): \"<time> from 'until"
    " Friday'\"; to change it, forget the memory and tell it with valid_until"
)


class RememberedItem(BaseModel):
    """What happened to one memory."""

    observation_id: str
    belief_id: str
    topics: list[str] = Field(default_factory=list)
    superseded: list[str] = Field(
        default_factory=list, description="ids of older facts this one replaced"
    )
    duplicate_of: str | None = Field(None, description="set when the text was already held")
    conflicts: list[str] = Field(
        default_factory=list, description="other agents' current facts this one disagrees with"
    )
    shared_with: list[str] = Field(
        default_factory=list,
        description="agents that already held this observation: it is now your belief in it too",
    )
    superseded_by: list[str] = Field(
        default_factory=list,
        description="ids of facts told before that begin later and end this one",
    )
    replaced: list[str] = Field(default_factory=list, description="the superseded facts, in words")
    ends: str | None = Field(None, description=_ENDS)


class RememberResult(BaseModel):
    """One memory's ids at the top level, or a batch's memories in ``remembered``."""

    observation_id: str | None = None
    belief_id: str | None = None
    topics: list[str] = Field(default_factory=list)
    superseded: list[str] = Field(default_factory=list)
    duplicate_of: str | None = None
    conflicts: list[str] = Field(default_factory=list)
    shared_with: list[str] = Field(default_factory=list)
    superseded_by: list[str] = Field(default_factory=list)
    replaced: list[str] = Field(default_factory=list)
    ends: str | None = None
    remembered: list[RememberedItem] = Field(default_factory=list)


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
        record=item.record,
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
        superseded_by=done.superseded_by,
        replaced=done.replaced,
        ends=None if done.ends is None else f"{iso(done.ends[0])} from '{done.ends[1]}'",
    )


def _not_one(confidence: object) -> bool:
    """Whether ``confidence`` is given as other than its default, 1 ("1.0" is 1)."""
    try:
        return Decimal(str(confidence)) != 1
    except ArithmeticError:
        return True


async def remember(
    ctx: Context[Any],
    text: Annotated[str | None, Field(description="one or two sentences")] = None,
    topics: Annotated[list[str], Field(description="people, places, projects it is about")] = [],  # noqa: B006 - pydantic copies the default per call
    agent: Annotated[str | None, Field(description="who believes it; default yours")] = None,
    confidence: Annotated[DecimalInput, Field(description='exact decimal 0..1, e.g. "0.8"')] = "1",
    observed_at: Annotated[str | None, Field(description="ISO 8601; default now")] = None,
    source: Annotated[str | None, Field(description="a URL, a person, a file")] = None,
    episode: Annotated[str | None, Field(description="conversation id")] = None,
    fact: Annotated[FactInput | None, Field(description="a triple that can change")] = None,
    supports: Annotated[list[SupportInput], Field(description="beliefs this is evidence for")] = [],  # noqa: B006
    contradicts: Annotated[list[str], Field(description="observation ids this contradicts")] = [],  # noqa: B006
    record: Annotated[
        RecordInput | None,
        WithJsonSchema(_RECORD_SCHEMA),
        Field(description='{"type": "Track", "fields": {"album_id": 176}}; text then optional'),
    ] = None,
    memories: Annotated[
        list[MemoryInput] | None,
        WithJsonSchema(_MEMORIES_SCHEMA),
    ] = None,
) -> Annotated[CallToolResult, RememberResult]:
    """Store one observation, or many with ``memories``."""
    who = writer("remember")
    if who is not None:
        # A token's agent is who remembers: naming another is refused, naming none means it.
        own_agent(who, agent, "agent")
        for i, item in enumerate(memories or []):
            own_agent(who, item.agent, f"memories[{i}].agent")
        agent = who.agent
    if memories is not None and (text is not None or record is not None):
        raise ToolError("text: give either text or record (one memory) or memories (many)")
    if memories is not None:
        # Only agent applies to a whole batch; the others were dropped without a word.
        one_only = {
            "topics": topics != [],
            "confidence": _not_one(confidence),
            "observed_at": observed_at is not None,
            "source": source is not None,
            "episode": episode is not None,
            "fact": fact is not None,
            "supports": supports != [],
            "contradicts": contradicts != [],
        }
        for name in (n for n, given in one_only.items() if given):
            raise ToolError(
                f"{name}: with memories, give it in each memory (memories[i].{name});"
                " only agent applies to them all"
            )
    if memories is None:
        if text is None and record is None:
            raise ToolError(
                "text: give the text to remember, a record, or memories: [...] for many"
            )
        items = [
            MemoryInput(
                text=text,
                record=record,
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
    # A batch may be long: a client that asked is told when it is checked and written.
    cancelled = threading.Event()
    progress = notifier(ctx, cancelled) if batch else None
    if batch:
        await ctx.report_progress(0, REMEMBER_STEPS, f"received {len(drafts)} memories")

    def run(memory: SharedMemory) -> CallToolResult:
        remembered = memory.remember(drafts, batch=batch, agent=agent, progress=progress)
        listed = [_item(d) for d in remembered]
        if batch:
            return answer(RememberResult(remembered=listed))
        return answer(RememberResult(**listed[0].model_dump()))

    return await call(ctx, run, cancelled if batch else None)
