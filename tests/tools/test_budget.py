"""The text budget answers share (``tools/budget.py``)."""

from __future__ import annotations

from doxa.tools.budget import LEAST_KEPT, cap


def test_texts_no_longer_than_the_least_kept_are_cut_by_no_cap() -> None:
    # 160 texts of 150 characters pass the budget, but none is longer than the least a cut
    # text keeps: there is nothing to cut, and no note may say "0 of the texts cut".
    assert cap([150] * 160) is None
    assert cap([LEAST_KEPT] * 101) is None
    assert cap([], -5_000) is None  # a budget a cited text used up, and nothing linked
    assert cap([100], -5_000) is None
    assert cap([150] * 159 + [5_000]) == LEAST_KEPT  # the long one is cut


def test_the_cap_shares_the_budget_evenly_among_the_long_texts() -> None:
    assert cap([100, 100]) is None
    assert cap([5_000, 30_000]) == 15_000
    assert cap([10_000] * 4) == 5_000


def test_a_cut_around_a_part_keeps_it_between_whole_words() -> None:
    from doxa.tools.budget import cut

    words = [f"wörd{i}" for i in range(3_000)]
    text = " ".join(words)
    start = text.index("wörd2000 ")
    end = text.index(" wörd2150")
    shown = cut(text, 2_000, (start, end))
    assert len(shown) <= 2_000 and shown.startswith("…") and shown.endswith("…")
    assert text[start:end] in shown
    inner = shown[1:-1]
    at = text.index(inner)
    assert text[at - 1] == " " and text[at + len(inner)] == " "  # whole words at both ends
    # A part near the end: the cut reaches the end, "…" before it alone.
    last = text.index("wörd2990")
    tail = cut(text, 2_000, (last, len(text)))
    assert tail.startswith("…") and tail.endswith("wörd2999") and len(tail) <= 2_000
    # A part longer than what is kept: its start is shown.
    assert cut(text, 200, (start, end)).startswith("…wörd2000 ")
    # The first part, or none: cut from the start, as ever.
    assert cut(text, 2_000, (0, 900)) == cut(text, 2_000) == cut(text, 2_000, None)
    assert cut(text, 2_000).startswith("wörd0 ")


def test_a_cut_around_a_part_never_parts_a_letter_from_its_accents() -> None:
    from doxa.tools.budget import cut

    text = " ".join("e\u0301" * 7 for _ in range(4_000))
    start = text.index(" ", 20_000) + 1
    shown = cut(text, 1_000, (start, start + 100))
    assert shown[1] == "e" and shown[-2] == "\u0301"
    assert not shown.startswith("…\u0301")
