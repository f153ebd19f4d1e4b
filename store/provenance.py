"""Provenance: where a belief came from and what disagrees with it.

``cite`` gathers an observation's (or belief's) sources, believers, evidence, contradictions
and supersession chain. Conflicts: ``contradictions`` (linked with CONTRADICTS) come from
the graph, and ``unsettled`` keeps those still standing for one agent or between two, with
who holds each side; ``clashes`` (facts holding at one time, now or to come, with the same
subject and predicate and different objects) come from the working memory; ``described``
keeps those on a topic and adds each side's text and confidence.

``Memory`` reads the graph under no lock of its own, then takes the working memory's read
lock for ``belief_ends``, ``unsupported``, ``unsettled``, ``clashes`` and ``described``:
recalls go on throughout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from doxa.store import event_time
from doxa.store.errors import InvalidInput, NotFound
from doxa.store.values import from_micros, micros, to_naive_utc, utc_now
from doxa.store.working_memory import NO_END, WorkingMemory, fact_key, topic_key

if TYPE_CHECKING:
    from doxa.store.graph import Graph


def cite(graph: Graph, key: str, known_at: datetime | None = None) -> dict[str, Any]:
    """Everything the graph knows about the observation or belief ``key``; with
    ``known_at``, as the memory held it then (record time): what was recorded later is left
    out, what was retracted later is shown unretracted, and a fact's end is the end it was
    given or the start of a superseder held then.

    Superseders that are retracted (or purged) are never named in ``superseded_by`` or
    ``supersedes``; the chain keeps them, with their ``retracted_at``. A withdrawn belief
    that held until a later fact of its agent (withdrawn by then, not forgotten by then)
    keeps the ``held_until`` stored when it was withdrawn: ``belief_ends`` sets it as the
    agent's facts end it.

    Raises:
        NotFound: the id names no observation or belief.
        InvalidInput: the observation (or the belief ``key`` names) was recorded after
            ``known_at``.
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
    k = None if known_at is None else to_naive_utc(known_at)

    def held(recorded: datetime | None, retracted: datetime | None) -> bool:
        """Recorded by the record time asked for, and not retracted by it."""
        if k is None:
            return retracted is None
        return recorded is not None and recorded <= k and (retracted is None or retracted > k)

    def by_then(moment: datetime | None) -> datetime | None:
        """A recorded time, if it had happened by the record time asked for."""
        return moment if k is None or (moment is not None and moment <= k) else None

    beliefs = graph.believers(observation_id)
    # The id must name what the memory held then: the observation, and a belief in it taken
    # by then (one taken later was cited with the believers of then, itself not among them).
    began = next((b["since"] for b in beliefs if b["belief_id"] == belief_id), None)
    for kind, named, at in (
        ("observation", observation_id, found["recorded_at"]),
        ("belief", belief_id, began),
    ):
        if k is not None and at is not None and at > k:
            raise InvalidInput(
                "known_at",
                f"is before the {kind} {named!r} was recorded ({at:%Y-%m-%dT%H:%M:%S.%fZ}):"
                " the memory did not hold it then",
            )
    found["retracted_at"] = by_then(found["retracted_at"])
    found["event_times"] = event_time.loaded(found["event_times"])
    found["belief_id"] = belief_id
    found["believers"] = [b for b in beliefs if held(b["since"], b["retracted_at"])]
    for belief in beliefs:
        # Its end is set when it is withdrawn and holds until its agent forgets it (then it
        # held at no time): each as known then.
        if by_then(belief["retracted_at"]) is None or by_then(belief["forgotten_at"]):
            belief["held_until"] = None
        belief["retracted_at"] = by_then(belief["retracted_at"])
        belief["forgotten_at"] = by_then(belief["forgotten_at"])
    found["withdrawn"] = [b for b in beliefs if b["retracted_at"] is not None]
    # Evidence known then, of a belief there was then (a forget may have given one back since).
    evidence = [
        e
        for e in graph.evidence_for(observation_id)
        if by_then(e["recorded_at"]) and by_then(e["belief_since"])
    ]
    if belief_id is not None:
        evidence = [e for e in evidence if e["belief_id"] == belief_id]
    else:
        evidence = _one_per_claim(evidence, {b["belief_id"] for b in found["believers"]})
    for row in evidence:
        row["retracted"] = by_then(row["retracted_at"]) is not None
    found["evidence"] = evidence
    # A belief given back by a forget is a new belief with the old one's evidence: one claim.
    given = [s for s in graph.supports_given(observation_id) if by_then(s["belief_since"])]
    found["supports"] = _one_per_claim(given, set())
    for row in found["supports"]:
        row["retracted"] = by_then(row["retracted_at"]) is not None
    contradicting = [
        c for c in graph.contradictions_of(observation_id) if by_then(c["recorded_at"])
    ]
    for row in contradicting:
        row["retracted"] = by_then(row["retracted_at"]) is not None
    found["contradictions"] = contradicting
    chain = graph.supersession_chain(observation_id)
    links = graph.supersession_links([observation_id, *(c["observation_id"] for c in chain)])
    # A link exists from when both ends were recorded; it ends a fact while its newer end
    # is held.
    recorded = {c["observation_id"]: c["recorded_at"] for c in chain}
    recorded[observation_id] = found["recorded_at"]
    standing = [
        link
        for link in links
        if held(link["recorded_at"], link["retracted_at"])
        and by_then(recorded.get(link["older"])) is not None
    ]
    starts = {c["observation_id"]: c["valid_from"] for c in chain}
    starts[observation_id] = found["valid_from"]
    ending = through_plans(standing, starts)
    found["superseded_by"] = [x["newer"] for x in ending if x["older"] == observation_id]
    found["supersessions"] = [
        {"observation_id": x["newer"], "from": x["at"], "recorded_at": x["recorded_at"]}
        for x in ending
        if x["older"] == observation_id
    ]
    found["supersedes"] = [x["older"] for x in ending if x["newer"] == observation_id]
    if k is not None:
        ends: dict[str, datetime] = {}
        for link in standing:
            older = link["older"]
            ends[older] = min(ends.get(older, link["at"]), link["at"])

        def end(obs: str, stated: datetime | None) -> datetime | None:
            return min((t for t in (stated, ends.get(obs)) if t is not None), default=None)

        found["valid_until"] = end(observation_id, found["stated_until"])
        # The facts linked to this one by links recorded by then (a share, a forget or a
        # start may have linked it later).
        linked: dict[str, set[str]] = {}
        for link in links:
            if by_then(link["recorded_at"]) is not None:
                linked.setdefault(link["newer"], set()).add(link["older"])
                linked.setdefault(link["older"], set()).add(link["newer"])
        reached, frontier = {observation_id}, [observation_id]
        while frontier:
            frontier = [x for f in frontier for x in linked.get(f, ()) if x not in reached]
            reached.update(frontier)
        chain = [
            c
            for c in chain
            if c["observation_id"] in reached and by_then(c["recorded_at"]) is not None
        ]
        for c in chain:
            c["valid_until"] = end(c["observation_id"], c["stated_until"])
    for c in chain:
        c["retracted_at"] = by_then(c["retracted_at"])
    found["supersession_chain"] = chain
    return found


