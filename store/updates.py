"""Plain notes that may update one another.

A fact (subject, predicate, object) supersedes the older facts of its subject and predicate;
a plain note never did. In a memory holding "Python 3.12 is the minimum supported version"
(told in March) and "Bumped the minimum Python to 3.13" (told in June), a recall of "What is
the minimum Python version?" ranked March's note above June's, and nothing said that the two
disagree. A later note ``may_update`` an earlier one when

- the two are alike in meaning: a cosine of at least ``update_alike`` (``[store.ranking]``;
  how it was chosen is told there);
- they differ in their values (``details.values``): each says a number or a name that is no
  word of the other ("3.12", "3.13"), so a note and its paraphrase, or a note and one that
  only adds to it, are no update;
- the later one says that something changed (``_CHANGE``: "now", "no longer", "instead",
  "moved", "raised", "bumped", "went up", "turned 8"…; "new" only before a word of the earlier
  note: "New office wifi password"). Two invoices, two trips or two sprint goals are as alike
  and differ as much, and say nothing changed;
- it was observed later, and both are plain notes: not facts (they supersede, and recall
  names that) nor records (each record of a type is alike to the others and holds other
  values).

``later_notes`` finds them for a recall's results among the rows the recall allows, and
``newer_first`` places each later note above the note it may update. The caller holds the
working memory's read lock.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from doxa.store.details import Details, values
from doxa.store.ranking import Ranked
from doxa.store.values import micros
from doxa.store.working_memory import BoolArray, WorkingMemory

#: At most this many later notes are named on one result, the newest first.
MOST_LATER = 3

#: Words that say something changed. "now" not after "for", "right", "just", "by" or "until"
#: ("bye for now" says no change); verbs of change in the past tense ("moved", "raised"),
#: and a few that say it only with what follows ("went up", "cut to", "turned 8").
_CHANGE = re.compile(
    r"\b(?:no longer|anymore|instead|from now on"
    r"|(?<!\bfor )(?<!\bright )(?<!\bjust )(?<!\bby )(?<!\buntil )now"
    r"|changed|moved|switched|raised|lowered|increased|decreased|reduced|bumped|upgraded"
    r"|downgraded|updated|replaced|renamed|rescheduled|postponed|delayed|slipped|extended"
    r"|shortened|renewed|grew|shrank|scaled|relocated|migrated|revised|adjusted|reassigned"
    r"|promoted|transferred"
    r"|(?:went|gone|goes|go) (?:up|down)"
    r"|(?:dropped|fell|cut|improved|rose|jumped|pushed|down) to|pushed back|turned \d+"
    r")\b",
    re.IGNORECASE,
)
#: "new" and the word it qualifies: a change only of something the earlier note names
#: ("New office wifi password" after "The office wifi password is …"; not "Anything new?").
_NEW = re.compile(r"\bnew\s+(\w+)", re.IGNORECASE)


def says_change(text: str, earlier_words: frozenset[str]) -> bool:
    """Whether ``text`` says that something changed (``_CHANGE``), or names a new thing
    that is one of ``earlier_words`` (casefolded)."""
    if _CHANGE.search(text) is not None:
        return True
    return any(m[1].casefold() in earlier_words for m in _NEW.finditer(text))


def may_update(earlier: Details, later: Details, later_text: str) -> bool:
    """Whether a note may update an earlier one alike to it in meaning: they differ in
    their values (``details.values`` of each: ``earlier`` and ``later``), each saying one
    that is no word of the other, and the later (``later_text``) says something changed."""
    differ = not earlier[0] <= later[1] and not later[0] <= earlier[1]
    return differ and says_change(later_text, earlier[1])


def candidates(
    similarity: npt.NDArray[np.float32] | None,
    allowed: BoolArray,
    found_by_text: Sequence[int],
    count: int,
) -> npt.NDArray[np.int64]:
    """Rows that may hold a later note of a recall's results: the ``count`` most alike to
    the query among those ``allowed`` (a note that updates a result is about what it is
    about), and those found by its words."""
    rows: list[npt.NDArray[np.int64]] = [
        np.array([r for r in found_by_text if r < len(allowed) and allowed[r]], dtype=np.int64)
    ]
    if similarity is not None and count > 0:
        n = min(len(similarity), len(allowed))
        masked = np.where(allowed[:n], similarity[:n], np.float32(-np.inf))
        if n > count:
            top = np.argpartition(masked, n - count)[n - count :]
        else:
            top = np.arange(n, dtype=np.int64)
        rows.append(top[np.isfinite(masked[top])])
    return np.unique(np.concatenate(rows)).astype(np.int64)


def later_notes(
    working: WorkingMemory,
    shown: Sequence[int],
    among: npt.NDArray[np.int64],
    alike: float,
) -> dict[int, list[int]]:
    """Per row of ``shown`` (a recall's results) that is a plain note, the rows of ``among``
    and ``shown`` that may update it (``may_update``): plain notes observed after it, at
    least ``alike`` to it (cosine), newest first, at most ``MOST_LATER``. None at
    ``alike`` 0."""
    if alike <= 0:
        return {}
    notes = [row for row in shown if _plain(working, row)]
    if not notes:
        return {}
    pool = np.unique(np.concatenate([among, np.array(notes, dtype=np.int64)]))
    pool = pool[[_plain(working, int(row)) for row in pool]]
    entries = working.entries
    observed = np.array([micros(entries[int(row)].observed_at) for row in pool], dtype=np.int64)
    vectors = working.embeddings.vectors(pool)
    place = {int(row): i for i, row in enumerate(pool)}
    mine = vectors[[place[row] for row in notes]]
    likeness = mine @ vectors.T
    said: dict[int, Details] = {}

    def values_of(row: int) -> Details:
        if row not in said:
            said[row] = values(entries[row].text)
        return said[row]

    found: dict[int, list[int]] = {}
    for i, row in enumerate(notes):
        close = np.flatnonzero((likeness[i] >= alike) & (observed > observed[place[row]]))
        later: list[int] = []
        for j in close[np.argsort(-observed[close], kind="stable")]:
            other = int(pool[j])
            if may_update(values_of(row), values_of(other), entries[other].text):
                later.append(other)
                if len(later) == MOST_LATER:
                    break
        if later:
            found[row] = later
    return found


def newer_first(ranked: list[Ranked], later: dict[int, list[int]]) -> list[Ranked]:
    """``ranked`` with the later notes of each result (``later_notes``) that are among them
    moved up to stand right before it, newest first, and theirs before them: a note that
    may be out of date is never read above what may update it. The rest keep their order."""
    by_row = {r.row: r for r in ranked}
    ordered: list[Ranked] = []
    placed: set[int] = set()
    for r in ranked:
        # A stack, not recursion: what waits is each note after its later notes.
        stack: list[tuple[int, bool]] = [(r.row, False)]
        while stack:
            row, ready = stack.pop()
            if row in placed:
                continue
            if ready:
                placed.add(row)
                ordered.append(by_row[row])
                continue
            stack.append((row, True))
            for newer in reversed(later.get(row, [])):
                if newer in by_row and newer not in placed:
                    stack.append((newer, False))
    return ordered


def _plain(working: WorkingMemory, row: int) -> bool:
    """Whether the row is a plain note: no fact, no record."""
    entry = working.entries[row]
    return entry.subject is None and entry.record is None
