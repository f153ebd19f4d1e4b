"""The judged links a recall computes over every judgement (in numpy) are the strongest
decayed link per row and kind, as one judgement at a time would find them."""

from __future__ import annotations

import numpy as np

from doxa.store import learning
from doxa.store.details import details
from doxa.store.judged_queries import JudgedQueries, Judgements
from doxa.store.settings import LearningSettings

DAY = 86_400_000_000


def one_at_a_time(
    rows: np.ndarray, signs: np.ndarray, similarity: np.ndarray, at: np.ndarray, now: int
) -> dict[str, dict[int, float]]:
    settings = LearningSettings()
    links: dict[str, dict[int, float]] = {k: {} for k in learning.SIGNALS[:4]}
    for row, sign, sim, when in zip(rows, signs, similarity, at, strict=True):
        if sim < learning.RELATED:
            continue
        value = float(sim) * 0.5 ** (max(now - int(when), 0) / (settings.half_life_days * DAY))
        kind = ("accept_" if sign > 0 else "reject_") + (
            "close" if sim >= learning.CLOSE else "far"
        )
        if value > links[kind].get(int(row), 0.0):
            links[kind][int(row)] = value
    return links


def test_the_strongest_link_per_row_and_kind() -> None:
    rng = np.random.default_rng(7)
    now = 400 * DAY
    for _ in range(100):
        n = int(rng.integers(0, 200))
        queries = int(rng.integers(1, 40))
        # Several results judged on one query share its likeness and its age.
        query_sim = rng.uniform(-0.3, 1.0, queries).astype(np.float32)
        query_at = rng.integers(0, now, queries).astype(np.int64)
        query_of = rng.integers(0, queries, n).astype(np.int64)
        rows = rng.integers(0, 30, n).astype(np.int64)
        signs = rng.choice([-1.0, 1.0], n).astype(np.float32)
        judged = Judgements(query_sim, query_at, rows, signs, query_of, np.zeros(n, np.float32))
        found = learning.judged_links(judged, now, LearningSettings())
        expected = one_at_a_time(rows, signs, query_sim[query_of], query_at[query_of], now)
        assert found.keys() == expected.keys()
        for kind, links in expected.items():
            assert found[kind].rows.tolist() == sorted(links)
            for row, value in links.items():
                assert abs(float(found[kind].at(np.array([row]))[0]) - value) < 1e-9
            # Rows without a link of this kind read as 0, in any order, repeated or not.
            asked = rng.integers(0, 40, 25)
            expected_at = [links.get(int(r), 0.0) for r in asked]
            assert np.allclose(found[kind].at(asked), expected_at, rtol=0, atol=1e-9)


def test_the_judgements_of_chosen_queries() -> None:
    judged = Judgements(
        np.array([0.9, 0.1, 0.5], dtype=np.float32),
        np.zeros(3, dtype=np.int64),
        np.array([4, 5, 6, 7], dtype=np.int64),
        np.array([1.0, -1.0, 1.0, -1.0], dtype=np.float32),
        np.array([0, 2, 0, 1], dtype=np.int64),
        np.array([3.0, 0.0, 1.0, 2.0], dtype=np.float32),
    )
    rows, signs, of = judged.on(judged.similarity >= 0.5)
    assert rows.tolist() == [4, 5, 6] and signs.tolist() == [1.0, -1.0, 1.0]
    assert of.tolist() == [0, 2, 0]
    assert judged.unrewarded_on(judged.similarity >= 0.5).tolist() == [3.0, 0.0, 1.0]


def test_a_query_about_another_invoice_makes_no_link_for_the_model() -> None:
    # "… invoice 98" and "… invoice 99" are alike by their words (here: identical vectors)
    # and differ in their details: what 98 accepted lends nothing to 99, neither to the base
    # ranking (``similar``) nor as a link the trained model weighs (``judged_links``).
    judged = JudgedQueries(4)
    vector = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    asked = details("what is the total amount of invoice 98")
    other = details("what is the total amount of invoice 99")
    judged.add(vector, {7: 1.0}, at=0, details=asked)
    links = learning.judged_links(judged.every(vector, other, 0.85), 0, LearningSettings())
    assert all(len(found.rows) == 0 for found in links.values())
    assert len(judged.similar(vector, 0.85, other)[0]) == 0
    # The same question asked again is linked, closely.
    again = learning.judged_links(judged.every(vector, asked, 0.85), 0, LearningSettings())
    assert again["accept_close"].rows.tolist() == [7]


def test_kin_counts_every_judged_query_at_once_as_differ_tells_each() -> None:
    """``_kin`` counts details over all judged queries at once (a loop of ``differ`` took
    5 ms a recall at 5,000 judged queries); it tells each pair as ``differ`` does."""
    import random

    from doxa.store.details import differ

    rng = random.Random(7)
    words = ["Anna", "Bob", "invoice", "98", "99", "Monday", "not", "total", "ferry", "winter"]
    texts = [" ".join(rng.sample(words, rng.randint(1, 5))) for _ in range(300)]
    queries = JudgedQueries(4)
    for text in texts:
        queries.add(np.ones(4, dtype=np.float32) / 2, {0: 1.0}, 0, details(text))
    everyone = np.arange(len(texts), dtype=np.int64)
    for asked in [*texts[:60], "Anna invoice 98", "what is the total", "ferry in winter"]:
        mine = details(asked)
        kin = queries._kin(everyone, mine)
        for i, text in enumerate(texts):
            theirs = details(text)
            expected = not theirs[0] or not mine[0] or not differ(theirs, mine)
            assert kin[i] == expected, (asked, text)