def through_plans(
    standing: list[dict[str, Any]], starts: dict[str, datetime | None]
) -> list[dict[str, Any]]:
    """The links as they end facts: a plan replaced before it began (a link ends it at or
    before its start) ended nothing, and what replaced it ended what the plan would have
    (as ``WorkingMemory.ender`` reads it; known when the later of the two links was).

    Args:
        standing: the links that hold: ``newer``, ``older``, ``at`` (where the older fact
            ends) and ``recorded_at``.
        starts: each fact's start (``valid_from``; None: not told).
    """
    replaced: dict[str, dict[str, Any]] = {}
    for link in standing:
        start = starts.get(link["older"])
        if start is not None and link["at"] <= start:
            replaced.setdefault(link["older"], link)
    ending: dict[tuple[str, str], dict[str, Any]] = {}
    for link in standing:
        newer, recorded, seen = link["newer"], link["recorded_at"], {link["older"]}
        while newer in replaced and newer not in seen:
            seen.add(newer)
            by = replaced[newer]
            newer, recorded = by["newer"], max(recorded, by["recorded_at"])
        if newer != link["older"]:
            ending.setdefault(
                (newer, link["older"]), {**link, "newer": newer, "recorded_at": recorded}
            )
    return list(ending.values())


def belief_ends(found: dict[str, Any], working: WorkingMemory, known_at: datetime | None) -> None:
    """Set each ``held_until`` of ``found["withdrawn"]`` (``cite``'s) to where recall ends
    that belief for its agent (``WorkingMemory.belief_end``), as the memory held the agent's
    facts at ``known_at`` (None: now): where its next fact of the same subject and predicate
    begins, in place of the end stored at withdrawal (where the fact that withdrew it
    began). A later fact told late ends it sooner; one forgotten since ends it no more (the
    next does); None when none does. The caller holds the read lock."""
    row = working.row_of.get(found["id"])
    known = None if known_at is None else micros(known_at)
    for belief in found["withdrawn"]:
        if belief["held_until"] is None:
            continue
        end = NO_END
        if row is not None and working.held_then(belief["belief_id"], known):
            end = working.belief_end(row, belief["agent"], known)
        belief["held_until"] = None if end == NO_END else to_naive_utc(from_micros(end))


