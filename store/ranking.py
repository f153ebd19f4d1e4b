"""Hybrid ranking: what the store knows about each observation, fused into one score.

Components (each in roughly [0, 1] before weighting):
- ``vector``       cosine similarity of the query and observation embeddings;
- ``text``         BM25 from the working memory's full-text index, divided by the best BM25
                   of this query;
- ``neighbourhood`` the best vector+text relevance among observations learned next to this one
                   in the same episode (a conversation's turns explain each other), decayed
                   by distance;
- ``topic``        share of the topics named in the query that the observation mentions;
- ``time``         1 when the observation was made, or its event happened (``event_time``),
                   inside the time the query names;
- ``dated``        1 when the query asks when (or how long) and the observation's words
                   place its event in time ("yesterday", "since 2019");
- ``fact``         1 when the observation carries a fact whose subject (or object) and
                   predicate the query names ("Where does Alice live?": {Alice, lives in, ?});
                   0.5 when it names the predicate and no other name ("What database do we
                   use?" of {acme-api, database, SQLite});
- ``field``        share of the record fields the query names with a value ("album_id 176")
                   that the observation's record holds with that value (numbers compared
                   as numbers, words case-insensitively): a record whose *other* field holds
                   the number matches the words as well, and only this tells them apart.
                   Rows are ordered by this share first, by the score within it;
- ``length``       how much the observation says: min(1, its words / ``length_words``);
                   what answers a question is usually said at more length than the
                   chatter around it; past ``length_most`` words, times ``length_most`` /
                   its words (a document is no turn that says more);
- ``confidence``   the observation's confidence;
- ``hit_rate``     the share of its judged recalls that accepted it, hits / (impressions + 1);
- ``feedback``     learned from judged recalls: similar past queries whose results were
                   accepted (+) or rejected (-), plus co-activation with accepted results;
                   each judgement decays with time, an acceptance also with the result's
                   impressions without a hit since, in recalls alike to the accepting one
                   (``judged_queries``);
- ``learned``      once a model is trained on the judgements and ranks held-out ones better
                   than the base score: the blend (``learning.blended``) minus the base score,
                   so the components still add up to the score;
- ``diversity``    minus the weight times the result's likeness (cosine) to the most alike
                   result ranked above it: the results are picked one by one (maximal
                   marginal relevance), so a question whose answer lies in several turns is
                   not answered by near-copies of one.
- ``spread``       for a question that asks for several things (``question_shape``), minus
                   the weight times the number of results of the same episode ranked above
                   it: the pieces of such an answer were mostly said on different days.
The weights are settings (``[ranking]`` in ``configs/default.toml``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from doxa.store.details import Details
from doxa.store.fact_questions import QuestionWords, names_fact, names_only_relation
from doxa.store.judged_queries import Judgements
from doxa.store.learning import (
    CLOSE,
    NO_LINKS,
    RELATED,
    Learned,
    Links,
    blended,
    feature_matrix,
    features_text,
    impression_decay,
    judged_links,
)
from doxa.store.records import query_pairs, type_name_key
from doxa.store.settings import RankingWeights
from doxa.store.working_memory import BoolArray, IntArray, WorkingMemory, topic_key

_WORD = re.compile(r"[\w'-]+")
#: Rows a query's field and value bring into the candidates at most (a value common to
#: thousands of records adds nothing a shorter list would not).
_MAX_NAMED_ROWS = 1000
#: Rows the strongest accepting links bring into the candidates at least (``rank``).
_LINKED = 20
#: A topic on fewer observations than this is never broad (``without_broad_topics``): in a
#: small memory every topic is on a large share.
_MIN_BROAD_ROWS = 20


@dataclass(frozen=True, slots=True)
class Ranked:
    """One ranked row with its fused score and weighted components."""

    row: int
    score: float
    components: dict[str, float]
    #: The features the learned ranker saw (``learning.features_text``), kept with the
    #: recall so its judgement can train the next model.
    features: str = ""
    #: Where in a long text the passage that matched the query best lies, (start, end)
    #: characters; None for a short text, or when its first passage matched best
    #: (``recall.matched_passage``).
    passage: tuple[int, int] | None = None
    #: Rows of later plain notes that may update it, newest first (``updates.later_notes``).
    later: tuple[int, ...] = ()


def query_topics(
    memory: WorkingMemory, query: str, known: Mapping[str, object] | None = None
) -> list[str]:
    """Keys of known topics named in the query (phrases of one to three words); of
    ``known`` instead, when given (``memory.entity_facts``: the names facts hold)."""
    among = memory.topic_rows if known is None else known
    words = [w.strip("'-") for w in _WORD.findall(query.casefold())]
    found: list[str] = []
    for size in (3, 2, 1):
        for start in range(len(words) - size + 1):
            phrase = " ".join(words[start : start + size])
            if phrase in among and phrase not in found:
                found.append(phrase)
            elif phrase.endswith("'s") and phrase[:-2] in among:
                found.append(phrase[:-2])
    return found


def without_broad_topics(memory: WorkingMemory, query: str, share: float) -> str | None:
    """The query without the names of the topics at least ``share`` of the observations (and
    at least ``_MIN_BROAD_ROWS``) mention, or None when it names none or nothing else.

    Such a name tells little about which observation answers: in a conversation, a speaker
    is on half the turns. The ``topic`` component matches it; the query's vector, freed of
    it, compares what is asked about ("Which cities has John been to?" looks for cities,
    not for everything John said). LoCoMo, leave one conversation out: README, "Measured".
    """
    n = len(memory)
    if share <= 0 or n < _MIN_BROAD_ROWS:
        return None
    least = max(_MIN_BROAD_ROWS, share * n)
    broad = [k for k in query_topics(memory, query) if len(memory.topic_rows.get(k, ())) >= least]
    if not broad:
        return None
    focused = query
    for key in broad:
        words = r"[\s\W]+".join(re.escape(w) for w in key.split())
        focused = re.sub(rf"(?<![\w'-]){words}(?:['\u2019]s)?(?![\w'-])", " ", focused, flags=re.I)
    focused = " ".join(focused.split())
    if focused == query or not _WORD.search(focused):
        return None
    return focused


def named_fields(memory: WorkingMemory, query: str) -> dict[int, float]:
    """Rows whose record holds a field the query names with the value it names, and the
    share of the named fields (those some record holds so) each holds
    (``records.query_pairs``)."""
    if not memory.record_fields:
        return {}
    held: dict[int, int] = {}
    named = 0
    types = {type_name_key(t) for t in memory.record_types}
    for field, exact, words in query_pairs(query, memory.record_fields, types):
        rows: set[int] = set()
        for cls, canonical in exact:
            rows.update(memory.record_values.get((field, cls, canonical), ()))
        for phrase in words:
            rows.update(memory.record_words.get((field, phrase), ()))
        # A field name no record holds with the words after it ("year" inside the title
        # "Year of the Cat") names nothing: it does not count against the others.
        named += bool(rows)
        for row in rows:
            held[row] = held.get(row, 0) + 1
    return {row: count / named for row, count in held.items()}


def rank(
    memory: WorkingMemory,
    mask: BoolArray,
    query_vector: npt.NDArray[np.float32] | None,
    text_hits: list[tuple[int, float]],
    topics_in_query: list[str],
    window: tuple[int, int] | None,
    weights: RankingWeights,
    limit: int,
    *,
    similarity: npt.NDArray[np.float32] | None,
    question: QuestionWords | None = None,
    asks_when: bool = False,
    fields_named: dict[int, float] | None = None,
    learned: Learned | None = None,
    search_vector: npt.NDArray[np.float32] | None = None,
    asks_many: bool = False,
    query_details: Details | None = None,
    began: tuple[int, int] | None = None,
    ends: IntArray | None = None,
) -> list[Ranked]:
    """Rank the rows allowed by ``mask`` for one query; best first, at most ``limit``.

    Args:
        memory: the working memory.
        mask: rows that pass the recall's filters.
        query_vector: the embedded query, or None for a query without text.
        text_hits: (row, BM25 score) from the full-text index.
        topics_in_query: topic keys the query names.
        window: (start, end) in microseconds named by the query's time words, or None.
        began: ``window`` as instants when its days are another calendar's than UTC's
            (``recall.Question.instants``), for what began then.
        ends: each row's end of validity at the recall's record time
            (``WorkingMemory.ends``): a fact that held in ``window`` is placed in it, when
            the query names it (``fact_questions``) or is close to it in meaning.
        weights: the ranking weights.
        limit: how many to return.
        similarity: ``memory.similarity(query_vector, n)`` (the caller scans
            while the full text is searched), or None for a query without text; the
            candidates' entries are rescored in place with the unrounded query.
        question: the query's words, to find the facts it names (``fact_questions``).
        asks_when: the query asks when something happened (``timewords.asks_when``).
        fields_named: rows whose record holds a field = value the query names, with the
            share of those it names (``named_fields``).
        learned: the trained model and the clock judgements decay by (None: no decay, no
            model).
        search_vector: what ``similarity`` compares with, when not the query's own vector
            (the query without its broad topics: ``without_broad_topics``); feedback still
            compares past queries with ``query_vector``.
        asks_many: the query asks for several things (``question_shape.asks_for_many``).
        query_details: the query's details (``details``): a judged query whose details
            differ lends as a question about something else (``JudgedQueries.likeness``).
    """
    n = len(memory)
    if n == 0 or limit <= 0:
        return []
    # A row whose embedding is not there yet (or failed) is still found by its words: its
    # similarity is 0 (see vector_matrix).
    usable = mask[:n]
    allowed = int(np.count_nonzero(usable))
    if allowed == 0:
        return []
    similarity = similarity[:n] if similarity is not None else np.zeros(n, dtype=np.float32)
    pool_size = min(allowed, max(weights.pool, limit * 3))
    if pool_size == allowed:
        top = np.flatnonzero(usable)
    else:
        # Over the whole store, so every full-size array saved counts (~50 µs each at 100k).
        masked = np.where(usable, similarity, np.float32(-np.inf))
        top = np.argpartition(masked, n - pool_size)[n - pool_size :]

    text = np.zeros(n, dtype=np.float32)
    hits = [(row, score) for row, score in text_hits if row < n and usable[row]]
    best_text = max((score for _, score in hits), default=0.0)
    if best_text > 0:
        rows = np.fromiter((r for r, _ in hits), dtype=np.int64, count=len(hits))
        text[rows] = np.fromiter((s for _, s in hits), dtype=np.float32, count=len(hits))
        text[rows] /= best_text
    # Every judgement with its query's likeness to this one, once for both uses.
    judged: Judgements | None = None
    links: dict[str, Links] = {}
    # A judged query about another invoice, day or person lends nothing, however alike its
    # words: checked from the likeness that makes a link at all (``RELATED``), not only from
    # the one that makes the same question (an acceptance for "ticket 9358" was a far link
    # of 0.83 to a question about ticket 5582, and a trained model lifted it to the top).
    alike = min(weights.feedback_similarity, CLOSE, RELATED)
    if query_vector is not None and learned is not None and len(memory.judged) > 0:
        judged = memory.judged.every(query_vector, query_details, alike)
        links = judged_links(judged, learned.now, learned.settings)
    feedback = _feedback(memory, query_vector, usable, weights, learned, judged, query_details)

    candidates = set(top.tolist())
    candidates.update(row for row, _ in hits)
    candidates.update(row for row, value in feedback.items() if value > 0)
    # A paraphrase of a judged query below the feedback's cut-off still brings what that
    # query accepted into the candidates: the model decides how much it counts. Only the
    # most strongly linked: every accepted result is linked to nearly every query (weakly),
    # and taking them all made each recall's pool, and its time, grow with the judgements.
    # Only for a model: without one they would be ranked by the base score alone, and any
    # judged turn the base likes (a neighbourhood, a date) would crowd into every answer.
    if learned is not None and learned.model is not None:
        candidates.update(strongest_accepted(links, usable, max(limit * 2, _LINKED)))
    by_field = {} if weights.field == 0 else (fields_named or {})
    if by_field:
        # Found by field and value, not by likeness: they may lie outside both searches.
        allowed_rows = sorted(row for row in by_field if row < n and usable[row])
        candidates.update(allowed_rows[-_MAX_NAMED_ROWS:])
    pool = np.fromiter(candidates, dtype=np.int64, count=len(candidates))

    def base(rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """Vector and text relevance of ``rows``: what neighbours lend each other."""
        relevance: npt.NDArray[np.float32] = (
            weights.vector * np.maximum(similarity[rows], 0.0) + weights.text * text[rows]
        )
        return relevance

    window_size = weights.neighbour_window if weights.neighbourhood > 0 else 0
    if window_size > 0:
        # Neighbours of the strongest candidates are candidates too: the turn that answers a
        # question often sits next to the one that matches its words.
        strongest = pool[np.argsort(-base(pool))[: max(limit * 2, 10)]]
        around = [rows for rows, _, _ in _walk(memory, strongest, window_size)]
        if around:
            extra = np.concatenate(around)
            extra = extra[extra >= 0]
            pool = np.unique(np.concatenate([pool, extra[usable[extra]]]))
    if query_vector is not None:
        # The scan rounded the query to 7 bits to find candidates fast; the candidates are
        # scored with the query as it is (ties at the margin otherwise flip).
        similarity[pool] = memory.refined(
            query_vector if search_vector is None else search_vector, pool
        )
    neighbourhood = np.zeros(len(pool), dtype=np.float32)
    for rows, distance, later in _walk(memory, pool, window_size):
        found = rows >= 0
        safe = np.where(found, rows, 0)
        value = np.where(found & usable[safe], base(safe), 0.0)
        value *= weights.neighbour_decay ** (distance - 1)
        if later:
            # What came before explains a reply more than what follows explains a question.
            value *= weights.neighbour_following
        neighbourhood = np.maximum(neighbourhood, value)

    components: dict[str, npt.NDArray[np.float32]] = {
        "vector": weights.vector * similarity[pool],
        "text": weights.text * text[pool],
        "neighbourhood": weights.neighbourhood * neighbourhood,
    }
    if topics_in_query:
        # Per candidate, not per stored row: the pool is a few hundred rows at most.
        named = set(topics_in_query)
        related: dict[str, float] = {}
        for hop, layer in enumerate(memory.related_topics(topics_in_query, weights.topic_hops), 1):
            for key in layer:
                related.setdefault(key, weights.topic_hop_decay**hop)
        share = np.zeros(len(pool), dtype=np.float32)
        for i, row in enumerate(pool.tolist()):
            keys = _topic_keys(tuple(memory.entries[row].topics))
            direct = len(keys & named) / len(named)
            linked = max((related[k] for k in keys if k in related), default=0.0)
            # Topics linked to the named ones (mentioned together) count less, per hop.
            share[i] = max(direct, linked)
        components["topic"] = weights.topic * share
    named_fact = (
        _named_facts(memory, pool, question)
        if question is not None and weights.fact > 0
        else np.zeros(len(pool), dtype=np.float32)
    )
    if window is not None:
        inside = memory.placed_in(window[0], window[1], pool, began)
        if ends is not None:
            # A fact that held then is placed then when the question names it or is close
            # to it in meaning: a standing fact holds in any time asked of, and "Sam works at
            # Acme" came first, by time alone, for "What did the neighbour's dog eat on
            # Monday?"; found by a word or topic alone, Sam's standing facts, each saying
            # "Sam", came before the lunch note made then for "What did Sam eat on Monday?".
            found = named_fact > 0
            if weights.close_meaning > 0:
                found |= similarity[pool] >= weights.close_meaning
            first, last = window if began is None else began
            # Only the rows found otherwise: held_in looks at each row that held then, and
            # every plain note made before the time asked holds then.
            if found.any():
                inside[found] |= memory.held_in(first, last, pool[found], ends)
        components["time"] = weights.time * inside.astype(np.float32)
    if asks_when and weights.dated > 0:
        dated = np.fromiter(
            (bool(memory.entries[row].event_times) for row in pool.tolist()),
            dtype=np.float32,
            count=len(pool),
        )
        if dated.any():
            components["dated"] = weights.dated * dated
    if named_fact.any():
        components["fact"] = weights.fact * named_fact
    # The share of the named fields each candidate holds with the value named (0: none).
    field_share = np.zeros(len(pool), dtype=np.float32)
    if by_field:
        field_share = np.fromiter(
            (by_field.get(int(r), 0.0) for r in pool), dtype=np.float32, count=len(pool)
        )
        if field_share.any():
            components["field"] = weights.field * field_share
    if weights.length > 0:
        words = memory.words[pool].astype(np.float32)
        said = np.minimum(words / np.float32(weights.length_words), 1.0)
        # A document is no turn that says more: beyond the lengths of chat, less and less.
        said *= np.minimum(np.float32(weights.length_most) / np.maximum(words, 1.0), 1.0)
        components["length"] = (weights.length * said).astype(np.float32)
    components["confidence"] = weights.confidence * (
        memory.confidence[pool].astype(np.float64) / 10**18
    ).astype(np.float32)
    if weights.hit_rate > 0:
        rate = memory.hits[pool] / (memory.impressions[pool] + 1.0)
        if rate.any():
            components["hit_rate"] = (weights.hit_rate * rate).astype(np.float32)
    if feedback:
        components["feedback"] = weights.feedback * np.fromiter(
            (feedback.get(int(r), 0.0) for r in pool), dtype=np.float32, count=len(pool)
        )
    total = np.sum(np.stack(list(components.values())), axis=0)
    features = None
    if learned is not None:
        unrewarded = memory.unrewarded[pool].astype(np.float64)
        kept = impression_decay(unrewarded, learned.settings)

        def link_strength(kind: str) -> npt.NDArray[np.float64]:
            return links.get(kind, NO_LINKS).at(pool)

        signals = {
            "accept_close": link_strength("accept_close") * kept,
            "accept_far": link_strength("accept_far") * kept,
            "reject_close": link_strength("reject_close"),
            "reject_far": link_strength("reject_far"),
            "impressions": np.log1p(memory.impressions[pool].astype(np.float64)),
            "unrewarded": np.log1p(unrewarded),
        }
        features = feature_matrix(components, total, signals, len(pool))
        if learned.model is not None:
            final = blended(learned.model, features, total, learned.settings.learned_share)
            components["learned"] = (final - total).astype(np.float32)
            total = final.astype(np.float32)
    # A query that names a field and its value ("album_id 176") asks for the records holding
    # it, whatever else its words match: those come first, the more of the named fields held
    # the earlier, and the score orders each share. No weight could promise that: the other
    # components add up to more than 3 (their weights are settings, the learned blend adds
    # its own), and a record told in its own words ("Invoice paid in full.") shares no word
    # with the query, while a record whose other field holds the number is the query's
    # words. A query naming no field leaves every share 0, and the order to the score.
    # Best first; among equals, the newer observation (higher row) first.
    order = np.lexsort((-pool, -total, -field_share))
    if weights.diversity > 0 and query_vector is not None and limit > 1:
        head = _head(order, limit)
        cost = _likeness_cost(memory, pool[head], weights.diversity)
        order, penalty = _repicked(len(pool), total, order, head, limit, cost, field_share)
        components["diversity"] = penalty
        total = total + penalty
    if asks_many and weights.spread > 0 and limit > 1:
        head = _head(order, limit)
        cost = _episode_cost(memory, pool[head], weights.spread)
        order, penalty = _repicked(len(pool), total, order, head, limit, cost, field_share)
        components["spread"] = penalty
        total = total + penalty
    order = order[:limit]
    return [
        Ranked(
            int(pool[i]),
            float(total[i]),
            {name: float(values[i]) for name, values in components.items()},
            "" if features is None else features_text(features[i]),
        )
        for i in order
    ]


#: What a re-pick lowers each candidate by, given the picks so far (``_repicked``).
Cost = Callable[[list[int]], npt.NDArray[np.float64]]


def _head(order: npt.NDArray[np.int64], limit: int) -> npt.NDArray[np.int64]:
    """The candidates a re-pick considers: the rest could not rise into the first ``limit``."""
    return order[: max(limit * 3, 30)]


def _repicked(
    pool_size: int,
    total: npt.NDArray[np.float32],
    order: npt.NDArray[np.int64],
    head: npt.NDArray[np.int64],
    limit: int,
    cost: Cost,
    first: npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """``order`` with its ``head`` re-picked one by one, each time the candidate whose score
    minus ``cost(picked so far)`` (per head entry) is best among the free ones whose
    ``first`` (per pool entry: the share of named fields held, which ``order`` is sorted by
    before the score) is highest; and what each pick lost, per pool entry (0 for the rest)."""
    scores = total[head].astype(np.float64)
    tiers = first[head]
    picked: list[int] = []
    free = np.ones(len(head), dtype=bool)
    penalty = np.zeros(pool_size, dtype=np.float32)
    for _ in range(min(limit, len(head))):
        lowered = cost(picked)
        # A cost moves a candidate within its share, never past one that holds more.
        open_ = free & (tiers == tiers[free].max())
        best = int(np.argmax(np.where(open_, scores - lowered, -np.inf)))  # ties: the earlier
        picked.append(best)
        free[best] = False
        penalty[head[best]] = -float(lowered[best])
    rest = [i for i in range(len(head)) if free[i]]
    return np.concatenate([head[picked], head[rest], order[len(head) :]]), penalty


def _likeness_cost(memory: WorkingMemory, rows: npt.NDArray[np.int64], weight: float) -> Cost:
    """Maximal marginal relevance: a candidate loses ``weight`` x its cosine to the most
    alike of the results picked (``_repicked``)."""
    vectors = memory.embeddings.vectors(rows)
    alike = (vectors @ vectors.T).astype(np.float64)

    def cost(picked: list[int]) -> npt.NDArray[np.float64]:
        if not picked:
            return np.zeros(len(rows))
        lowered: npt.NDArray[np.float64] = weight * np.maximum(alike[picked].max(axis=0), 0.0)
        return lowered

    return cost


def _episode_cost(memory: WorkingMemory, rows: npt.NDArray[np.int64], weight: float) -> Cost:
    """A candidate loses ``weight`` x the results of its episode picked; a row without an
    episode never does (``_repicked``)."""
    names = [memory.entries[int(row)].episode for row in rows]
    known = {name: n for n, name in enumerate(dict.fromkeys(e for e in names if e is not None))}
    episode = np.array([known[e] if e is not None else -1 for e in names])
    has_episode = episode >= 0

    def cost(picked: list[int]) -> npt.NDArray[np.float64]:
        chosen = episode[picked]
        counts = np.bincount(chosen[chosen >= 0], minlength=len(known) + 1)
        lowered: npt.NDArray[np.float64] = np.where(
            has_episode, weight * counts[np.maximum(episode, 0)], 0.0
        )
        return lowered

    return cost


def _named_facts(
    memory: WorkingMemory, pool: npt.NDArray[np.int64], question: QuestionWords
) -> npt.NDArray[np.float32]:
    """1 for each row of ``pool`` carrying a fact the question names, 0.5 for one whose
    predicate it names with no other name (``fact_questions``), else 0."""
    named = np.zeros(len(pool), dtype=np.float32)
    for i, row in enumerate(pool.tolist()):
        entry = memory.entries[row]
        if entry.subject is not None and entry.predicate is not None:
            if names_fact(question, entry.subject, entry.predicate, entry.object):
                named[i] = 1.0
            elif names_only_relation(question, entry.subject, entry.predicate, entry.object):
                named[i] = 0.5
    return named


def _walk(
    memory: WorkingMemory, rows: npt.NDArray[np.int64], window: int
) -> list[tuple[npt.NDArray[np.int64], int, bool]]:
    """Rows ``1..window`` places before and after each of ``rows`` in its episode (-1: none),
    with their distance and whether they come later."""
    steps: list[tuple[npt.NDArray[np.int64], int, bool]] = []
    for direction, later in ((memory.previous, False), (memory.following, True)):
        current = rows
        for distance in range(1, window + 1):
            current = np.where(current >= 0, direction[np.maximum(current, 0)], -1)
            steps.append((current, distance, later))
    return steps


@functools.lru_cache(maxsize=8192)
def _topic_keys(topics: tuple[str, ...]) -> frozenset[str]:
    """The keys of a row's topics; rows share few distinct topic lists, so this is cached."""
    return frozenset(topic_key(t) for t in topics)


