"""The ``recall`` tool: hybrid search of the memory, filtered and time-aware."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field, StrictBool, WithJsonSchema

from doxa.store.event_time import shown as shown_time
from doxa.store.values import iso
from doxa.tools.answer import answer
from doxa.tools.budget import TEXT_BUDGET, cap, cut, cut_note
from doxa.tools.context import DecimalInput, WholeNumber, call, exact

if TYPE_CHECKING:
    from doxa.store.memory import Recollection
    from doxa.store.records import Record
    from doxa.store.sharing import SharedMemory

DESCRIPTION = """Search the memory before answering anything that may depend on earlier
conversations. Ranks by meaning, words, topics, neighbours, time, confidence and feedback.
Replaced facts return only with `include_superseded`; future and ended ones as current:
false. After using the results, pass recall_id to `feedback`."""


class FactOut(BaseModel):
    """A fact triple and its validity."""

    subject: str
    predicate: str
    object: str
    valid_from: str | None = None
    valid_until: str | None = None
    cardinality: str | None = Field(None, description="of the predicate: one or many")


class RecordOut(BaseModel):
    """A structured record: its type and fields (decimals as exact numbers or text)."""

    type: str
    fields: dict[str, Any]


class RecalledItem(BaseModel):
    """One recalled observation; the fields after ``maybe_updated_by`` only with ``explain``.
    ``text`` is left out when it is only the record in words."""

    observation_id: str
    text: str = ""
    record: RecordOut | None = None
    confidence: str = Field(description="exact decimal")
    observed_at: str
    happened: str | None = Field(None, description="when the event it tells of took place")
    source: str | None = None
    current: bool = Field(True, description="false: not valid at the recall's time")
    superseded_by: list[str] = Field(default_factory=list)
    conflicts: list[str] = Field(
        default_factory=list, description="what contradicts or clashes with it (find_conflicts)"
    )
    maybe_updated_by: list[str] = Field(
        default_factory=list,
        description="later notes on the same thing that say it changed: they may update it",
    )
    score: float | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    belief_ids: list[str] = Field(default_factory=list)
    topics: list[str] = Field(default_factory=list)
    agents: list[str] = Field(default_factory=list)
    episode: str | None = None
    fact: FactOut | None = None


class RecallResult(BaseModel):
    """A recall id for feedback and the results, best first."""

    recall_id: str
    results: list[RecalledItem]
    note: str | None = Field(None, description="why nothing matched, or what was cut")


def within_budget(
    items: list[RecalledItem],
    budget: int = TEXT_BUDGET,
    passages: Sequence[tuple[int, int] | None] = (),
) -> tuple[list[RecalledItem], str | None]:
    """``items`` with their longest texts cut, each to one length, so that all their texts
    add up to ``budget`` characters at most (see ``budget``), and a note of what was cut;
    ``items`` and None when they fit. ``passages[i]``: the part of ``items[i]``'s text that
    matched (``Recollection.passage``), kept by its cut."""
    most = cap([len(item.text) for item in items], budget)
    if most is None:
        return items, None
    around = list(passages) + [None] * (len(items) - len(passages))
    kept = [
        item
        if len(item.text) <= most
        else item.model_copy(update={"text": cut(item.text, most, part)})
        for item, part in zip(items, around, strict=True)
    ]
    count = sum(len(item.text) > most for item in items)
    matched = sum(
        len(item.text) > most and part is not None and part[0] > 0
        for item, part in zip(items, around, strict=True)
    )
    return kept, cut_note(count, most, budget=budget, matched=matched)


def record_out(record: Record | None) -> RecordOut | None:
    """A record as results show it (``records.shown``)."""
    if record is None:
        return None
    return RecordOut(type=record.type, fields=record.shown_fields())


def recalled(item: Recollection, explain: bool) -> RecalledItem:
    """The tool's view of one store result: what a model needs, and why it ranked if asked."""
    record = item.record
    lean = RecalledItem(
        observation_id=item.observation_id,
        # The record says it once: its line in words would say it twice.
        text="" if record is not None and record.is_in_words(item.text) else item.text,
        record=record_out(record),
        confidence=exact(item.confidence) or "0",
        observed_at=iso(item.observed_at) or "",
        happened=None if item.happened is None else shown_time(item.happened),
        source=item.source,
        current=item.current,
        superseded_by=item.superseded_by,
        conflicts=item.conflicts,
        maybe_updated_by=item.maybe_updated_by,
    )
    if not explain:
        return lean
    fact = None
    if item.fact is not None:
        fact = FactOut(
            subject=item.fact["subject"],
            predicate=item.fact["predicate"],
            object=item.fact["object"],
            valid_from=iso(item.fact["valid_from"]),
            valid_until=iso(item.fact["valid_until"]),
            cardinality=item.fact.get("cardinality"),
        )
    return lean.model_copy(
        update={
            "score": round(item.score, 4),
            # A component that rounds to nothing (a judgement decayed to -0.00001) is left
            # out, as answers leave out what holds its default: no "feedback": -0.0.
            "scores": {
                name: shown for name, value in item.scores.items() if (shown := round(value, 4))
            },
            "belief_ids": item.belief_ids,
            "topics": item.topics,
            "agents": item.agents,
            "episode": item.episode,
            "fact": fact,
        }
    )


