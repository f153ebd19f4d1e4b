"""Leave-one-conversation-out tuning (bench/tune_ranking.py, bench/locomo.py --cv): the pure
selection on a hand-made table, and both harnesses end to end on a tiny synthetic corpus in
LoCoMo's format with the hash embedder."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

# The bench scripts are not a package: they import each other from their own folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import locomo
import tune_ranking
from tune_ranking import Figures, PointScores, QuestionScore, leave_one_out

# ---- the pure selection ------------------------------------------------------------------------

P0 = {"text": 0.2}
P1 = {"text": 0.5}
P2 = {"text": 0.8}


def _point(point: dict[str, Any], scores: list[tuple[float, float]]) -> PointScores:
    """The four questions A1 (cat 1), B1 (cat 2), C1 (cat 4), C2 (cat 1) scored (R@5, R@10)."""
    asked = [("A", 1), ("B", 2), ("C", 4), ("C", 1)]
    return PointScores(
        point,
        [QuestionScore(c, k, r5, r10) for (c, k), (r5, r10) in zip(asked, scores, strict=True)],
    )


#: P0 is best in-sample (R@10 0.5 against 0.375), but held out A, the others prefer P1.
#: Held out B, P0 and P1 tie on R@10 (1/3 each) and P0 wins on R@5; P2 equals P0 in every
#: score and so never displaces it (the first in grid order wins).
TABLE = [
    _point(P0, [(1.0, 1.0), (0.5, 1.0), (0.0, 0.0), (0.0, 0.0)]),
    _point(P1, [(0.0, 0.0), (0.0, 0.5), (0.5, 1.0), (0.0, 0.0)]),
    _point(P2, [(1.0, 1.0), (0.5, 1.0), (0.0, 0.0), (0.0, 0.0)]),
]


def test_each_fold_chooses_on_the_other_conversations() -> None:
    cv = leave_one_out(TABLE)
    assert [(f.held_out, f.index, f.point) for f in cv.folds] == [
        ("A", 1, P1),
        ("B", 0, P0),
        ("C", 0, P0),
    ]
    assert [f.training for f in cv.folds] == [
        Figures(3, 0.5 / 3, 1.5 / 3),  # P1 on B1, C1, C2
        Figures(3, 1.0 / 3, 1.0 / 3),  # P0 on A1, C1, C2
        Figures(2, 0.75, 1.0),  # P0 on A1, B1
    ]
    assert [f.held_out_figures for f in cv.folds] == [
        Figures(1, 0.0, 0.0),  # P1 on A1
        Figures(1, 0.5, 1.0),  # P0 on B1
        Figures(2, 0.0, 0.0),  # P0 on C1, C2
    ]


def test_cross_validated_figures_pool_the_held_out_questions() -> None:
    cv = leave_one_out(TABLE)
    assert cv.overall == Figures(4, 0.125, 0.25)
    assert cv.per_category == {
        1: Figures(2, 0.0, 0.0),  # A1 under P1, C2 under P0
        2: Figures(1, 0.5, 1.0),
        3: Figures(0, 0.0, 0.0),
        4: Figures(1, 0.0, 0.0),
    }


def test_the_in_sample_best_is_chosen_on_everything() -> None:
    best = leave_one_out(TABLE).in_sample
    assert (best.index, best.point) == (0, P0)
    assert best.overall == Figures(4, 0.375, 0.5)
    assert best.per_category[1] == Figures(2, 0.5, 0.5)


def test_leave_one_out_refuses_what_it_cannot_split() -> None:
    with pytest.raises(ValueError, match="empty"):
        leave_one_out([])
    one = PointScores({}, [QuestionScore("A", 1, 1.0, 1.0)])
    with pytest.raises(ValueError, match="two conversations"):
        leave_one_out([one])
    other = PointScores(P1, [QuestionScore("A", 2, 1.0, 1.0)])
    with pytest.raises(ValueError, match="other questions"):
        leave_one_out([one, other])


def test_grid_points_are_checked_against_the_ranking_settings() -> None:
    base = tune_ranking.RankingWeights()
    points = tune_ranking.grid_points({"text": [0.1, 0.2], "neighbour_window": [1, 3]}, base)
    assert points == [
        {"text": 0.1, "neighbour_window": 1},
        {"text": 0.1, "neighbour_window": 3},
        {"text": 0.2, "neighbour_window": 1},
        {"text": 0.2, "neighbour_window": 3},
    ]
    with pytest.raises(ValueError, match="not a ranking setting"):
        tune_ranking.grid_points({"txet": [0.1]}, base)
    with pytest.raises(ValueError, match="neighbour_decay"):
        tune_ranking.grid_points({"neighbour_decay": [2.0]}, base)
    with pytest.raises(ValueError, match="non-empty list"):
        tune_ranking.grid_points({"text": []}, base)


# ---- end to end on a synthetic corpus ----------------------------------------------------------

#: Per conversation: sessions of (speaker, text) turns, and questions (text, evidence, category).
#: Each question shares its words with its evidence turn, so the hash embedder finds some.
CORPUS: dict[str, dict[str, Any]] = {
    "syn-1": {
        "sessions": [
            [
                ("Ana", "I adopted a grey cat named Pixel last week."),
                ("Ben", "Lovely! I started learning the cello in March."),
                ("Ana", "My sister moved to Lisbon for a design job."),
            ],
            [
                ("Ben", "The cello teacher says my bowing improved."),
                ("Ana", "Pixel knocked my coffee off the desk again."),
            ],
        ],
        "questions": [
            ("What is the name of Ana's cat?", ["D1:1"], 4),
            ("Where did Ana's sister move?", ["D1:3"], 4),
            ("When did Ben start learning the cello?", ["D1:2"], 2),
            ("What did Pixel knock off the desk and who adopted Pixel?", ["D2:2", "D1:1"], 1),
        ],
    },
    "syn-2": {
        "sessions": [
            [
                ("Caro", "We hiked the ridge trail on Saturday morning."),
                ("Dev", "I baked sourdough bread with rye flour."),
            ],
            [
                ("Caro", "The ridge trail had snow near the summit."),
                ("Dev", "My sourdough starter is named Bubbles."),
                ("Caro", "I bought new hiking boots for the winter."),
            ],
        ],
        "questions": [
            ("What bread did Dev bake?", ["D1:2"], 4),
            ("What is the sourdough starter named?", ["D2:2"], 4),
            ("What did Caro buy for the winter?", ["D2:3"], 3),
        ],
    },
    "syn-3": {
        "sessions": [
            [
                ("Eli", "I am painting a mural of a whale downtown."),
                ("Fay", "My garden tomatoes finally turned red."),
            ],
            [
                ("Eli", "The whale mural needs blue paint for the ocean."),
                ("Fay", "I gave tomatoes from the garden to my neighbour."),
            ],
        ],
        "questions": [
            ("What is Eli painting downtown?", ["D1:1"], 4),
            ("Who got tomatoes from Fay's garden?", ["D2:2"], 4),
            ("What colour paint does the whale mural need?", ["D2:1"], 2),
        ],
    },
}


def _write_corpus(path: Path) -> int:
    """Write CORPUS in locomo-dev.json's shape; the number of questions."""
    items = []
    for number, (sample_id, spec) in enumerate(CORPUS.items()):
        conversation: dict[str, Any] = {"speaker_a": "a", "speaker_b": "b"}
        for s, turns in enumerate(spec["sessions"], 1):
            conversation[f"session_{s}_date_time"] = f"1:{10 + s} pm on {s + number} May, 2023"
            conversation[f"session_{s}"] = [
                {"speaker": speaker, "dia_id": f"D{s}:{t}", "text": text}
                for t, (speaker, text) in enumerate(turns, 1)
            ]
        qa = [
            {"question": q, "answer": "", "evidence": evidence, "category": category}
            for q, evidence, category in spec["questions"]
        ]
        qa.append({"question": "adversarial", "answer": "", "evidence": ["D1:1"], "category": 5})
        items.append({"sample_id": sample_id, "conversation": conversation, "qa": qa})
    path.write_text(json.dumps(items), encoding="utf-8")
    return sum(len(spec["questions"]) for spec in CORPUS.values())