def holders(found: dict[str, Any]) -> set[str]:
    """The agents holding a ``cite`` answer's observation: believing it now, or until a later
    fact of theirs (whose history a purge would change too); not one that forgot it."""
    held = {b["agent"] for b in found["believers"]}
    return held | {
        w["agent"]
        for w in found["withdrawn"]
        if w.get("held_until") is not None and w.get("forgotten_at") is None
    }


def unsupported(
    rows: list[dict[str, Any]], working: WorkingMemory, agent: str, known_at: datetime | None
) -> list[dict[str, Any]]:
    """Of ``Graph.unsupported_beliefs``'s ``rows``, those held for ``agent`` at valid time
    ``known_at`` (None: now) as recall holds them, each without its ``until_later``: every
    belief held then, and a belief a later fact of the agent withdrew while it holds, until
    the agent's next fact begins (``WorkingMemory.belief_end``, as the agent's facts stood
    at ``known_at``), when the agent held the observation by no other belief then (a
    forget gave it back) nor by one withdrawn later (one claim, listed once). A fact that
    has ended by then (a newer one superseded it, or its end passed) is history that wants
    no evidence: left out, as a review would only find it stale. The caller holds the read
    lock."""
    known = None if known_at is None else micros(known_at)
    at = micros(known_at or utc_now())
    found = []
    for row in rows:
        later = row.pop("until_later")
        told = working.row_of.get(row["observation_id"])
        if (
            told is not None
            and working.entries[told].subject is not None
            and working.end_of(told, known) <= at
        ):
            continue
        if later:
            if told is None or _last_held(working, told, agent, known) != row["belief_id"]:
                continue
            if at >= working.belief_end(told, agent, known):
                continue
        found.append(row)
    return found


def _last_held(working: WorkingMemory, row: int, agent: str, known_at: int | None) -> str | None:
    """The belief by which ``agent`` held the observation at ``row`` at record time
    ``known_at`` (None: now) until a later fact of its own, the last taken of them; None
    when it held the observation by a belief not withdrawn then."""
    if any(a == agent for a, _ in working.believers(row, known_at)):
        return None
    held = [
        (since, belief)
        for a, belief, since, gone, until in working.withdrawn.get(row, [])
        if a == agent
        and until is not None
        and (known_at is None or gone <= known_at)
        and working.held_then(belief, known_at)
    ]
    return max(held)[1] if held else None


def contradictions(graph: Graph, known_at: datetime | None = None) -> list[dict[str, Any]]:
    """Explicit contradictions between unretracted observations, as the graph holds them
    (held at ``known_at``, when given): ids and agents (``unsettled`` keeps those standing
    and names who holds each side, ``described`` adds the rest)."""
    return [{"kind": "contradiction", **c} for c in graph.contradictions(known_at)]


def holding(working: WorkingMemory, row: int, at: int, known_at: int | None) -> set[str]:
    """The agents holding the observation at ``row`` at valid time ``at`` (as the memory
    held it at ``known_at``; None: now), as recall shows them: also one whose belief a later
    fact of its own withdrew, until that fact begins."""
    return {a for a, _ in working.believers(row, known_at, at)}


def _involves(me: str | None, other: str | None, a: set[str], b: set[str]) -> bool:
    """Whether a conflict whose sides ``a`` and ``b`` hold involves ``me`` (between ``me``
    and ``other``, when given; any conflict when ``me`` is None)."""
    if me is None:
        return True
    if other is None:
        return me in a | b
    return (me in a and other in b) or (other in a and me in b)


def unsettled(
    found: list[dict[str, Any]],
    working: WorkingMemory,
    at: datetime,
    known_at: datetime | None,
    me: str | None = None,
    other: str | None = None,
) -> list[dict[str, Any]]:
    """Of ``contradictions``' ``found``, those not settled at valid time ``at`` (as the
    memory held them at ``known_at``; None: now) that involve ``me`` (or ``me`` and
    ``other``), each side's agents those holding it then as recall shows them
    (``holding``: the graph's believers left out one whose own later fact had not begun).
    A side that is a fact a newer one has superseded by then settles it (the review prompt
    tells an agent to settle a conflict so); a fact that ended as it was told, or begins
    later, is still a side. The caller holds the read lock."""
    when, known = micros(at), None if known_at is None else micros(known_at)
    kept = []
    for c in found:
        rows = working.row_of.get(c["a"]), working.row_of.get(c["b"])
        if settled(working, rows, when, known):
            continue
        if rows[0] is not None and rows[1] is not None:
            c["a_agents"] = sorted(holding(working, rows[0], when, known))
            c["b_agents"] = sorted(holding(working, rows[1], when, known))
        if _involves(me, other, set(c["a_agents"]), set(c["b_agents"])):
            kept.append(c)
    return kept