async def recall(
    ctx: Context[Any],
    query: Annotated[str, Field(description="what to look for; may be empty with a filter")],
    agent: Annotated[str | None, Field(description="only what this agent believes")] = None,
    topics: Annotated[
        list[str] | None, Field(description="these topics, or facts naming them (any of)")
    ] = None,
    subject: Annotated[str | None, Field(description="fact subject")] = None,
    predicate: Annotated[str | None, Field(description="fact predicate")] = None,
    object: Annotated[str | None, Field(description="fact object")] = None,
    episode: Annotated[str | None, Field(description="episode")] = None,
    where: Annotated[
        dict[str, Any] | None,
        WithJsonSchema({"type": "object"}),
        Field(description='record fields, e.g. {"@type": "Track", "ms": {">": 3e5}}'),
    ] = None,
    min_confidence: Annotated[
        DecimalInput | None, Field(description='exact decimal, e.g. "0.8"')
    ] = None,
    as_of: Annotated[str | None, Field(description="ISO 8601: what was true then")] = None,
    known_at: Annotated[
        str | None, Field(description="ISO 8601: answer with what the memory held then")
    ] = None,
    include_superseded: Annotated[StrictBool, Field(description="also replaced facts")] = False,
    limit: Annotated[WholeNumber, Field(description="1..100")] = 10,
    order_by: Annotated[
        Literal["relevance", "confidence", "newest", "oldest"], Field(description="order")
    ] = "relevance",
    explain: Annotated[StrictBool, Field(description="add scores and ids")] = False,
) -> Annotated[CallToolResult, RecallResult]:
    """Hybrid recall with exact filters."""

    def run(memory: SharedMemory) -> CallToolResult:
        outcome = memory.recall(
            query,
            agent=agent,
            topics=topics,
            min_confidence=min_confidence,
            as_of=as_of,
            include_superseded=include_superseded,
            limit=limit,
            order_by=order_by,
            subject=subject,
            predicate=predicate,
            object=object,
            episode=episode,
            known_at=known_at,
            where=where,
        )
        results, cut = within_budget(
            [recalled(r, explain) for r in outcome.results],
            passages=[r.passage for r in outcome.results],
        )
        # Both may say what was cut: the rows past the limit, and the texts past the budget.
        note = "; ".join(n for n in (outcome.note, cut) if n) or None
        return answer(RecallResult(recall_id=outcome.recall_id, results=results, note=note))

    return await call(ctx, run)
