"""The characters of memory text one answer may hold: past them the longest texts are cut.

A model pays for every character of an answer, and clients pass it only so many: Claude Code
takes 25,000 tokens from a tool. Ten recalled texts of 10,000 characters made 100,000; a
citation of a design document with five long reviews as evidence made 270,000 (each review
listed, then quoted again in the citation's words), and a conflict over a long text repeated it
in every conflict it is a side of. So every answer that quotes memory texts shares one budget.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

#: Characters of text one answer holds at most (about 5,000 tokens).
TEXT_BUDGET = 20_000
#: A cut text keeps at least this many characters, however many share the budget.
LEAST_KEPT = 200


def cap(lengths: Sequence[int], budget: int = TEXT_BUDGET) -> int | None:
    """The most characters each of texts of ``lengths`` may keep so that they add up to
    ``budget`` at most: the short ones keep all theirs, the rest share the remainder evenly
    (the cut ones end up alike in length, at least ``LEAST_KEPT`` each); None when all fit,
    or when none is longer than ``LEAST_KEPT`` (there is nothing to cut: many short texts, or a
    budget a cited text used up, made a note of "0 of the texts cut")."""
    if sum(lengths) <= budget:
        return None
    left, most = max(budget, 0), max(budget, 0)
    for k, length in enumerate(sorted(lengths)):
        share = left // (len(lengths) - k)
        if length > share:
            most = share
            break
        left -= length
    most = max(most, LEAST_KEPT)
    return most if any(length > most for length in lengths) else None


def cut(text: str, most: int, around: tuple[int, int] | None = None) -> str:
    """``text`` to at most ``most`` characters, ending in "…": at a word's end when one is
    near, never inside a letter and its accents; ``text`` itself when it fits.

    ``around``: the characters (start, end) of the part to show, a passage that matched a
    query (a recall's ``passage``): the cut keeps it, centred in what it shows when it is
    shorter, its start when longer, with "…" at either end where text was left out. The
    start is a word's (a passage starts at one): a document's matching section far past
    its start was never shown, cut from its start.
    """
    if len(text) <= most:
        return text
    if around is not None and around[0] > 0:
        start, end = around
        room = most - 2  # an "…" at either end
        begin = start - max(room - (end - start), 0) // 2
        begin = min(begin, len(text) - (most - 1))  # the rest fits after one "…"
        if begin > 0:
            begin = min(begin, start)
            # Forward to a word's start (the passage's at the latest).
            while begin < start and not text[begin - 1].isspace():
                begin += 1
            while begin < start and text[begin].isspace():
                begin += 1
            return "…" + cut(text[begin:], most - 1)
    end = most - 1
    while end > 0 and (_marks(text[end]) or text[end - 1] == "\u200d"):
        end -= 1  # the character at ``end`` would be cut from the one it marks or joins
    head = text[:end]
    space = head.rfind(" ", end * 4 // 5)
    if space > 0:
        words = head[:space].rstrip()
        head = words if len(words) >= end // 2 else head
    return head + "…"


def cut_note(
    count: int, most: int, what: str = "texts", budget: int = TEXT_BUDGET, matched: int = 0
) -> str:
    """What a note says of ``count`` texts cut to ``most`` characters, ``matched`` of them
    around the part that matched (``cut``'s ``around``)."""
    how = " (ending in …)"
    if matched == count:
        how = ", to the part that matched (… where cut),"
    elif matched:
        how = f" (ending in …; {matched} to the part that matched, … where cut)"
    return (
        f"{count} of the {what} cut to about {most:,} characters{how} to keep the "
        f"answer within {budget:,}; cite_evidence(id) gives one whole"
    )


def _marks(character: str) -> bool:
    """Whether ``character`` marks or joins the one before it (an accent, a vowel sign, a
    zero-width joiner)."""
    return unicodedata.category(character) in ("Mn", "Mc", "Me") or character == "\u200d"
