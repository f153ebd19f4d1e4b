"""What makes a text say what it says: its details, the words an embedding barely weighs.

"Invoice 98 total is 3.98" and "Invoice 99 total is 3.98" are 0.95 alike to the bundled
model, "… is broken" and "… is not broken" 0.97, "on Monday" and "on Tuesday" 0.96: a cosine
alone takes them for the same thing. Their details tell them apart: the words with a digit,
names (capitalised words other than a sentence's first), days (weekdays, today, yesterday,
tomorrow, tonight), months, seasons and negations.
Two texts agree when each one's details are all words of the other, so a rewording agrees
("needs Python 3.11", "requires python 3.11") and another invoice, day or person does not;
they differ when each has a detail the other lacks, as another invoice does, while "ferry
timetable" and "ferry timetable in winter" only narrow. Pruning merges only near-duplicates
that agree (merging one that says more would lose it); a judged query lends to a new one as
the same question unless they differ.
"""

from __future__ import annotations

import re
import sys

from doxa.store.timewords import MONTHS, SEASONS

#: Words that make a memory say what it says whatever their case (see the module docstring).
_DETAIL_WORDS = frozenset(
    {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
    | {name for name in MONTHS if len(name) > 3}  # "may", "mar", "dec" are other words too
    | set(SEASONS)
    | {"today", "yesterday", "tomorrow", "tonight"}  # "last week" / "this week": too common
    | {"not", "no", "never", "none", "nothing", "nobody", "nowhere", "neither", "nor"}
    | {"without", "cannot", "unless"}
)
#: A word: letters and digits, with the marks inside one kept ("isn't", "3.11", "a/b").
_WORD = re.compile(r"\w(?:[\w'\u2019./:-]*\w)?")
_SENTENCE_END = re.compile(r"[.!?]\s")
#: A text's details and its words, casefolded (``details``).
Details = tuple[frozenset[str], frozenset[str]]


def details(text: str) -> Details:
    """(details, words) of a text, casefolded: its details are its words with a digit, its
    capitalised words other than a sentence's first (names), and ``_DETAIL_WORDS`` and
    negations ("isn't") whatever their case; its words are all of them."""
    found: set[str] = set()
    words: set[str] = set()
    for sentence in _SENTENCE_END.split(text):
        for i, match in enumerate(_WORD.finditer(sentence)):
            word = match[0]
            # Interned: the judged queries' details, kept for every one, share their words.
            folded = sys.intern(word.casefold())
            words.add(folded)
            if (
                any(c.isdigit() for c in word)
                or (i > 0 and word[0].isupper() and folded != "i")
                or folded in _DETAIL_WORDS
                or folded.replace("\u2019", "'").endswith("n't")
            ):
                found.add(folded)
    return frozenset(found), frozenset(words)


def agree(first: Details, second: Details) -> bool:
    """Whether two texts' details (``details``) are each all words of the other."""
    return first[0] <= second[1] and second[0] <= first[1]


def differ(first: Details, second: Details) -> bool:
    """Whether each of two texts has a detail (``details``) that is no word of the other."""
    return not first[0] <= second[1] and not second[0] <= first[1]
