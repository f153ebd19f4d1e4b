"""Provenance: where a belief came from and what disagrees with it.

``cite`` gathers an observation's (or belief's) sources, believers, evidence, contradictions
and supersession chain; ``conflicts`` finds explicit contradictions and clashing current facts
(same subject and predicate, different objects), for one agent or between two, and
``described`` keeps those on a topic and adds each side's text and confidence.

Both read the graph, which takes a second or more over 20k facts, and the working memory's
lock is not held meanwhile: ``Memory`` calls ``described``, which reads only the working
memory, under its read lock once the graph has answered.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from doxa.store.errors import NotFound
from doxa.store.values import utc_now
from doxa.store.working_memory import WorkingMemory, topic_key

if TYPE_CHECKING:
    from doxa.store.graph import Graph


def cite(graph: Graph, key: str) -> dict[str, Any]:
    """Everything the graph knows about the observation or belief ``key``.

    Raises:
        NotFound: the id names no observation or belief.
    """
    belief_id = None
    target = graph.belief_target(key)
    if target is not None:
        belief_id, observation_id = key, target[1]
    else:
        observation_id = key
    found = graph.observation(observation_id)
    if found is None:
        raise NotFound("id", "observation or belief", key)
    found["belief_id"] = belief_id
    found["believers"] = graph.believers(observation_id)
    evidence = graph.evidence_for(observation_id)
    if belief_id is not None:
        evidence = [e for e in evidence if e["belief_id"] == belief_id]
    found["evidence"] = evidence
    found["supports"] = graph.supports_given(observation_id)
    found["contradictions"] = graph.contradictions_of(observation_id)
    found["superseded_by"] = graph.superseded_by(observation_id)
    found["supersession_chain"] = graph.supersession_chain(observation_id)
    return found


def clashes(facts: list[dict[str, Any]], me: str | None, other: str | None) -> list[dict[str, Any]]:
    """Pairs of current facts with the same subject and predicate and different objects."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for fact in facts:
        key = (topic_key(fact["subject"]), topic_key(fact["predicate"]))
        groups.setdefault(key, []).append(fact)
    found: list[dict[str, Any]] = []
    for group in groups.values():
        for i, x in enumerate(group):
            for y in group[i + 1 :]:
                if topic_key(x["object"]) == topic_key(y["object"]):
                    continue
                xa, ya = set(x["agents"]), set(y["agents"])
                if me is not None and other is not None:
                    if not ((me in xa and other in ya) or (other in xa and me in ya)):
                        continue
                elif me is not None and me not in xa | ya:
                    continue
                found.append(
                    {
                        "kind": "clash",
                        "a": x["observation_id"],
                        "b": y["observation_id"],
                        "a_agents": sorted(xa),
                        "b_agents": sorted(ya),
                        "subject": x["subject"],
                        "predicate": x["predicate"],
                        "at": None,
                    }
                )
    return found


def conflicts(graph: Graph, me: str | None, other: str | None) -> list[dict[str, Any]]:
    """Contradictions and clashes as the graph holds them, filtered by agent (ids and
    agents only: ``described`` adds what the working memory knows)."""
    found: list[dict[str, Any]] = [
        {"kind": "contradiction", **c} for c in graph.contradictions(me, other)
    ]
    found.extend(clashes(graph.current_facts(utc_now()), me, other))
    return found


def described(
    found: list[dict[str, Any]], working: WorkingMemory, topic: str | None
) -> list[dict[str, Any]]:
    """Conflicts from ``conflicts``, those on ``topic`` only (when given), each side with
    its text and confidence. Reads only the working memory (the caller holds its read lock)."""
    if topic is not None:
        wanted = topic_key(topic)

        def mentions(obs: str) -> bool:
            row = working.row_of.get(obs)
            return row is not None and wanted in {topic_key(t) for t in working.entries[row].topics}

        found = [c for c in found if mentions(c["a"]) or mentions(c["b"])]
    for conflict in found:
        for side in ("a", "b"):
            row = working.row_of.get(conflict[side])
            entry = working.entries[row] if row is not None else None
            conflict[f"{side}_text"] = entry.text if entry else ""
            conflict[f"{side}_confidence"] = entry.confidence if entry else Decimal(0)
    return found
