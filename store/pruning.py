"""Pruning: which observations nobody uses, and which are near-copies of another, so that
``Memory.prune`` can retire them as ``forget`` retracts (out of every recall of now, kept in
the graph for audit and for views at an earlier ``known_at``).

The rule (``[store.prune]``, each value overridable per call):

- **unused**: confidence (every believer's) at most ``max_confidence``, shown in at least
  ``min_impressions`` judged recalls, never accepted (no hits), recorded at least
  ``min_age_days`` ago;
- **merged**: observations held by one and the same agent alone, carrying the same fact (or
  none) and event times and equally current, found by nothing the one kept is not (episode,
  source, topics), whose cosine is at least ``merge_similarity`` and whose details
  agree, said the same way round (``details``): the one with most hits, else evidence for a
  belief, else the oldest is kept; the others are merged into it. The unused take no part
  (retired as unused, never kept in a copy's place), so a second prune retires nothing the
  first left.

An embedding hardly tells "Invoice 98 total is 3.98" from "Invoice 99 total is 3.98", nor
"broken" from "not broken" (cosines of 0.95 and more), so a cosine alone would merge away
memories that say different things: their details must agree too (``details.agree``), and
records must be of one type and hold the same values (with given texts that agree).

Spared always: evidence for a belief, one with hits, one whose retraction would reopen an
older fact (it superseded one); from the unused rule a current fact; and from merging one
that evidence supports or a contradiction names (the one kept would carry neither link).
Merging may retire a current fact, since its keeper carries the same fact, current too.

Why a pruned observation was retired is kept in ``pruned.jsonl`` in the data directory, one
line per observation with the retraction's time (the graph's retraction records only carry a
time); a line counts only when the graph retracted that observation at that time, so a line
written before a transaction that then failed is never shown.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from doxa.store.details import (
    Details,
    agree,
    details,
    same_way_round,
    says_no_more,
    words_in_order,
)
from doxa.store.drafts import predicate_key
from doxa.store.errors import InvalidInput
from doxa.store.planning import reopened
from doxa.store.settings import PruneSettings
from doxa.store.values import decimal_text, iso, micros, scaled
from doxa.store.working_memory import BoolArray, Entry, WorkingMemory, told_when, topic_key

log = logging.getLogger(__name__)

#: The file of the reasons, in the data directory.
AUDIT_FILE = "pruned.jsonl"
#: Rows compared with all others at once when looking for near-duplicates (a block of
#: similarities is this many rows by the group's size, in float32).
_BLOCK = 1024
_DAY_US = 86_400_000_000


@dataclass(frozen=True)
class Retirement:
    """One observation a prune retires (or, in a dry run, would retire)."""

    observation_id: str
    text: str
    #: "unused" or "merged".
    reason: str
    #: The observation kept in its place, for "merged".
    merged_into: str | None = None
    #: Its cosine to the one kept, for "merged".
    similarity: float | None = None


@dataclass(frozen=True)
class Pruned:
    """What a prune did (``applied``) or would do (a dry run)."""

    applied: bool
    #: The rule as used, values as settings name them (the confidence as exact text).
    rule: dict[str, Any]
    retired: list[Retirement]
    #: The retraction time of an applied prune that retired something.
    at: datetime | None = None

    @property
    def unused(self) -> int:
        """How many were (or would be) retired as unused."""
        return sum(1 for r in self.retired if r.reason == "unused")

    @property
    def merged(self) -> int:
        """How many were (or would be) merged into another."""
        return sum(1 for r in self.retired if r.reason == "merged")


def rule_of(defaults: PruneSettings, overrides: Mapping[str, object] | None) -> PruneSettings:
    """The configured rule with a call's overrides (None values: keep the default).

    Raises:
        InvalidInput: an unknown field, or a value out of its range (the field named).
    """
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    known = list(PruneSettings.model_fields)
    for key in given:
        if key not in known:
            raise InvalidInput(
                key, f"is not part of the prune rule; its fields: {', '.join(known)}"
            )
        if isinstance(given[key], bool) and key != "merge":
            raise InvalidInput(key, f"must be a number, got {given[key]!r}")
    try:
        return PruneSettings.model_validate({**defaults.model_dump(), **given})
    except ValidationError as error:
        first = error.errors()[0]
        where = str(first["loc"][0]) if first["loc"] else "rule"
        problem = str(first["msg"]).removeprefix("Value error, ")
        given_value = first.get("input")
        if "got" not in problem and not problem.endswith(str(given_value)):  # named once
            problem += f", got {given_value!r}"
        raise InvalidInput(where, problem) from None


def described(rule: PruneSettings) -> dict[str, Any]:
    """The rule as plain values (answers, the audit): the confidence as exact text."""
    values = rule.model_dump()
    values["max_confidence"] = decimal_text(rule.max_confidence)
    return values


def plan(
    working: WorkingMemory,
    rule: PruneSettings,
    now: datetime,
    evidence: set[str],
    argued: set[str],
) -> list[tuple[int, Retirement]]:
    """What a prune retires now, as (row, retirement), merged ones first. The caller holds
    the working memory's read lock, and the graph's write lock if it will apply them.

    Args:
        working: the working memory.
        rule: the rule.
        now: the time the rule's age and a fact's currency are judged at.
        evidence: ids of the observations that are evidence for a belief (from the graph:
            the working memory does not keep evidence links).
        argued: ids of the observations evidence supports or a contradiction names (from
            the graph): never merged into another, which would carry neither link.
    """
    n = len(working)
    now_us = micros(now)
    live = working.live[:n]
    # Never retired: evidence, hits, and a fact whose retraction would reopen an older one.
    kept = (working.hits[:n] > 0) | ~live
    current_fact = np.zeros(n, dtype=bool)
    for row in np.flatnonzero(live):
        entry = working.entries[row]
        if entry.id in evidence:
            kept[row] = True
        if entry.subject is not None:
            current_fact[row] = working.is_current(int(row), now_us)
            if reopened(working, int(row)):
                kept[row] = True
    # The unused first: one is retired as unused, neither merged nor kept in a copy's place
    # (kept, it was retired by the next prune, and with it what had been merged into it).
    unused = (
        live
        & ~kept
        & ~current_fact
        & (working.confidence[:n] <= scaled(rule.max_confidence))
        & (working.impressions[:n] >= rule.min_impressions)
        & (working.hits[:n] == 0)
        & (working.recorded_at[:n] <= now_us - int(rule.min_age_days * _DAY_US))
    )
    # Low confidence is every believer's: another agent's own surer belief keeps it.
    held = working.belief_confidence
    for row in np.flatnonzero(unused):
        sure = [held[b] for b in working.entries[row].beliefs if b in held]
        if any(c > rule.max_confidence for c in sure):
            unused[row] = False
    out: list[tuple[int, Retirement]] = []
    if rule.merge:
        unmergeable = kept.copy()
        for observation in argued:
            at = working.row_of.get(observation)
            if at is not None and at < n:
                unmergeable[at] = True
        for gone, keeper, cosine in _near_duplicates(
            working, n, rule, unmergeable, evidence, unused
        ):
            entry = working.entries[gone]
            out.append(
                (
                    gone,
                    Retirement(
                        entry.id,
                        entry.text,
                        "merged",
                        working.entries[keeper].id,
                        round(cosine, 4),
                    ),
                )
            )
    for row in np.flatnonzero(unused):
        entry = working.entries[row]
        out.append((int(row), Retirement(entry.id, entry.text, "unused")))
    return out


def _near_duplicates(
    working: WorkingMemory,
    n: int,
    rule: PruneSettings,
    kept: BoolArray,
    evidence: set[str],
    unused: BoolArray,
) -> list[tuple[int, int, float]]:
    """(row, keeper row, cosine) for each row merged into a near-duplicate; rows ``kept``
    are never merged away, ``unused`` ones (retired as such) take no part."""
    groups: dict[tuple[object, ...], list[int]] = {}
    has_vector = working.has_vector[:n]
    for row in np.flatnonzero(working.live[:n] & has_vector & ~unused):
        entry = working.entries[row]
        if len(entry.agents) != 1:
            continue  # held by several agents: theirs too, never merged by one
        fact = (
            None
            if entry.subject is None
            else (
                topic_key(entry.subject),
                predicate_key(entry.predicate or ""),
                topic_key(entry.object or ""),
                # The same fact over another time is another claim (on leave in January, and
                # in July): merged away, it would be lost for its own time. The same times
                # also make them equally current.
                int(working.valid_from[row]),
                int(working.valid_until[row]),
            )
        )
        # What its words place in time ("yesterday", said in May or in June) is part of
        # the claim too: merged away, June's repair would be lost for June.
        told = told_when(entry.event_times)  # as a repeat's key holds it (said_key)
        groups.setdefault((entry.agents[0], fact, told), []).append(int(row))
    merged: list[tuple[int, int, float]] = []
    for rows in groups.values():
        if len(rows) < 2:
            continue
        # Preferred keepers first: most hits, then evidence, then the oldest.
        rows.sort(
            key=lambda r: (
                -float(working.hits[r]),
                working.entries[r].id not in evidence,
                working.entries[r].seq,
            )
        )
        chosen = np.array(rows, dtype=np.int64)
        vectors = working.embeddings.vectors(chosen)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        vectors = vectors / norms
        alike: list[list[tuple[int, float]]] = []
        for start in range(0, len(rows), _BLOCK):
            sims = vectors[start : start + _BLOCK] @ vectors.T
            for i, line in enumerate(sims):
                near = np.flatnonzero(line >= rule.merge_similarity)
                alike.append([(int(j), float(line[j])) for j in near if j != start + i])
        taken = [False] * len(rows)
        read: dict[int, tuple[Details, tuple[str, ...]]] = {}  # row -> its details, words
        for i in range(len(rows)):
            if taken[i]:
                continue
            taken[i] = True  # a keeper: compared directly with each merged into it, no chains
            for j, cosine in alike[i]:
                if (
                    not taken[j]
                    and not kept[rows[j]]
                    and _found_as(working.entries[rows[i]], working.entries[rows[j]])
                    and _same_details(working, rows[i], rows[j], read)
                ):
                    taken[j] = True
                    merged.append((rows[j], rows[i], cosine))
    return merged


def _found_as(keeper: Entry, twin: Entry) -> bool:
    """Whether ``keeper`` is found by all ``twin`` is found by, and tells its source: merged
    into one with another episode, a topic more or another source, the twin's claim was no
    longer found by them (a recall by its episode or topic came back empty)."""
    if twin.episode is not None and twin.episode != keeper.episode:
        return False
    if twin.source is not None and twin.source != keeper.source:
        return False
    topics = {topic_key(t) for t in keeper.topics}
    return all(topic_key(t) in topics for t in twin.topics)


def _same_details(
    working: WorkingMemory, a: int, b: int, cache: dict[int, tuple[Details, tuple[str, ...]]]
) -> bool:
    """Whether row ``b`` says what row ``a``, the one kept, says: records of one type holding
    the same values (and, given with texts, texts that agree), or texts each of whose details
    is a word of the other, saying it the same way round (``same_way_round``), ``b`` saying
    no word ``a`` lacks (``says_no_more``)."""
    first, second = working.entries[a], working.entries[b]
    if first.record is not None or second.record is not None:
        if first.record is None or second.record is None:
            return False
        if first.record.type != second.record.type:
            return False
        # Lists in their order and with their repeats: ["apple", "apple", "pear"] is
        # another bag than ["apple", "pear", "pear"].
        if first.record.identity() != second.record.identity():
            return False
        # A text given with a record says more than its fields ("has not shipped"): two
        # texts must agree too, and a record told in words is no twin of its fields alone.
        told = [not e.record.is_in_words(e.text) for e in (first, second) if e.record is not None]
        if not any(told):
            return True
        if not all(told):
            return False
    for row in (a, b):
        if row not in cache:
            text = working.entries[row].text
            cache[row] = (details(text), words_in_order(text))
    (found, first_words), (other, second_words) = cache[a], cache[b]
    return (
        agree(found, other)
        and same_way_round(first_words, second_words, found)
        and says_no_more(second_words, first_words)
    )


def why(retirement: Retirement, rule: PruneSettings) -> str:
    """The reason kept for audit, with the values the rule used."""
    if retirement.reason == "merged":
        return (
            f"pruned: merged into {retirement.merged_into} (a near-duplicate, cosine"
            f" {retirement.similarity} >= {rule.merge_similarity})"
        )
    return (
        f"pruned: unused (confidence <= {decimal_text(rule.max_confidence)}, impressions >="
        f" {rule.min_impressions}, no hits, recorded >= {rule.min_age_days:g} days before)"
    )


class AuditLog:
    """``pruned.jsonl``: why each pruned observation was retired, by id and retraction time.

    Only the process owning the memory writes it (under the graph's write lock) and reads
    it; its lines are cached after the first read.
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / AUDIT_FILE
        self._lock = threading.Lock()
        self._reasons: dict[tuple[str, str], str] | None = None

    def record(self, lines: list[tuple[str, str]], at: datetime) -> None:
        """Append (id, reason) lines for a retraction at ``at``, durably, before the graph
        commits it (a line without its retraction is never shown: see ``reason``)."""
        stamp = iso(at)
        assert stamp is not None
        self.add([(i, stamp, w) for i, w in lines])

    def entries(self) -> list[tuple[str, str, str]]:
        """Every readable reason as (observation id, retraction time ISO 8601, why), as
        ``doxa export`` carries them."""
        with self._lock:
            return [(i, at, why) for (i, at), why in self._loaded().items()]

    def add(self, entries: list[tuple[str, str, str]]) -> int:
        """Append (observation id, retraction time ISO 8601, why) lines, durably: a prune's,
        or those an import brings (one already kept is not written twice). Returns how
        many were written."""
        with self._lock:
            reasons = self._loaded()
            # Each once, however often a file repeats it.
            new = {(i, at): w for i, at, w in entries if (i, at) not in reasons}
            if not new:
                return 0
            with self.path.open("a", encoding="utf-8") as out:
                for (i, at), why in new.items():
                    out.write(json.dumps({"id": i, "at": at, "why": why}, ensure_ascii=False))
                    out.write("\n")
                out.flush()
                os.fsync(out.fileno())
            reasons.update(new)
        return len(new)

    def drop(self, observation_id: str) -> None:
        """Forget the reasons of an observation a purge took (the file written anew, then
        put in place of the old one)."""
        with self._lock:
            reasons = self._loaded()
            if not any(i == observation_id for i, _ in reasons):
                return
            kept = {key: why for key, why in reasons.items() if key[0] != observation_id}
            fresh = self.path.with_name(self.path.name + ".new")
            with fresh.open("w", encoding="utf-8") as out:
                for (i, at), why in kept.items():
                    out.write(json.dumps({"id": i, "at": at, "why": why}, ensure_ascii=False))
                    out.write("\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(fresh, self.path)
            self._reasons = kept

    def reason(self, observation_id: str, retracted_at: datetime | None) -> str | None:
        """Why the observation was retracted at ``retracted_at``, if a prune did it."""
        stamp = iso(retracted_at)
        if stamp is None:
            return None
        with self._lock:
            return self._loaded().get((observation_id, stamp))

    def _loaded(self) -> dict[tuple[str, str], str]:
        """The reasons, read from the file the first time (the caller holds the lock)."""
        if self._reasons is None:
            self._reasons = self._read()
        return self._reasons

    def _read(self) -> dict[tuple[str, str], str]:
        reasons: dict[tuple[str, str], str] = {}
        try:
            lines = self.path.read_bytes().splitlines()
        except FileNotFoundError:
            return reasons
        except OSError as error:  # the retirements still show, without their reasons
            log.warning("prune audit %s unreadable (%s): reasons not shown", self.path, error)
            return reasons
        for line in lines:
            try:
                record = json.loads(line)
                reasons[(str(record["id"]), str(record["at"]))] = str(record["why"])
            except (ValueError, KeyError, TypeError):
                # A line cut short by a crash (its retraction never committed), or damaged
                # (bytes that are no UTF-8 are a ValueError too): that one reason is lost.
                continue
        return reasons
