"""Plain notes that may update one another.

A fact (subject, predicate, object) supersedes the older facts of its subject and predicate;
a plain note never did. In a memory holding "Python 3.12 is the minimum supported version"
(told in March) and "Bumped the minimum Python to 3.13" (told in June), a recall of "What is
the minimum Python version?" ranked March's note above June's, and nothing said that the two
disagree. A later note ``may_update`` an earlier one when

- the two are alike in meaning: a cosine of at least ``update_alike`` (``[store.ranking]``;
  how it was chosen is told there);
- the later one says that something changed, in one of three ways (``may_update``): it
  ends what the earlier told (``_ENDED``: "no longer", "stopped", "cancelled", "deprecated")
  and names one of its values (``details.values``: numbers and names; "The café no longer
  closes on Mondays"); or a verb of change (``_CHANGED``: "changed", "moved", "replaced",
  "took over", "joined Globex", "raised to"…) comes before a value the earlier lacks (what
  it changed to: "The on-call lead changed from Priya to Daniel", which repeats the old
  value); or each says a value that is no word of the other and the later says "now",
  "became", "updated" or "new" before a word of the earlier ("New office wifi password").
  So a note and its paraphrase, or a note and one that only adds to it, are no update, and
  two invoices, two trips or two sprint goals, as alike and as different, say no change.
  Questions and sentences saying the old still holds or a change was not made ("still",
  "after all", "didn't", "won't") tell none (``told``);
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

from doxa.store.details import Details, values, words_in_order
from doxa.store.ranking import Ranked
from doxa.store.values import micros
from doxa.store.working_memory import BoolArray, WorkingMemory

#: At most this many later notes are named on one result, the newest first.
MOST_LATER = 3

#: Sentences that tell no change whatever words of one they hold: a question ("Should we
#: move the standup to 10:00?"), one saying the old still holds ("still", "after all", "as
#: before") and a change not made ("didn't", "won't", "never").
#: A sentence ends at a mark before a space or a line's end ("Fly.io" is one word).
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n")
_KEPT = re.compile(
    r"\b(?:still|after all|as before|as usual|didn't|did not|won't|will not"
    r"|wasn't|was not|weren't|were not|not going to|never)\b",
    re.IGNORECASE,
)

#: Words that say a thing the earlier note told has ended: the later need name no other
#: value ("The café no longer closes on Mondays", "The v1 API is deprecated").
_ENDED = re.compile(
    r"\b(?:no longer|anymore|any more|stopped(?! by\b)|discontinued|deprecated|retired"
    r"|cancell?ed|stepped down|shut down|closed down)\b",
    re.IGNORECASE,
)
#: Verbs of change in the past tense ("moved", "raised", "took over"), a few that say it
#: only with what follows ("went up", "cut to", "turned 8"), "instead", and "joined" before
#: a name ("joined Globex"; not "joined a pottery class"): the later note need only name a
#: value the earlier lacks ("changed from Priya to Daniel" repeats Priya).
_CHANGED = re.compile(
    r"\b(?:instead|changed|moved|switched|raised|lowered|increased|decreased|reduced|bumped"
    r"|upgraded|downgraded|replaced|renamed|rescheduled|postponed|delayed|slipped|extended"
    r"|shortened|renewed|grew|shrank|scaled|relocated|migrated|revised|adjusted|reassigned"
    r"|promoted|transferred|took over|taken over|takes over|handed (?:\w+ ){0,4}over"
    r"|dropped(?! (?:off|by|in|out|me|us|him|her|them)\b)"
    r"|(?:went|gone|goes|go) (?:up|down)"
    r"|(?:fell|cut|improved|rose|jumped|pushed|down) to|pushed back|turned \d+"
    r")\b"
    r"|\bjoined (?=(?-i:[A-Z]))",
    re.IGNORECASE,
)
#: Words that say a change only beside values of both notes ("now", "updated", "became",
#: "set to", "going forward"): "now" not after "for", "right", "just", "by" or "until"
#: ("bye for now"). Alone they as often open a new side of the subject ("The café now
#: serves oat milk").
_NOW = re.compile(
    r"\b(?:from now on|going forward|henceforth|updated|became|set to"
    r"|(?<!\bfor )(?<!\bright )(?<!\bjust )(?<!\bby )(?<!\buntil )now)\b",
    re.IGNORECASE,
)
#: "new" and the word it qualifies: a change only of something the earlier note names
#: ("New office wifi password" after "The office wifi password is …"; not "Anything new?").
_NEW = re.compile(r"\bnew\s+(\w+)", re.IGNORECASE)

_POSSESSIVE_END = re.compile(r"['\u2019]s$")

#: How strongly a text says a change: not, beside other values, a value it adds, at all.
NONE, BESIDE, ADDED, ENDED = 0, 1, 2, 3


def told(text: str) -> str:
    """``text`` without its questions and the sentences that say the old still holds or a
    change was not made (``_KEPT``)."""
    return " ".join(
        sentence
        for sentence in _SENTENCE_END.split(text)
        if not sentence.rstrip().endswith("?") and _KEPT.search(sentence) is None
    )


def change_said(text: str, earlier_words: frozenset[str]) -> tuple[int, str]:
    """How ``text`` says that something changed: ``ENDED`` (``_ENDED``), ``ADDED``
    (``_CHANGED``), ``BESIDE`` (``_NOW``, or "new" before one of ``earlier_words``,
    casefolded) or ``NONE``, in its told sentences (``told``); and what it tells after its
    first verb of change (what a thing changed to: "changed from Priya to Daniel")."""
    said = told(text)
    if _ENDED.search(said) is not None:
        return ENDED, ""
    changed = _CHANGED.search(said)
    if changed is not None:
        return ADDED, said[changed.end() :]
    if _NOW.search(said) is not None:
        return BESIDE, ""
    if any(m[1].casefold() in earlier_words for m in _NEW.finditer(said)):
        return BESIDE, ""
    return NONE, ""


def says_change(text: str, earlier_words: frozenset[str]) -> bool:
    """Whether ``text`` says that something changed (``change_said``)."""
    return change_said(text, earlier_words)[0] != NONE


def may_update(earlier: Details, later: Details, later_text: str, earlier_text: str) -> bool:
    """Whether a note may update an earlier one alike to it in meaning, by how the later
    (``later_text``) says a change (``change_said``) and the values (``details.values``) of
    each (``earlier``, ``later``). Each saying a value that is no word of the other, and any
    word of a change. Or one that ended what the earlier told, naming a value of it ("The
    café no longer closes on Mondays"; not if the earlier, ``earlier_text``, told that
    ending too). Or one of a verb of change naming after it a value that is no word of the
    earlier, which names values ("The on-call lead changed from Priya to Daniel")."""
    how, after = change_said(later_text, earlier[1])
    if how == NONE:
        return False
    if not earlier[0] <= later[1] and not later[0] <= earlier[1]:
        return True
    if how == ENDED:
        return not earlier[0].isdisjoint(later[0]) and _ENDED.search(told(earlier_text)) is None
    # A value said after the verb is what the thing changed to; the earlier's values, or
    # one of its words the later names as a value ("from Priya"), say which thing it was.
    which = bool(earlier[0]) or not later[0].isdisjoint(earlier[1])
    return how == ADDED and which and not (later[0] - earlier[1]).isdisjoint(_words(after))


def _words(text: str) -> set[str]:
    """A text's words, casefolded, each possessive also as its name ("Lisbon's": "lisbon"),
    as ``details.values`` reads them: a regular expression's pass, not ``values``' four
    times longer one (a recall checks several pairs)."""
    words = set(words_in_order(text))
    return words | {_POSSESSIVE_END.sub("", w) for w in words}


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
            if may_update(values_of(row), values_of(other), entries[other].text, entries[row].text):
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
