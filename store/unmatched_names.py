"""Why a recall filtered by names found nothing, when a name is none the memory holds.

A model guesses the names it filters by: ``predicate="status"`` where facts say ``state``,
``topics=["db"]`` where memories say ``database``. The empty answer read as "nothing is
known", as an unknown agent's did; a ``where`` naming no field already said why.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from doxa.store import entities as entity_views
from doxa.store import names as known_names
from doxa.store.drafts import predicate_key
from doxa.store.working_memory import WorkingMemory, topic_key


def unmatched_names(
    working: WorkingMemory,
    topics: list[str],
    subject: str | None,
    predicate: str | None,
    obj: str | None,
    episode: str | None,
) -> str | None:
    """The note of the first name filter that names nothing held (retracted memories
    aside from none: as ``about`` reads names), with the names it may have meant; None when
    each names something (the caller holds the working memory's read lock)."""
    if topics and not any(entity_views.exists(working, topic_key(t)) for t in topics):
        meant = [m for t in topics for m in known_names.alike(working, "entity", t)]
        return _note("topics", "no topic or fact names " + known_names.either(topics), meant)
    for field, wanted in (("subject", subject), ("object", obj)):
        if wanted is not None and not _is_part(working, field, wanted):
            alike = known_names.alike(working, "entity", wanted, limit=10)
            meant = [n for n in alike if _is_part(working, field, n)]
            return _note(field, f"no fact has {wanted!r} as its {field}", meant[:3])
    if predicate is not None:
        key = predicate_key(predicate)
        predicates = {p for (_, p), rows in working.fact_index.items() if rows}
        if key not in {predicate_key(p) for p in predicates}:
            return _note(
                "predicate",
                f"no fact has the predicate {key!r}",
                difflib.get_close_matches(key, sorted(predicates), 3, 0.6),
            )
    if episode is not None:
        key = topic_key(episode)
        episodes = {e for e, rows in working.episode_rows.items() if rows}
        if key not in {topic_key(e) for e in episodes}:
            # One spelling of each ("standup", "Standup"): the most used, then the first in
            # order; by a set's order the note named either, as the hash seed had it.
            by_use = sorted(episodes, key=lambda e: (-len(working.episode_rows[e]), e))
            folded = {e.casefold(): e for e in reversed(by_use)}
            close = difflib.get_close_matches(episode.casefold(), list(folded), 3, 0.6)
            return _note(
                "episode", f"no memory has the episode {episode!r}", [folded[c] for c in close]
            )
    return None


def _is_part(working: WorkingMemory, part: str, wanted: str) -> bool:
    """Whether a fact not purged (a purged row keeps its slot until a restart) has
    ``wanted`` as its ``part``."""
    key = topic_key(wanted)
    return any(
        topic_key(getattr(working.entries[row], part) or "") == key and working.kept(row)
        for row in working.entity_facts.get(key, ())
    )


def _note(field: str, why: str, meant: Iterable[str]) -> str:
    return f"{field}: {why}{known_names.did_you_mean(meant)}"
