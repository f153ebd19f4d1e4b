"""The ``cite_evidence`` tool: provenance of a belief, or the beliefs that have none."""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import BaseModel, Field, StrictBool

from doxa.store.event_time import shown
from doxa.store.values import iso
from doxa.tools.answer import answer
from doxa.tools.budget import TEXT_BUDGET, cap, cut, cut_note
from doxa.tools.context import call, context_of, exact
from doxa.tools.recall import RecordOut, record_out

DESCRIPTION = """Show why the memory holds something: source, believers and since when,
evidence with weights, contradictions, and what it replaced or was replaced by. Give `id` (an
observation or belief id); `citation` is ready to paste into an answer. Or give `agent` and
`unsupported=true` for that agent's beliefs without evidence (candidates to verify)."""

#: Unsupported beliefs listed (the oldest first); ``count`` counts them all.
MAX_UNSUPPORTED = 100
#: Evidence, supports and contradictions listed per citation; ``unlisted`` counts the rest.
MAX_LINKED = 50
#: The most characters of a text the citation's words quote ("…" after): the texts are whole
#: (or cut to the budget) in the answer's own fields, and a 30,000-character cited text
#: quoted again in full doubled the answer.
QUOTED = 500
#: Of those, the lines the citation's words give (the rest are counted in one line).
CITED_LINES = 10


class Happened(BaseModel):
    """When the event an observation tells of took place, as its words placed it."""

    when: str = Field(description="ISO 8601 date, month, year or interval")
    phrase: str


class ObservationOut(BaseModel):
    """The cited observation."""

    observation_id: str
    belief_id: str | None = Field(None, description="set when a belief id was cited")
    text: str
    confidence: str
    observed_at: str | None = None
    happened: list[Happened] = Field(default_factory=list)
    source: str | None = None
    episode: str | None = None
    topics: list[str] = Field(default_factory=list)
    kind: str = "observation"
    record: RecordOut | None = None
    subject: str | None = None
    predicate: str | None = None
    cardinality: str | None = Field(None, description="of the predicate: one or many")
    object: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    retracted_at: str | None = None
    retired: str | None = Field(None, description="why prune retracted it")
    hits: int = 0
    impressions: int = 0


class Believer(BaseModel):
    """An agent holding the observation."""

    agent: str
    belief_id: str
    confidence: str | None = Field(None, description="this agent's own, exact")
    since: str | None = None
    until: str | None = Field(
        None, description="held for this agent until its next later fact begins, as recall says"
    )


class EvidenceOut(BaseModel):
    """An observation supporting the belief."""

    observation_id: str
    belief_id: str
    text: str
    weight: str
    confidence: str
    source: str | None = None
    observed_at: str | None = None
    retracted: bool = False


class SupportGiven(BaseModel):
    """A belief this observation is evidence for."""

    belief_id: str
    agent: str
    observation_id: str
    weight: str


class LinkedObservation(BaseModel):
    """An observation linked by contradiction or supersession."""

    observation_id: str
    text: str
    confidence: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    retracted: bool = False
    recorded_at: str | None = Field(None, description="when the memory learned it")
    retracted_at: str | None = None


class UnsupportedBelief(BaseModel):
    """A belief with no supporting evidence."""

    belief_id: str
    observation_id: str
    text: str
    confidence: str
    since: str | None = None


class EvidenceResult(BaseModel):
    """Provenance of one observation or belief, or an agent's unsupported beliefs."""

    observation: ObservationOut | None = None
    believers: list[Believer] = Field(default_factory=list)
    evidence: list[EvidenceOut] = Field(default_factory=list)
    supports: list[SupportGiven] = Field(default_factory=list)
    contradictions: list[LinkedObservation] = Field(default_factory=list)
    superseded_by: list[str] = Field(default_factory=list)
    supersession_chain: list[LinkedObservation] = Field(default_factory=list)
    withdrawn: list[Believer] = Field(
        default_factory=list, description="agents that believed it and took their belief back"
    )
    unlisted: dict[str, int] = Field(
        default_factory=dict, description="beyond 50: how many more, by list"
    )
    citation: str | None = None
    agent: str | None = None
    unsupported: list[UnsupportedBelief] | None = None
    count: int | None = Field(None, description="all unsupported (at most 100 listed)")
    note: str | None = Field(None, description="what was cut, or why none is listed")


