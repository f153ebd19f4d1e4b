"""The ``recall`` tool: hybrid search of the memory, filtered and time-aware."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from doxa.store.values import iso
from doxa.tools.context import DecimalInput, call, exact

if TYPE_CHECKING:
    from doxa.store.memory import Recollection
from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field, StrictBool, StrictInt

DESCRIPTION = """Search the memory before answering anything that may depend on what was
learned earlier.

Ranks by meaning (embeddings), words (full text), the graph (topics named in the query,
neighbouring observations of the same conversation), time words in the query ("last week",
"in May 2023"), confidence and past feedback. Superseded and retracted facts never come back
as current; `as_of` answers with what was valid at that time ("what did we believe on
Tuesday?"). Filters are exact: `agent`, `topics` (any of), a fact's `subject`, `predicate`,
`object`, `episode`, `min_confidence` (exact decimal). An empty query with a filter lists
what matches (`order_by` sets the order).

Returns {recall_id, results: [{observation_id, belief_ids, text, confidence, observed_at,
source, episode, topics, agents, score, scores, superseded_by, current, fact}]}. `scores` shows
why each result ranked. Pass recall_id to `feedback` to say which results helped.
Example: recall(query="Is the Route 9 bridge open?", min_confidence="0.8")"""


class FactOut(BaseModel):
    """A fact triple and its validity."""

    subject: str
    predicate: str
    object: str
    valid_from: str | None
    valid_until: str | None
    cardinality: str | None = Field(None, description="of the predicate: one or many")


class RecalledItem(BaseModel):
    """One recalled observation."""

    observation_id: str
    belief_ids: list[str]
    text: str
    confidence: str = Field(description="exact decimal")
    observed_at: str
    source: str | None
    episode: str | None
    topics: list[str]
    agents: list[str]
    score: float
    scores: dict[str, float] = Field(description="weighted components of the score")
    superseded_by: list[str] = Field(description="ids of the facts that replaced this one")
    current: bool = Field(description="false for a fact no longer valid at the recall's time")
    fact: FactOut | None = None


class RecallResult(BaseModel):
    """A recall id for feedback and the results, best first."""

    recall_id: str
    results: list[RecalledItem]


def recalled(item: Recollection) -> RecalledItem:
    """The tool's view of one store result."""
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
    return RecalledItem(
        observation_id=item.observation_id,
        belief_ids=item.belief_ids,
        text=item.text,
        confidence=exact(item.confidence) or "0",
        observed_at=iso(item.observed_at) or "",
        source=item.source,
        episode=item.episode,
        topics=item.topics,
        agents=item.agents,
        score=item.score,
        scores=item.scores,
        superseded_by=item.superseded_by,
        current=item.current,
        fact=fact,
    )


async def recall(
    ctx: Context[Any],
    query: Annotated[
        str, Field(description="what to look for, in words; may be empty with topics/agent")
    ],
    agent: Annotated[str | None, Field(description="only what this agent believes")] = None,
    topics: Annotated[
        list[str] | None, Field(description="only observations mentioning any of these")
    ] = None,
    subject: Annotated[str | None, Field(description="fact subject")] = None,
    predicate: Annotated[str | None, Field(description="fact predicate")] = None,
    object: Annotated[str | None, Field(description="fact object")] = None,
    episode: Annotated[str | None, Field(description="episode")] = None,
    min_confidence: Annotated[
        DecimalInput | None,
        Field(description='only confidence >= this exact decimal, e.g. "0.8"'),
    ] = None,
    as_of: Annotated[
        str | None, Field(description="ISO 8601: answer with what was valid then")
    ] = None,
    known_at: Annotated[
        str | None, Field(description="ISO 8601: answer with what the memory held then")
    ] = None,
    include_superseded: Annotated[
        StrictBool, Field(description="also return replaced facts (ranked after current ones)")
    ] = False,
    limit: Annotated[StrictInt, Field(description="how many results, 1..100")] = 10,
    order_by: Annotated[
        Literal["relevance", "confidence", "newest", "oldest"],
        Field(description="order of the results; default relevance"),
    ] = "relevance",
) -> RecallResult:
    """Hybrid recall with exact filters."""
    outcome = await call(
        ctx,
        lambda memory: memory.recall(
            query,
            agent=agent,
            topics=topics,
            min_confidence=min_confidence,
            as_of=as_of,
            include_superseded=include_superseded,
            limit=limit,
            order_by=order_by,
            known_at=known_at,
            subject=subject,
            predicate=predicate,
            object=object,
            episode=episode,
        ),
    )
    return RecallResult(recall_id=outcome.recall_id, results=[recalled(r) for r in outcome.results])
