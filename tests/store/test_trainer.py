"""When the trainer retrains: after ``retrain_every`` new judged results, or a tenth of what
the last model learned from when that is more."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from conftest import hash_settings

from doxa.store import Memory, MemoryDraft
from doxa.store.learning import FEATURES, WEIGHT_SIGNS, RankerModel, load_model, save_model
from doxa.store.settings import LearningSettings
from doxa.store.trainer import Trainer


def kept_model(
    data_dir: Path,
    examples: int,
    coef: tuple[float, ...] | None = None,
    active: bool = False,
    held_out: dict[str, float] | None = None,
) -> None:
    save_model(
        data_dir,
        RankerModel(
            version=1,
            features=FEATURES,
            mean=(0.0,) * len(FEATURES),
            scale=(1.0,) * len(FEATURES),
            coef=(1.0,) * len(FEATURES) if coef is None else coef,
            intercept=0.0,
            active=active,
            examples=examples,
            trained_at="2026-12-01T00:00:00Z",
            held_out=held_out or {},
        ),
    )


def test_a_retrain_is_due_after_retrain_every_judged_results(tmp_path: Path) -> None:
    trainer = Trainer(tmp_path, LearningSettings(retrain_every=10), list, embedder="hash-v1:4")
    # No model kept: one is asked for at start (the graph may hold judgements: an import).
    trainer.judged(9)
    assert trainer.request() == 2  # nothing was due since
    trainer.judged(10)
    assert trainer.request() == 4


def test_after_a_large_model_a_tenth_of_its_examples_is_due(tmp_path: Path) -> None:
    kept_model(tmp_path, examples=20_000)
    trainer = Trainer(tmp_path, LearningSettings(retrain_every=500), list, embedder="hash-v1:4")
    trainer.judged(1999)
    assert trainer.request() == 1
    trainer.judged(2000)
    assert trainer.request() == 3


def signed(**weights: float) -> tuple[float, ...]:
    """Weights as ``WEIGHT_SIGNS`` allows them (1 or -1), but for ``weights``."""
    return tuple(weights.get(name, sign) for name, sign in zip(FEATURES, WEIGHT_SIGNS, strict=True))


def test_a_kept_model_with_weights_of_the_right_sign_is_used(tmp_path: Path) -> None:
    kept_model(tmp_path, examples=300, coef=signed(), active=True)
    trainer = Trainer(tmp_path, LearningSettings(retrain_every=0), list, embedder="hash-v1:4")
    assert trainer.model is not None
    assert trainer.request() == 1  # no retrain was asked for at start


def test_a_kept_model_that_prefers_the_least_relevant_is_not_used_and_is_retrained(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # As a version whose weights could take any sign might have kept it.
    kept_model(tmp_path, examples=300, coef=signed(vector=-2.0), active=True)
    with caplog.at_level(logging.WARNING, logger="doxa.store.trainer"):
        trainer = Trainer(tmp_path, LearningSettings(retrain_every=0), list, embedder="hash-v1:4")
    assert trainer.model is None and trainer.latest is not None
    assert "wrong sign" in caplog.text
    assert trainer.request() == 2  # a retrain was already asked for at start


def test_a_kept_model_whose_check_fails_the_settings_now_is_not_used_and_is_retrained(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Trained with significance 1 (any majority passes): 8 recalls better and 4 worse is no
    # sign at the default 0.01 (p = 0.19), but it stayed in use after a restart.
    held_out = {"better": 8.0, "worse": 4.0, "blend": 0.7, "base": 0.6, "recalls": 12.0}
    kept_model(tmp_path, examples=300, coef=signed(), active=True, held_out=held_out)
    loose = LearningSettings(retrain_every=0, significance=1.0)
    assert Trainer(tmp_path, loose, list, embedder="hash-v1:4").model is not None
    with caplog.at_level(logging.WARNING, logger="doxa.store.trainer"):
        trainer = Trainer(tmp_path, LearningSettings(retrain_every=0), list, embedder="hash-v1:4")
    assert trainer.model is None and trainer.latest is not None
    assert "does not pass the learning settings now (held out: 8 recalls better" in caplog.text
    assert trainer.request() == 2  # a retrain was already asked for at start
    strict = LearningSettings(retrain_every=0, significance=1.0, min_ordering=0.8)
    assert Trainer(tmp_path, strict, list, embedder="hash-v1:4").model is None


@pytest.mark.parametrize("foreign_index", [False, True])
def test_a_kept_model_that_does_not_say_whose_recalls_it_learned_from(
    tmp_path: Path, foreign_index: bool
) -> None:
    # Kept before models said so: it learned from the recalls of the embedder that built the
    # index. If that is this one, it is used and now says so; if not, it waits for a retrain,
    # which is due after retrain_every (not a tenth of what the old model learned from).
    kept_model(tmp_path, examples=20_000, coef=signed(), active=True)
    settings = LearningSettings(retrain_every=500)
    trainer = Trainer(tmp_path, settings, list, embedder="hash-v1:4", foreign_index=foreign_index)
    assert (trainer.model is None) is foreign_index
    assert trainer.latest is not None and trainer.latest.active is not foreign_index
    assert load_model(tmp_path) == trainer.latest  # decided once
    assert trainer.latest.embedder == ("another embedder" if foreign_index else "hash-v1:4")
    trainer.judged(500)
    assert trainer.request() == (2 if foreign_index else 1)
    again = Trainer(tmp_path, settings, list, embedder="hash-v1:4")
    assert (again.model is None) is foreign_index
    again.judged(500)
    assert again.request() == (2 if foreign_index else 1)


def test_a_model_that_cannot_be_kept_is_used_and_said_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ranker.json").mkdir()  # in the model file's place
    (tmp_path / "elsewhere").mkdir()
    kept_model(tmp_path / "elsewhere", examples=300, coef=signed(), active=True)
    trained = load_model(tmp_path / "elsewhere")
    monkeypatch.setattr("doxa.store.trainer.train", lambda *_: trained)
    with caplog.at_level(logging.INFO, logger="doxa.store"):
        trainer = Trainer(tmp_path, LearningSettings(retrain_every=0), list, embedder="hash-v1:4")
        trainer.start()
        assert trainer.wait(1, timeout=10)
        trainer.stop()
    assert trainer.model is not None and trainer.model.version == 1
    assert "not kept in" in caplog.text and "Traceback" not in caplog.text
    assert not any(r.exc_info for r in caplog.records)
    assert not (tmp_path / "ranker.json.partial").exists()


def test_results_judged_after_the_kept_model_count_towards_the_next_retrain(
    tmp_path: Path,
) -> None:
    # Counted from 0 at each start, a memory whose owner restarted more often than every
    # retrain_every judgements kept its first model for good.
    kept_model(tmp_path, examples=300, coef=signed(), active=True)
    asked: list[str] = []

    def judged_since(at: str) -> int:
        asked.append(at)
        return 420

    every = LearningSettings(retrain_every=500)
    trainer = Trainer(tmp_path, every, list, embedder="hash-v1:4", judged_since=judged_since)
    assert asked == ["2026-12-01T00:00:00Z"]
    assert trainer.request() == 1  # not due at start
    trainer = Trainer(tmp_path, every, list, embedder="hash-v1:4", judged_since=judged_since)
    trainer.judged(80)
    assert trainer.request() == 2  # 420 + 80: due
    due = Trainer(tmp_path, LearningSettings(retrain_every=400), list, embedder="hash-v1:4",
                  judged_since=judged_since)  # fmt: skip
    assert due.request() == 2  # due at start
    # retrain_every 0: a start retrains on whatever was judged since, and only then.
    at_start = LearningSettings(retrain_every=0)
    assert Trainer(tmp_path, at_start, list, embedder="hash-v1:4",
                   judged_since=judged_since).request() == 2  # fmt: skip
    assert Trainer(tmp_path, at_start, list, embedder="hash-v1:4",
                   judged_since=lambda at: 0).request() == 1  # fmt: skip


def test_a_memory_restarted_between_judgements_still_retrains(tmp_path: Path) -> None:
    # The owner of a shared memory changes at every restart: judged results counted from 0
    # at each start never reached retrain_every, and the first model stayed for good.
    learning = {"retrain_every": 50, "min_judgements": 20, "held_out": 0.5, "significance": 1.0}
    settings = hash_settings(tmp_path / "memory", learning=learning)

    def session(judged_recalls: int, train: bool = False) -> int:
        """Judge recalls (3 results each), retrain if asked, and wait a moment for any
        retrain due; the ranker's version."""
        memory = Memory.open(settings.store)
        memory.warm_up()
        try:
            if memory.ranker() is None:
                memory.remember([MemoryDraft(text=f"note {i} about boats") for i in range(8)])
            before = memory.ranker()
            for i in range(judged_recalls):
                found = memory.recall(f"boats {i}", limit=3)
                ids = [r.observation_id for r in found.results]
                memory.feedback(found.recall_id, accepted=ids[:1], rejected=ids[1:])
            if train:
                assert memory.wait_trained(memory.retrain(), timeout=30)
            deadline = time.monotonic() + 3
            while memory.ranker() is before and time.monotonic() < deadline:
                time.sleep(0.05)
            model = memory.ranker()
            assert model is not None
            return model.version
        finally:
            memory.close()

    first = session(20, train=True)  # 60 judged, and a model trained on them all
    assert session(10) == first  # 30 judged since: none due
    assert session(10) == first + 1  # 60 judged since: due