def _citation(
    result: EvidenceResult, linked: dict[str, str | None], retracted: Collection[str] = ()
) -> str:
    """The citation in words; ``linked``: when each supersession of it was recorded (by
    the newer fact's id), which may be later than that fact (a share, a forget);
    ``retracted``: the beliefs it supports whose observations were retracted."""
    o = result.observation
    assert o is not None
    lines = [f'"{cut(o.text, QUOTED)}" (confidence {o.confidence}; observed {o.observed_at}']
    lines[0] += f"; source: {o.source})" if o.source else ")"
    for h in o.happened:
        lines.append(f"happened {h.when} ({h.phrase})")
    if o.retracted_at:
        lines.append(f"RETRACTED at {o.retracted_at}")
    if o.valid_until:
        lines.append(f"valid until {o.valid_until}")
    for b in result.believers:
        lines.append(f"- believed by {b.agent} since {b.since}")
    # Taken back, they are cited as such: they no longer support or contradict it.
    for e in result.evidence[:CITED_LINES]:
        src = f", source: {e.source}" if e.source else ""
        gone = "; RETRACTED" if e.retracted else ""
        lines.append(
            f'- evidence (weight {e.weight}): "{cut(e.text, QUOTED)}" (confidence'
            f" {e.confidence}{src}{gone})"
        )
    more = len(result.evidence) - CITED_LINES + result.unlisted.get("evidence", 0)
    if more > 0:
        lines.append(f"- and {more} more evidence")
    for g in result.supports[:CITED_LINES]:
        mark = " (RETRACTED)" if g.belief_id in retracted else ""
        lines.append(
            f"- evidence for {g.agent}'s belief in {g.observation_id} (weight {g.weight}){mark}"
        )
    more = len(result.supports) - CITED_LINES + result.unlisted.get("supports", 0)
    if more > 0:
        lines.append(f"- and {more} more supported")
    for c in result.contradictions[:CITED_LINES]:
        gone = " (RETRACTED)" if c.retracted else ""
        lines.append(f'- contradicted by: "{cut(c.text, QUOTED)}"{gone}')
    more = len(result.contradictions) - CITED_LINES + result.unlisted.get("contradictions", 0)
    if more > 0:
        lines.append(f"- and {more} more contradictions")
    chain = {c.observation_id: c for c in result.supersession_chain}
    for s in result.superseded_by:
        newer = chain.get(s)
        when = f" (from {newer.valid_from}, recorded {linked.get(s)})" if newer else ""
        lines.append(f"- superseded by {s}{when}")
    return "\n".join(lines)


async def cite_evidence(
    ctx: Context[Any],
    id: Annotated[str | None, Field(description="an observation or belief id")] = None,
    agent: Annotated[str | None, Field(description="with unsupported: whose beliefs")] = None,
    unsupported: Annotated[StrictBool, Field(description="beliefs without evidence")] = False,
    known_at: Annotated[
        str | None, Field(description="ISO 8601: answer with what the memory held then")
    ] = None,
) -> Annotated[CallToolResult, EvidenceResult]:
    """Cite an observation or belief, or list unsupported beliefs."""
    given = agent is not None and agent.strip() != ""  # empty once stripped: not given
    if id is not None and not id.strip():
        id = None
    if unsupported:
        if id is not None:
            raise ToolError("id: give either id, or agent with unsupported=true, not both")
        who = agent if given and agent is not None else context_of(ctx).settings.agent
        return await call(
            ctx, lambda memory: answer(_unsupported(who, memory.unsupported(who, known_at)))
        )
    if id is None:
        raise ToolError(
            "id: give an observation_id or belief_id to cite, or agent with unsupported=true"
        )
    if given:  # a citation names every believer: agent filtered nothing, silently
        raise ToolError(
            "agent: names whose unsupported beliefs to list (with unsupported=true); a"
            " citation of an id names every believer: leave agent out"
        )
    cited = id
    return await call(ctx, lambda memory: answer(_cited(memory.evidence(cited, known_at))))


def _unsupported(who: str, found: dict[str, Any]) -> EvidenceResult:
    rows: list[dict[str, Any]] = found["unsupported"]
    listed = rows[:MAX_UNSUPPORTED]
    # A hundred beliefs of long texts made hundreds of thousands of characters.
    most = cap([len(r["text"]) for r in listed])
    return EvidenceResult(
        agent=who,
        count=len(rows),
        unsupported=[
            UnsupportedBelief(
                belief_id=r["belief_id"],
                observation_id=r["observation_id"],
                text=r["text"] if most is None else cut(r["text"], most),
                confidence=exact(r["confidence"]) or "0",
                since=iso(r["since"]),
            )
            for r in listed
        ],
        note=found.get("note")
        if most is None
        else cut_note(sum(len(r["text"]) > most for r in listed), most),
    )