#: Two points: no neighbourhood, and the default (configs/default.toml, as the harness reads it).
DEFAULTS = locomo.make_settings(Path("unused"), "hash", {}).store.ranking
GRID = {"neighbourhood": [0.0, DEFAULTS.neighbourhood]}


def test_tune_ranking_cross_validates_a_synthetic_corpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "locomo.json"
    total = _write_corpus(data)
    assert sum(len(c.questions) for c in locomo.load_conversations(data)) == total
    out = tmp_path / "tune.json"
    argv = ["--data", str(data), "--embedder", "hash", "--grid", json.dumps(GRID)]
    assert tune_ranking.main([*argv, "--json", str(out)]) == 0

    report = json.loads(out.read_text(encoding="utf-8"))
    cv = report["cross_validation"]
    assert [f["held_out"] for f in cv["folds"]] == list(CORPUS)
    for fold, spec in zip(cv["folds"], CORPUS.values(), strict=True):
        assert fold["point"] in [{"neighbourhood": value} for value in GRID["neighbourhood"]]
        assert fold["held_out_figures"]["questions"] == len(spec["questions"])
        assert 0.0 <= fold["held_out_figures"]["R@5"] <= fold["held_out_figures"]["R@10"] <= 1.0
    assert cv["overall"]["questions"] == total
    assert sum(row["questions"] for row in cv["per_category"].values()) == total
    assert len(report["points"]) == len(report["table"]) == 2
    assert report["defaults_index"] == 1
    # The table in the JSON is enough to redo the selection offline.
    table = [
        PointScores(
            p["point"],
            [
                QuestionScore(q["conversation"], q["category"], r5, r10)
                for q, r5, r10 in zip(report["questions"], row["R@5"], row["R@10"], strict=True)
            ],
        )
        for p, row in zip(report["points"], report["table"], strict=True)
    ]
    assert leave_one_out(table).overall.as_json() == cv["overall"]

    printed = capsys.readouterr().out
    assert printed.index("cross-validated") < printed.index("IN-SAMPLE")


def test_locomo_cv_measures_each_held_out_conversation_through_mcp(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "locomo.json"
    total = _write_corpus(data)
    out = tmp_path / "locomo.json.out"
    argv = ["--data", str(data), "--embedder", "hash", "--cv", "--cv-grid", json.dumps(GRID)]
    assert locomo.main([*argv, "--json", str(out)]) == 0

    summary = json.loads(out.read_text(encoding="utf-8"))
    cross = summary["cross_validation"]
    assert [f["held_out"] for f in cross["folds"]] == list(CORPUS)
    for fold in cross["folds"]:
        # The store API chose and scored; MCP measured: the same ranking, the same figures.
        assert fold["questions"] == fold["held_out_store_api"]["questions"]
        assert fold["R@10"] == pytest.approx(fold["held_out_store_api"]["R@10"])
        assert fold["R@5"] == pytest.approx(fold["held_out_store_api"]["R@5"])
    assert cross["overall"]["questions"] == summary["overall"]["questions"] == total

    printed = capsys.readouterr().out
    assert printed.index("LEAVE-ONE-CONVERSATION-OUT") < printed.index("through MCP   data:")