def settled(
    working: WorkingMemory, rows: tuple[int | None, int | None], at: int, known_at: int | None
) -> bool:
    """Whether the contradiction between the observations at ``rows`` is settled at valid
    time ``at`` (microseconds) as the memory held them at ``known_at`` (None: now): a side is
    a fact a newer one has superseded by then (one not in the working memory, or a fact
    that ended as told or begins later, is still a side). The caller holds the read lock."""
    return any(
        row is not None
        and working.entries[row].subject is not None
        and working.end_of(row, known_at) <= at
        and working.ending_link(row, known_at) is not None
        for row in rows
    )


def clashing(
    working: WorkingMemory, key: tuple[str, str], current: Callable[[int], bool]
) -> list[tuple[int, int]]:
    """The pairs of rows of the facts of ``key`` (subject, predicate: ``fact_key``) that
    clash: both ``current``, with different objects, of a single-valued predicate. Only a
    key in ``mixed_facts`` (its facts name more than one object) has any. The caller holds
    the read lock."""
    if key not in working.mixed_facts or working.cardinality(key[1]) == "many":
        return []
    rows = [r for r in working.fact_index[key] if current(r)]
    objects = {r: topic_key(working.entries[r].object or "") for r in rows}
    return [
        (rx, ry) for i, rx in enumerate(rows) for ry in rows[i + 1 :] if objects[rx] != objects[ry]
    ]


def clashes(
    working: WorkingMemory,
    me: str | None,
    other: str | None,
    at: datetime,
    known_at: datetime | None = None,
) -> list[dict[str, Any]]:
    """Pairs of facts holding at one time from ``at`` on (as the memory held them at
    ``known_at``; None: now) with the same subject and a single-valued predicate and
    different objects, for ``me`` (or between ``me`` and ``other``): ids, agents (every
    believer, where both first hold), subject, predicate, and ``begins``: where both first
    hold, when after ``at`` (None: both hold at ``at``); ``described`` adds the rest.

    From the working memory, which indexes every fact by subject and predicate and keeps
    the keys whose facts name more than one object (``mixed_facts``): only those are looked
    at. Reading every current fact from the graph instead took 0.2-1 s over 20k facts, and
    looking at every key 0.1-0.4 s, holding the GIL all along, so every recall in the
    process slowed meanwhile. The caller holds the read lock.
    """
    when, known = micros(at), None if known_at is None else micros(known_at)
    n = len(working)
    ends = working.ends(n, known)
    # Current at ``at``, or to begin later (a plan) and hold for a while: two agents that
    # disagree about a time to come disagree now, and are asked before acting on a plan.
    held = working.held(n, known) & (ends > when) & (ends > working.valid_from[:n])
    found: list[dict[str, Any]] = []
    index = working.fact_index
    holders: dict[tuple[int, int], set[str]] = {}

    def agents(row: int, begins: int) -> set[str]:
        # Each row's believers once per time (a row is in a pair with every other of its key).
        if (row, begins) not in holders:
            holders[(row, begins)] = holding(working, row, begins, known)
        return holders[(row, begins)]

    # In the order the keys were first used (as the index holds them), not the set's.
    for key in sorted(working.mixed_facts, key=lambda k: index[k][0]):
        for rx, ry in clashing(working, key, lambda r: bool(held[r])):
            # Where both hold first: now, or where the later of the two begins.
            begins = max(when, int(working.valid_from[rx]), int(working.valid_from[ry]))
            if ends[rx] <= begins or ends[ry] <= begins:
                continue  # one is over before the other begins
            xa, ya = agents(rx, begins), agents(ry, begins)
            if not xa or not ya:
                continue  # a side nobody holds then (its agents moved on by then)
            x, y = working.entries[rx], working.entries[ry]
            if _involves(me, other, xa, ya):
                found.append(
                    {
                        "kind": "clash",
                        "a": x.id,
                        "b": y.id,
                        "a_agents": sorted(xa),
                        "b_agents": sorted(ya),
                        "subject": x.subject,
                        "predicate": x.predicate,
                        "at": None,
                        "begins": None if begins == when else from_micros(begins),
                    }
                )
    return found