def _linked_within_budget(result: EvidenceResult) -> EvidenceResult:
    """``result`` with the texts of the observations linked to the cited one (evidence,
    contradictions, the supersession chain) cut, each to one length, to share what the
    budget leaves beside the cited text, which stays whole (it is what was asked for)."""
    assert result.observation is not None
    linked: list[EvidenceOut | LinkedObservation] = [
        *result.evidence,
        *result.contradictions,
        *result.supersession_chain,
    ]
    budget = TEXT_BUDGET - len(result.observation.text)
    most = cap([len(x.text) for x in linked], budget)
    if most is None:
        return result

    def shortened(items: list[Any]) -> list[Any]:
        return [x.model_copy(update={"text": cut(x.text, most)}) for x in items]

    return result.model_copy(
        update={
            "evidence": shortened(result.evidence),
            "contradictions": shortened(result.contradictions),
            "supersession_chain": shortened(result.supersession_chain),
            "note": cut_note(
                sum(len(x.text) > most for x in linked), most, "linked texts", TEXT_BUDGET
            ),
        }
    )


def _believer(b: dict[str, Any]) -> Believer:
    return Believer(
        agent=b["agent"],
        belief_id=b["belief_id"],
        confidence=exact(b["confidence"]),
        since=iso(b["since"]),
        until=iso(b.get("held_until")),
    )


def _cited(found: dict[str, Any]) -> EvidenceResult:
    result = EvidenceResult(
        observation=ObservationOut(
            observation_id=found["id"],
            belief_id=found["belief_id"],
            text=found["text"],
            confidence=exact(found["confidence"]) or "0",
            observed_at=iso(found["observed_at"]),
            happened=[Happened(when=shown(e), phrase=e.phrase) for e in found["event_times"]],
            source=found["source"],
            episode=found["episode"],
            topics=found["topics"],
            kind=found["kind"],
            record=record_out(found.get("record")),
            subject=found["subject"],
            predicate=found["predicate"],
            cardinality=found["cardinality"],
            object=found["object"],
            valid_from=iso(found["valid_from"]),
            valid_until=iso(found["valid_until"]),
            retracted_at=iso(found["retracted_at"]),
            retired=found.get("retired"),
            hits=found["hits"] or 0,
            impressions=found["impressions"] or 0,
        ),
        believers=[_believer(b) for b in found["believers"]],
        evidence=[
            EvidenceOut(
                observation_id=e["observation_id"],
                belief_id=e["belief_id"],
                text=e["text"],
                weight=exact(e["weight"]) or "0",
                confidence=exact(e["confidence"]) or "0",
                source=e["source"],
                observed_at=iso(e["observed_at"]),
                retracted=e["retracted"],
            )
            for e in found["evidence"][:MAX_LINKED]
        ],
        supports=[
            SupportGiven(
                belief_id=s["belief_id"],
                agent=s["agent"],
                observation_id=s["observation_id"],
                weight=exact(s["weight"]) or "0",
            )
            for s in found["supports"][:MAX_LINKED]
        ],
        contradictions=[
            LinkedObservation(
                observation_id=c["observation_id"],
                text=c["text"],
                confidence=exact(c["confidence"]),
                retracted=c["retracted"],
            )
            for c in found["contradictions"][:MAX_LINKED]
        ],
        superseded_by=found["superseded_by"],
        supersession_chain=[
            LinkedObservation(
                observation_id=s["observation_id"],
                text=s["text"],
                valid_from=iso(s["valid_from"]),
                valid_until=iso(s["valid_until"]),
                retracted=s["retracted_at"] is not None,
                recorded_at=iso(s["recorded_at"]),
                retracted_at=iso(s["retracted_at"]),
            )
            for s in found["supersession_chain"]
        ],
        withdrawn=[_believer(b) for b in found["withdrawn"]],
        unlisted={
            kind: len(found[kind]) - MAX_LINKED
            for kind in ("evidence", "supports", "contradictions")
            if len(found[kind]) > MAX_LINKED
        },
    )
    result = _linked_within_budget(result)
    result.citation = _citation(
        result,
        {x["observation_id"]: iso(x["recorded_at"]) for x in found["supersessions"]},
        {s["belief_id"] for s in found["supports"] if s["retracted"]},
    )
    return result
