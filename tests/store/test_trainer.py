"""When the trainer retrains: after ``retrain_every`` new judged results, or a tenth of what
the last model learned from when that is more."""

from __future__ import annotations

from pathlib import Path

from doxa.store.learning import FEATURES, RankerModel, save_model
from doxa.store.settings import LearningSettings
from doxa.store.trainer import Trainer


def kept_model(data_dir: Path, examples: int) -> None:
    save_model(
        data_dir,
        RankerModel(
            version=1,
            features=FEATURES,
            mean=(0.0,) * len(FEATURES),
            scale=(1.0,) * len(FEATURES),
            coef=(1.0,) * len(FEATURES),
            intercept=0.0,
            active=False,
            examples=examples,
            trained_at="2026-12-01T00:00:00Z",
        ),
    )


def test_a_retrain_is_due_after_retrain_every_judged_results(tmp_path: Path) -> None:
    trainer = Trainer(tmp_path, LearningSettings(retrain_every=10), list)
    trainer.judged(9)
    assert trainer.request() == 1  # nothing was due before this ticket
    trainer.judged(10)
    assert trainer.request() == 3


def test_after_a_large_model_a_tenth_of_its_examples_is_due(tmp_path: Path) -> None:
    kept_model(tmp_path, examples=20_000)
    trainer = Trainer(tmp_path, LearningSettings(retrain_every=500), list)
    trainer.judged(1999)
    assert trainer.request() == 1
    trainer.judged(2000)
    assert trainer.request() == 3
