"""Questions about a fact: does a query name a fact's subject (or object) and its predicate?

"Where does Alice live?" asks for the current fact {Alice, lives in, ?}. The observation that
carries it ("Alice moved to Berlin.") may share few words with the question, while chatty
turns of the same conversation share many; ranking lifts the fact that the question names
(``fact`` component) so it comes before its neighbours.

A question names a fact when it names one of the fact's entities (every word of its subject
or object, as words of the question) and its predicate (every content word of it, matched by
stem: "live" / "lives" / "living", "manages" / "manager"). Words like "in", "of" or "is" in
a predicate say nothing on their own: a predicate made only of them is never matched. A
question that names the predicate and no other name ("What database do we use?", in a
project's memory whose fact is {acme-api, database, SQLite}) names the fact by half: the
subject is often the one the conversation is about, and left unsaid ("Where does Bob live?"
names another).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_WORD = re.compile(r"[\w']+")

#: Words a predicate may hold that do not say which relation it is.
_FILLER = frozenset(
    [
        "a",
        "an",
        "the",
        "in",
        "on",
        "at",
        "of",
        "to",
        "for",
        "from",
        "with",
        "by",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "has",
        "have",
        "had",
        "does",
        "do",
        "did",
        "its",
        "their",
        "his",
        "her",
    ]
)

#: Endings stripped to compare words by their stem; longest first.
_ENDINGS = ("ing", "ies", "ied", "ed", "es", "er", "s")


def stem(word: str) -> str:
    """A crude stem: the word casefolded, possessive and one common ending removed, leaving
    at least three letters ("living" -> "liv", "lives" -> "liv", "manager" -> "manag")."""
    word = word.casefold().removesuffix("'s").strip("'")
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[: -len(ending)]
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]  # "live" and "lived" -> "liv"
    return word


@dataclass(frozen=True, slots=True)
class QuestionWords:
    """The words of a query, as names are matched (casefolded) and as relations are (stems),
    and those written as names (capitalised, but for a question's first word), casefolded."""

    words: frozenset[str]
    stems: frozenset[str]
    names: frozenset[str] = frozenset()


#: The one asking, written in capitals ("I" always): no name of another person. "What did I
#: eat yesterday?" names the predicate of the user's fact and no one else, as "What did we
#: eat yesterday?" does; "I" as a name kept it from every fact but the ones it names.
_SPEAKER = frozenset(
    (
        *("i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine"),
        *("we", "we're", "we've", "we'd", "we'll", "us", "our", "ours"),
    )
)


def question_words(query: str) -> QuestionWords:
    """The words and stems of ``query``; its names, the words written as names but those
    of the one asking ("I", "we": ``_SPEAKER``)."""
    raw = [w.removesuffix("'s").strip("'") for w in _WORD.findall(query)]
    words = [w.casefold() for w in raw if w]
    names = frozenset(
        w.casefold()
        for i, w in enumerate(raw)
        if i and w[:1].isupper() and w.replace("\u2019", "'").casefold() not in _SPEAKER
    )
    return QuestionWords(frozenset(words), frozenset(stem(w) for w in words), names)


@functools.lru_cache(maxsize=65536)
def _name_words(name: str) -> frozenset[str]:
    return frozenset(
        w for w in (x.casefold().removesuffix("'s").strip("'") for x in _WORD.findall(name)) if w
    )


@functools.lru_cache(maxsize=8192)
def _relation_stems(predicate: str) -> frozenset[str]:
    words = _WORD.findall(predicate.replace("_", " ").replace("-", " ").casefold())
    return frozenset(stem(w) for w in words if w not in _FILLER)


def names_relation(question: QuestionWords, predicate: str) -> bool:
    """Whether the question names the predicate (every content word of it, by stem)."""
    relation = _relation_stems(predicate)
    return bool(relation) and relation <= question.stems


def names_only_relation(
    question: QuestionWords, subject: str, predicate: str, obj: str | None
) -> bool:
    """Whether the question names the predicate and no name but the fact's own ("What
    database do we use?", not "Where does Bob live?" of Alice's home)."""
    if not names_relation(question, predicate):
        return False
    own = _name_words(subject) | (_name_words(obj) if obj else frozenset())
    return question.names <= own


def names_fact(question: QuestionWords, subject: str, predicate: str, obj: str | None) -> bool:
    """Whether the question names the fact's subject or object and its predicate."""
    if not names_relation(question, predicate):
        return False
    for name in (subject, obj):
        words = _name_words(name) if name else frozenset()
        if words and words <= question.words:
            return True
    return False