#: At most this many observations are named as disputing one recalled result: a fact that
#: ten agents each told otherwise needs only to say that it is disputed, and by whom first
#: (``find_conflicts`` lists them all).
MOST_DISPUTING = 5


def disputing(
    working: WorkingMemory, rows: Sequence[int], at: int, known_at: int | None
) -> dict[int, list[str]]:
    """Per row of ``rows`` (a recall's results) that something disputes, the ids of what
    does, at most ``MOST_DISPUTING``, the newest first (by when the memory learned of the
    dispute: a contradiction's link, a clash's later fact recorded): the observations a
    contradiction links to it (either way) that are not ``settled``, and the facts that
    clash with it (``clashing``), at valid time ``at`` as the memory held them at
    ``known_at`` (microseconds; None: now): what ``find_conflicts`` lists with it as a
    side, asked then. The caller holds the read lock."""
    # (when learned, other row) per row: the oldest first filled the five, and a dispute
    # told since went unnamed.
    disputes: dict[int, list[tuple[int, int]]] = {}
    for row in rows:
        for other, linked in working.contradicting.get(row, ()):
            held = (known_at is None or linked <= known_at) and working.held_row(other, known_at)
            if held and not settled(working, (row, other), at, known_at):
                disputes.setdefault(row, []).append((linked, other))
    asked = set(rows)
    keys = dict.fromkeys(key for row in rows if (key := fact_key(working.entries[row])) is not None)
    for key in keys:
        for rx, ry in clashing(working, key, lambda r: working.is_current(r, at, known_at)):
            learned = int(max(working.recorded_at[rx], working.recorded_at[ry]))
            for x, y in ((rx, ry), (ry, rx)):
                if x in asked:
                    disputes.setdefault(x, []).append((learned, y))
    found: dict[int, list[str]] = {}
    for row, others in disputes.items():
        others.sort(reverse=True)
        ids = dict.fromkeys(working.entries[other].id for _, other in others)
        found[row] = list(ids)[:MOST_DISPUTING]
    return found


def on_topic(
    found: list[dict[str, Any]], working: WorkingMemory, topic: str | None
) -> list[dict[str, Any]]:
    """Conflicts from ``contradictions`` and ``clashes`` where either side names ``topic``
    (all of them when None): as a topic, or as its fact's subject or object, as ``about``
    finds an entity's conflicts. The caller holds the read lock."""
    if topic is None:
        return found
    wanted = topic_key(topic)
    # .get: the tables are defaultdicts, and a read adds no key.
    naming = {*working.topic_rows.get(wanted, ()), *working.entity_facts.get(wanted, ())}

    def names(obs: str) -> bool:
        return working.row_of.get(obs) in naming

    return [c for c in found if names(c["a"]) or names(c["b"])]


def described(
    found: list[dict[str, Any]],
    working: WorkingMemory,
    at: datetime,
    known_at: datetime | None,
    agent: str | None = None,
) -> list[dict[str, Any]]:
    """Conflicts from ``contradictions`` and ``clashes``, each side with its text and
    confidence as recall shows it at valid time ``at`` as known at ``known_at``: ``agent``'s
    own on a side it holds, else the first believer's holding it. The caller holds the read
    lock."""
    at_us = micros(at)
    known = None if known_at is None else micros(known_at)
    own = {} if agent is None else working.agent_confidence(agent, known, at_us)
    for conflict in found:
        for side in ("a", "b"):
            row = working.row_of.get(conflict[side])
            if row is None:
                conflict[f"{side}_text"], conflict[f"{side}_confidence"] = "", Decimal(0)
                continue
            entry = working.entries[row]
            conflict[f"{side}_text"] = entry.text
            mine = agent is not None and agent in holding(working, row, at_us, known)
            conflict[f"{side}_confidence"] = (
                own.get(row, entry.confidence)
                if mine
                else working.shown_confidence(row, known, at_us)
            )
    return found


def _one_per_claim(rows: list[dict[str, Any]], held: set[str]) -> list[dict[str, Any]]:
    """Rows of SUPPORTS links, one per evidence, supported observation and agent: a belief
    a forget gave back is a new belief holding the withdrawn one's evidence too. Kept: the
    row of a belief in ``held``, else the last (the newest belief: rows come in ``since``
    order within a claim), in the rows' order."""
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        claim = (row["observation_id"], row["agent"])
        if claim not in kept or kept[claim]["belief_id"] not in held:
            kept[claim] = row
    chosen = {id(row) for row in kept.values()}
    return [row for row in rows if id(row) in chosen]