def strongest_accepted(links: Mapping[str, Links], usable: BoolArray, count: int) -> list[int]:
    """The ``count`` rows with the strongest accepting links (close or far) among those
    ``usable`` allows, strongest first."""
    parts = [links[kind] for kind in ("accept_close", "accept_far") if kind in links]
    rows = np.concatenate([p.rows for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    if len(rows) == 0 or count <= 0:
        return []
    strength = np.concatenate([p.strength for p in parts])
    allowed = rows < len(usable)
    allowed[allowed] = usable[rows[allowed]]
    rows, strength = rows[allowed], strength[allowed]
    # A row is in each kind at most once, so the strongest 2 x count entries hold the
    # strongest count rows: no need to sort them all.
    if len(rows) > 2 * count:
        strongest = np.argpartition(-strength, 2 * count - 1)[: 2 * count]
        rows, strength = rows[strongest], strength[strongest]
    order = np.lexsort((rows, -strength))
    rows = rows[order]
    # A row linked both ways counts once, by its stronger link (the first, in this order).
    _, first = np.unique(rows, return_index=True)
    first.sort()
    chosen: list[int] = rows[first[:count]].tolist()
    return chosen


def _feedback(
    memory: WorkingMemory,
    query_vector: npt.NDArray[np.float32] | None,
    usable: BoolArray,
    weights: RankingWeights,
    learned: Learned | None = None,
    judged: Judgements | None = None,
    query_details: Details | None = None,
) -> dict[int, float]:
    """Rows judged on similar past queries (+ accepted, - rejected: only from queries at least
    ``rejection_similarity`` alike) and their co-activations;
    with ``learned``, each judgement decayed by its age and an acceptance also by the
    impressions its row has had since, without a hit, in recalls at least
    ``feedback_similarity`` alike to the accepting one (``JudgedQueries.seen``).
    ``judged``: ``memory.judged.every`` for this query (with ``learned``);
    ``query_details``: the query's (``JudgedQueries.likeness``)."""
    if query_vector is None or len(memory.judged) == 0 or weights.feedback == 0:
        return {}
    if learned is None:
        rows, signs, similarity = memory.judged.similar(
            query_vector, weights.feedback_similarity, query_details
        )
        kept = np.ones(len(rows))
    else:
        # rank reads every judgement's likeness whenever it is given ``learned``.
        assert judged is not None
        every = judged
        close = every.similarity >= weights.feedback_similarity
        rows, signs, of = every.on(close)
        similarity, at = every.similarity[of], every.judged_at[of]
        age = np.maximum(learned.now - at, 0) / (learned.settings.half_life_days * 86_400e6)
        kept = np.power(0.5, age)
        positive = signs > 0
        # Impressions of the result in recalls alike to the accepting one, not anywhere: a
        # result accepted for one question and shown for unrelated ones still answers it.
        unrewarded = every.unrewarded_on(close)
        kept[positive] *= impression_decay(
            unrewarded[positive].astype(np.float64), learned.settings
        )
    learned_rows: dict[int, float] = {}
    for row, sign, sim, keep in zip(rows, signs, similarity, kept, strict=True):
        r = int(row)
        if sign < 0 and sim < weights.rejection_similarity:
            continue
        if r < len(usable) and usable[r]:
            # Scaled so a query equal to the judged one counts fully, a borderline one little.
            strength = (float(sim) - weights.feedback_similarity) / (
                1.0 - weights.feedback_similarity + 1e-9
            )
            learned_rows[r] = max(
                -1.0, min(1.0, learned_rows.get(r, 0.0) + float(sign) * strength * float(keep))
            )
    if weights.co_activation > 0:
        for row, value in list(learned_rows.items()):
            if value <= 0:
                continue
            for other, count in memory.co_activated.get(row, {}).items():
                if other < len(usable) and usable[other] and other not in learned_rows:
                    boost = weights.co_activation / weights.feedback * value * count / (count + 1)
                    learned_rows[other] = max(learned_rows.get(other, 0.0), boost)
    return learned_rows
