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
