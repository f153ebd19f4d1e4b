"""The names the memory knows, by kind, for a client completing an argument as it is typed:
the agents that believe something, the entities facts and topics name, the topics.

Read from the working memory alone (no graph query): a completion is asked at every
keystroke and must answer at once.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from doxa.store import entities as entity_views
from doxa.store.working_memory import WorkingMemory, topic_key

#: The kinds of names a client may complete.
NameKind = Literal["agent", "entity", "topic"]

#: At most this many names in one answer (MCP's limit for a completion's values).
MAX_NAMES = 100


@dataclass(frozen=True)
class Names:
    """Names starting with a prefix, sorted, at most a limit of them; ``total`` counts all."""

    values: list[str]
    total: int

    @property
    def has_more(self) -> bool:
        """Whether names were left out for the limit."""
        return self.total > len(self.values)


def starting_with(
    working: WorkingMemory, kind: NameKind, prefix: str, limit: int = MAX_NAMES
) -> Names:
    """The ``kind`` names that start with ``prefix`` (case-insensitively; an entity's or a
    topic's also without a leading article, as ``topic_key`` keys it), sorted.

    Args:
        working: the working memory (the caller holds its read lock).
        kind: agents, entities (the subjects and objects of facts, and topics) or topics.
        prefix: what the user has typed so far; empty for every name.
        limit: at most this many names in ``values``.
    """
    wanted = prefix.casefold()
    # An entity or topic is named with or without its leading article ("Beat" and "the
    # beat" both complete to "The Beatles", and to "Beatles"): as its key is.
    keyed = topic_key(prefix) if kind != "agent" else None
    if keyed is not None and prefix[-1:].isspace():
        keyed += " "  # the word typed is whole: "the " is not "Theo"
    matching = sorted(
        {
            name
            for name in _names(working, kind)
            if name.casefold().startswith(wanted)
            or (keyed is not None and topic_key(name).startswith(keyed))
        },
        key=lambda name: (name.casefold(), name),
    )
    return Names(matching[: max(0, limit)], len(matching))


def alike(working: WorkingMemory, kind: NameKind, wanted: str, limit: int = 3) -> list[str]:
    """The ``kind`` names a caller may have meant by ``wanted``, which names none: those
    holding its words ("Raj" for "Raj Patel"), then those spelt alike ("Ana" for "Anna"),
    at most ``limit`` (the caller holds the working memory's read lock)."""
    # Entities and topics compared as their keys ("the Ringo" holds the words of "Ringo
    # Starr"); agents as written, each name its own.
    fold: Callable[[str], str] = str.casefold if kind == "agent" else topic_key
    words = _words(fold(wanted))
    if not words:
        return []
    names = _names(working, kind)
    holding = sorted(
        (n for n in names if words <= _words(fold(n)) and fold(n) != fold(wanted)),
        key=lambda n: (len(n), n.casefold()),
    )
    # The same letters without their accents ("zoe" for "Zoë", "cafe muller"), too unlike
    # by spelling alone to be offered.
    bare = _bare(fold(wanted))
    unaccented = sorted(
        (n for n in names if _bare(fold(n)) == bare and fold(n) != fold(wanted)),
        key=lambda n: (len(n), n.casefold()),
    )
    folded = {fold(n): n for n in names}
    spelt = [folded[f] for f in difflib.get_close_matches(fold(wanted), list(folded), 3, 0.75)]
    return list(dict.fromkeys([*unaccented, *holding, *spelt]))[: max(0, limit)]


def _bare(name: str) -> str:
    """A name's words, casefolded and without accents: "Zoë" is "zoe"."""
    letters = unicodedata.normalize("NFKD", name.casefold())
    return " ".join(re.findall(r"\w+", "".join(c for c in letters if not unicodedata.combining(c))))


def either(names: Iterable[str]) -> str:
    """Names as a choice: "'Raj Patel' or 'Raj'"."""
    return " or ".join(map(repr, names))


def did_you_mean(meant: Iterable[str]) -> str:
    """The clause offering the names meant, each once ("; did you mean 'a' or 'b'?"), or
    nothing for none."""
    names = list(dict.fromkeys(meant))
    return f"; did you mean {either(names)}?" if names else ""


def _words(name: str) -> set[str]:
    return set(re.findall(r"\w+", name.casefold()))


def _names(working: WorkingMemory, kind: NameKind) -> list[str]:
    if kind == "agent":
        return [agent for agent, rows in working.agent_rows.items() if held(working, rows)]
    if kind == "topic":
        return [
            working.topic_names.get(key, key)
            for key, rows in working.topic_rows.items()
            if held(working, rows)
        ]
    keys = {key for key, rows in working.entity_facts.items() if held(working, rows)}
    keys |= {key for key, rows in working.topic_rows.items() if held(working, rows)}
    return [entity_views.display_name(working, key) for key in keys]


def held(working: WorkingMemory, rows: Iterable[int]) -> bool:
    """Whether any of ``rows`` is not purged: a purged row keeps its slot in these lists
    until a restart, and its names were offered as what a filter may have meant."""
    return any(working.kept(row) for row in rows)
