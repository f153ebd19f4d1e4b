"""The learning benches on hand-made data: bench/feedback.py --grid's leave-one-conversation-out
choice (each conversation scored at the point the others chose, by their new questions' R@10
change, then their judged half again; ties keep the earlier point) and its ceiling, and
bench/transfer.py's rules."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

# The bench scripts are not a package: they import each other from their own folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import feedback
import transfer
from locomo import Asked, Conversation, Question, Retrieved, halves


def _asked(conversation: str, found: bool) -> Asked:
    """A one-gold question whose top 10 holds its gold turn or not."""
    question = Question(conversation, 1, "q", "a", ["D1:1"])
    source = "D1:1" if found else "D9:9"
    return Asked(question, [Retrieved(source, "t", 1.0, {})], 1.0)


def _run(conversation: str, unseen: tuple[int, int], judged_again: int) -> dict[str, Any]:
    """A conversation with two unseen questions (how many found before, after) and two judged
    ones (how many found again; none at first)."""
    before, after = unseen
    phases = {
        "unseen_before": [_asked(conversation, i < before) for i in range(2)],
        "unseen_after": [_asked(conversation, i < after) for i in range(2)],
        "judged_first": [_asked(conversation, False) for _ in range(2)],
        "judged_again": [_asked(conversation, i < judged_again) for i in range(2)],
    }
    transfer = feedback.what_transfers(phases["unseen_before"], set())
    return {
        "conversation": conversation,
        "phases": phases,
        "model": None,
        "transfer": transfer,
        "train_s": 0.0,
    }


POINTS = [{"rejection_similarity": "0.9"}, {"rejection_similarity": "0.99"}]
#: At 0.9, A loses a new question; B and C are the same at both points on new questions, and
#: 0.9 brings one more of C's judged questions back.
RUNS = [
    [_run("A", (2, 1), 1), _run("B", (1, 1), 1), _run("C", (1, 1), 2)],
    [_run("A", (2, 2), 1), _run("B", (1, 1), 1), _run("C", (1, 1), 1)],
]


def test_each_conversation_is_scored_at_the_point_the_others_chose() -> None:
    cv = feedback.cross_validated(POINTS, RUNS, noise=False)
    chosen = {f["held_out"]: f["point"]["rejection_similarity"] for f in cv["folds"]}
    # Held out A, the others tie on new questions and 0.9 wins on C's judged half; held out B
    # or C, A's loss at 0.9 decides.
    assert chosen == {"A": "0.9", "B": "0.99", "C": "0.99"}
    # A scored at 0.9 (2 -> 1 of 2), B and C unchanged: 5 of 6 -> 4 of 6.
    assert cv["unseen_R@10_change"] == pytest.approx(-1 / 6)
    assert cv["overall"]["judged_again"]["R@10"] == pytest.approx(3 / 6)


def test_a_tie_keeps_the_earlier_point() -> None:
    same = [[_run(c, (1, 1), 1) for c in "AB"] for _ in POINTS]
    cv = feedback.cross_validated(POINTS, same, noise=False)
    assert [f["point"] for f in cv["folds"]] == [POINTS[0], POINTS[0]]


def test_a_grid_is_the_product_of_its_keys_and_splits_weights_from_learning() -> None:
    points = feedback.parse_grid(["rejection_similarity=0.9,0.99", "impression_half_life=2,3"])
    assert points == [
        {"rejection_similarity": "0.9", "impression_half_life": "2"},
        {"rejection_similarity": "0.9", "impression_half_life": "3"},
        {"rejection_similarity": "0.99", "impression_half_life": "2"},
        {"rejection_similarity": "0.99", "impression_half_life": "3"},
    ]
    weights, learning = feedback.point_settings(points[0], {"spread": 0.3}, {})
    assert weights == {"spread": 0.3, "rejection_similarity": 0.9}
    assert learning == {"impression_half_life": 2.0}
    with pytest.raises(SystemExit, match="--grid"):
        feedback.parse_grid(["rejection_similarity"])
    with pytest.raises(SystemExit, match="--weights"):
        feedback.point_settings({"no_such_setting": "1"}, {}, {})


def test_the_ceiling_counts_only_accepted_gold_missing_from_the_top() -> None:
    question = Question("A", 1, "q", "a", ["D1:1", "D1:2"])
    top = Asked(question, [Retrieved("D1:1", "t", 1.0, {})], 1.0)
    counts = feedback.what_transfers([top], {"D1:1", "D1:2", "D5:5"})
    # D1:1 is in the top already; D1:2 was accepted and is missing: half the gold.
    assert counts["ceiling"] == pytest.approx(0.5)
    assert feedback.transfer_shares(counts)[feedback.CEILING] == pytest.approx(0.5)


def test_transfer_rules_lift_what_the_judged_half_said() -> None:
    question = transfer.Unseen(
        gold={"g"},
        results=[(f"x{i}", 1.0 - i / 100) for i in range(10)] + [("g", 0.85), ("r", 0.95)],
        accepted=Counter({"g": 1}),
        rejected=Counter({"x0": 3, "g": 1}),
        links=[(0.9, ["g"]), (0.4, ["x9"])],
    )
    assert transfer.r10([s for s, _ in question.results], question.gold) == 0.0
    assert transfer.ceiling(question) == 1.0
    # An accepted turn is lifted; a rejected one that was also accepted is not lowered.
    assert transfer.prior_lift(question, 0.1, -0.06) == {"g": 0.1, "x0": -0.06}
    assert transfer.reranked(question, {"g": 0.2})[0] == "g"
    # Only judged questions at least t alike lend their acceptances.
    assert transfer.link_lift(question, 0.5, 0.3) == {"g": pytest.approx(0.27)}
    change, point = transfer.best_change(
        transfer.changes([question], {"t": (0.95, 0.5), "a": (0.3,)}, transfer.link_lift)
    )
    assert (change, point) == (1.0, {"t": 0.5, "a": 0.3})


def _one_gold(conversation: str, accepted_lifts: bool, many: bool = False) -> transfer.Unseen:
    """Ten turns, then "g" and "w"; a lift of 0.1 for what was accepted either brings the gold
    turn "g" into the top 10 (``accepted_lifts``) or lifts the accepted wrong turn "w" there,
    pushing the gold turn "x9" out."""
    results = [(f"x{i}", 1.0 - i / 100) for i in range(10)] + [("g", 0.905), ("w", 0.904)]
    accepted = Counter({"g": 1}) if accepted_lifts else Counter({"w": 1})
    return transfer.Unseen(
        {"g"} if accepted_lifts else {"x9"},
        results,
        accepted,
        Counter(),
        [],
        conversation,
        1,
        many,
    )


def test_a_rule_for_questions_that_ask_for_several_things_lifts_nothing_for_the_others() -> None:
    lift = transfer.for_many_only(transfer.prior_lift)
    assert lift(_one_gold("A", True, many=True), 0.1, 0.0) == {"g": 0.1}
    assert lift(_one_gold("A", True, many=False), 0.1, 0.0) == {}


def test_transfer_cross_validation_scores_each_conversation_at_the_others_choice() -> None:
    # A and B gain from the lift, C loses. In-sample the lift gains (2 - 1) of 3. Held out A
    # (or B), the others tie (+1 - 1) and the earlier point, no lift, is kept: no change;
    # held out C, A and B choose the lift, and C loses.
    questions = [_one_gold("A", True), _one_gold("B", True), _one_gold("C", False)]
    grid = {"a": (0.0, 0.1), "r": (0.0,)}
    table = transfer.changes(questions, grid, transfer.prior_lift)
    assert transfer.best_change(table) == (
        pytest.approx(1 / 3),
        {"a": 0.1, "r": 0.0},
    )
    assert transfer.cross_validated_change(questions, table) == pytest.approx(-1 / 3)
    # With one winner and two losers no fold chooses the lift.
    losing = [_one_gold("A", True), _one_gold("B", False), _one_gold("C", False)]
    losing_table = transfer.changes(losing, grid, transfer.prior_lift)
    assert transfer.cross_validated_change(losing, losing_table) == 0.0


def test_the_query_map_moves_a_question_towards_the_turns_accepted_for_it() -> None:
    import numpy as np

    question = np.array([1.0, 0.0, 0.0])
    turns = np.eye(3)
    # Of three turns, the one along the second axis was accepted.
    correction = transfer.learn_query_map([(question, turns, [1])], mu=0.1)
    moved = question + correction @ question
    moved /= np.linalg.norm(moved)
    assert moved @ turns[1] > 0.1 > question @ turns[1]
    unseen = transfer.Unseen(
        {"b"},
        [("a", 1.0), ("b", 0.99)],
        Counter(),
        Counter(),
        [],
        vector=question,
        mapped={0.1: moved},
        result_vectors={"a": turns[0], "b": turns[1]},
    )
    lift = transfer.map_lift(unseen, 0.1, 1.0)
    assert lift["b"] > 0 > lift["a"]
    assert transfer.reranked(unseen, lift)[0] == "b"
    assert transfer.map_lift(unseen, 0.1, 0.0) == {}


def test_the_turn_classifier_lifts_turns_like_the_accepted_ones_whatever_the_question() -> None:
    import numpy as np

    # Judged turns along the first axis were accepted, along the second rejected.
    judged = np.array([[1.0, 0.1], [0.9, -0.1], [0.1, 1.0], [-0.1, 0.9]])
    weights, bias = transfer.learn_turn_classifier(judged, np.array([1.0, 1.0, 0.0, 0.0]), 0.01)
    unseen = transfer.Unseen(
        {"b"},
        [("a", 1.0), ("b", 0.99)],
        Counter(),
        Counter(),
        [],
        result_vectors={"a": np.array([0.0, 1.0]), "b": np.array([1.0, 0.0])},
        classifiers={0.01: (weights, bias)},
    )
    lift = transfer.classifier_lift(unseen, 0.01, 0.1)
    assert lift["b"] > 0 > lift["a"]
    assert lift["b"] == pytest.approx(-lift["a"])  # centred on the results' mean
    assert transfer.reranked(unseen, lift)[0] == "b"
    assert transfer.classifier_lift(unseen, 0.01, 0.0) == {}


def test_held_out_changes_keep_each_question_for_the_standard_error() -> None:
    questions = [_one_gold("A", True), _one_gold("B", True), _one_gold("C", False)]
    table = transfer.changes(questions, {"a": (0.0, 0.1), "r": (0.0,)}, transfer.prior_lift)
    held_out = transfer.held_out_changes(questions, table)
    # As above: A and B held out keep no lift; C held out takes the lift and loses its gold.
    assert held_out == [0.0, 0.0, -1.0]
    assert sum(held_out) / 3 == pytest.approx(transfer.cross_validated_change(questions, table))


def test_a_conversation_is_halved_alternately_or_at_random_by_split() -> None:
    questions = [Question("c", 1, f"q{i}", "a", ["D1:1"]) for i in range(7)]
    conversation = Conversation("c", [], questions)
    judged, unseen = halves(conversation)
    assert [q.question for q in judged] == ["q0", "q2", "q4", "q6"]
    assert [q.question for q in unseen] == ["q1", "q3", "q5"]
    splits = [halves(conversation, split) for split in (1, 2, 3)]
    for judged, unseen in splits:
        # Each question in exactly one half, the halves as large as alternately, in order.
        assert sorted(q.question for q in judged + unseen) == [q.question for q in questions]
        assert (len(judged), len(unseen)) == (4, 3)
        assert judged == sorted(judged, key=questions.index)
    assert len({tuple(q.question for q in judged) for judged, _ in splits}) > 1
    assert halves(conversation, 1) == splits[0]  # the same split each time


def test_evidence_counts_what_acceptances_and_rejections_say_of_unseen_questions() -> None:
    # Ranked: x0..x8, then r (rejected, not gold), then g (gold, ranked 11th).
    results = [(f"x{i}", 1.0 - i / 100) for i in range(9)] + [("r", 0.9), ("g", 0.85)]
    question = transfer.Unseen(
        gold={"g", "x0"},
        results=[*results, ("w", 0.8)],
        accepted=Counter({"g": 1, "w": 1}),
        rejected=Counter({"r": 1, "x0": 2}),
        links=[(0.9, ["g"]), (0.3, ["w"])],
        refusals=[(0.9, ["r"]), (0.3, ["r", "x0"])],
    )
    # Dropping r (rejected, not gold) lets g in; x0 was rejected too but is gold: it stays.
    assert transfer.lowering_ceiling(question) == 0.5
    assert transfer.auc([0.9, 0.3], [True, False]) == 1.0
    assert transfer.auc([0.5, 0.5], [True, False]) == 0.5
    lifted, lowered, ceiling = transfer.evidence([question])
    # g and w are ranked 11th and 12th: two pairs, g gold, and the more alike question's.
    assert lifted.startswith("accepted turns a re-rank could lift (ranked 11-40): 2 (turn,")
    assert "1 gold there; likeness tells them apart with AUC 1.00" in lifted
    assert lifted.endswith("at likeness >= 0.8, 1 gold of 1")
    # r (most alike rejecter 0.9, not gold) and x0 (0.3, gold): 1 of the 10 top turns is gold.
    assert lowered.startswith("rejected turns in unseen top 10s: 2, 50% gold there")
    assert "(any turn in a top 10: 10%)" in lowered and lowered.endswith("AUC 0.00")
    assert ceiling.endswith("+0.500")
