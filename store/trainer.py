"""The ranker's trainer: retrains the model on the judgements, on its own thread.

A feedback only counts its judged results here (``judged``); after ``retrain_every`` of them
(or a tenth of what the last model learned from, if more; and once ``min_judgements`` exist)
the thread wakes, reads the judged results of the latest ``training_recalls`` judged recalls
from the graph, trains and checks the model (``learning.train``), writes it to the data
directory and hands it to recall (``model``). Training is never on a tool call's path.
``request`` asks for a retrain now and returns a ticket that ``wait`` waits on (a
benchmark's "learn now"). A start with no model kept (none yet, an import, which brings the
judgements but not the model, or a damaged file) asks for one at once. A model learns from
the recalls of one embedder, and says whose: a kept model of another (the embedding model
changed) is not used until one is trained anew.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from doxa.store.learning import (
    Example,
    RankerModel,
    keeps_signs,
    load_model,
    passes,
    save_model,
    train,
)
from doxa.store.settings import LearningSettings
from doxa.store.values import iso, utc_now

log = logging.getLogger(__name__)

#: What a kept model that did not say whose recalls it learned from says once it is known
#: to be another embedder's.
_ANOTHER = "another embedder"


class Trainer:
    """Keeps the current model and retrains it in the background.

    Args:
        data_dir: where the model is kept.
        settings: when to retrain, and how.
        examples: reads the judged results to train on from the graph (called on the
            thread).
        feedback_weight: the ranking's ``feedback`` weight (``learning.asked_again``).
        embedder: the fingerprint of the embedder recall ranks with; ``examples`` are its
            recalls' only.
        foreign_index: the search index was built by another embedder (a kept model that
            does not say whose recalls it learned from learned from that one's).
        trains: False for a process that only looks (a one-shot command): it uses the kept
            model as these settings allow, and never retrains it or writes its file (``doxa
            stats`` without the server's ``--config`` replaced the server's active model).
        judged_since: how many results were judged after a time (ISO 8601), of this
            embedder's recalls: those after the kept model was trained count towards the
            next retrain (they were counted from 0 at each start, so a memory whose owner
            restarted more often than ``retrain_every`` judgements kept its first model).
    """

    def __init__(
        self,
        data_dir: Path,
        settings: LearningSettings,
        examples: Callable[[], Sequence[Example]],
        feedback_weight: float = 0.6,
        *,
        embedder: str,
        foreign_index: bool = False,
        trains: bool = True,
        judged_since: Callable[[str], int] | None = None,
    ) -> None:
        self._trains = trains
        self._feedback_weight = feedback_weight
        self._dir = data_dir
        self._settings = settings
        self._examples = examples
        self._embedder = embedder
        self._lock = threading.Condition()
        self._model = self._kept_model(foreign_index)
        self._since = 0  # judged results since the last retrain
        self._requested = 0  # retrains asked for
        if self._model is None:
            # No model kept, or a damaged one (load_model warned), while the judgements are
            # in the graph (an import brings them, not the model): trained at start, not
            # after `retrain_every` new ones. With too few judged, training stops at once.
            self._requested = 1
        if self._model is not None and self._model.active and not keeps_signs(self._model):
            # Kept by a version whose weights could take any sign: such a model may have
            # learned to prefer the least relevant (learning.WEIGHT_SIGNS). Retrained at start.
            log.warning(
                "ranker v%d in %s has weights of the wrong sign: unused until retrained",
                self._model.version,
                data_dir,
            )
            self._model = replace(self._model, active=False)
            self._requested = 1
        kept = self._model
        if kept is not None and kept.active and not passes(kept, settings):
            # Trained under looser settings (significance, min_ordering): its held-out check
            # does not pass these. Unused, and retrained at start under them.
            log.warning(
                "ranker v%d in %s does not pass the learning settings now (held out: %d"
                " recalls better, %d worse): unused until retrained",
                kept.version,
                data_dir,
                int(kept.held_out.get("better", 0)),
                int(kept.held_out.get("worse", 0)),
            )
            self._model = replace(kept, active=False)
            self._requested = 1
        if trains and judged_since is not None and not self._requested:
            kept = self._model
            if kept is not None and kept.embedder == embedder:
                self._since = judged_since(kept.trained_at)
                every = self._every()
                # With no retrain while serving (0), every start retrains on what is new.
                if self._since >= every if every else self._since > 0:
                    self._since = 0
                    self._requested = 1
        self._done = 0  # retrains finished
        self._stopping = False
        self._thread: threading.Thread | None = None

    def _kept_model(self, foreign_index: bool) -> RankerModel | None:
        """The model in the data directory, unused if it learned from the recalls of another
        embedder (their vector component is another model's likeness). It stays in the file
        as it was: a start under that embedder again uses it, until a model trained on this
        one's recalls replaces it."""
        model = load_model(self._dir)
        if model is None or model.embedder == self._embedder:
            return model
        if not model.embedder and not foreign_index:
            # Kept before models said whose recalls they learned from: the index's embedder's.
            model = replace(model, embedder=self._embedder)
        elif not model.embedder:
            # Said from now on, so a later start under this embedder does not take it as its.
            model = replace(model, active=False, embedder=_ANOTHER)
        else:
            if model.active:
                log.warning(
                    "ranker v%d in %s learned from another embedding model's recalls: unused"
                    " until one is trained on this one's",
                    model.version,
                    self._dir,
                )
            return replace(model, active=False)
        if not self._trains:
            return model
        try:
            save_model(self._dir, model)  # so the next start need not decide again
        except OSError as error:
            log.warning("ranker model in %s not updated: %s", self._dir, error)
        return model

    @property
    def model(self) -> RankerModel | None:
        """The model recall uses: the current one if it is active, else None (base)."""
        model = self._model
        return model if model is not None and model.active else None

    @property
    def latest(self) -> RankerModel | None:
        """The last model trained or loaded, active or not."""
        return self._model

    def start(self) -> None:
        """Start the training thread (none when it does not train)."""
        if not self._trains:
            return
        self._thread = threading.Thread(target=self._run, name="doxa-trainer", daemon=True)
        self._thread.start()

    def judged(self, count: int) -> None:
        """Count ``count`` new judged results; wake the thread when a retrain is due: after
        ``retrain_every`` of them, or a tenth of what the last model was trained on if that is
        more (a few hundred new results barely move a model trained on 20,000, and each
        retrain reads them all: under 8 busy clients it retrained every 4 s)."""
        every = self._every()
        with self._lock:
            self._since += count
            if every and self._since >= every:
                self._since = 0
                self._requested += 1
                self._lock.notify_all()

    def _every(self) -> int:
        """New judged results a retrain waits for (0: none, only at a start)."""
        every = self._settings.retrain_every
        if every and self._model is not None and self._model.embedder == self._embedder:
            every = max(every, self._model.examples // 10)
        return every

    def request(self) -> int:
        """Ask for a retrain now; the ticket to ``wait`` on."""
        with self._lock:
            self._requested += 1
            self._since = 0
            self._lock.notify_all()
            return self._requested

    def wait(self, ticket: int, timeout: float | None = None) -> bool:
        """Wait until the retrain of ``ticket`` (or a later one) has finished; False if
        ``timeout`` seconds passed first (at once when it does not train)."""
        with self._lock:
            if not self._trains:
                return False
            return self._lock.wait_for(lambda: self._done >= ticket, timeout)

    def _run(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._stopping or self._requested > self._done)
                if self._stopping:
                    return
                target = self._requested
            try:
                self._retrain()
            except Exception:  # the old model stays; the next retrain tries again
                log.exception("retraining the ranker failed; recall keeps the previous model")
            with self._lock:
                self._done = max(self._done, target)
                self._lock.notify_all()

    def _retrain(self) -> None:
        examples = self._examples()
        previous = self._model
        version = (previous.version if previous is not None else 0) + 1
        model = train(
            examples, version, self._settings, iso(utc_now()) or "", self._feedback_weight
        )
        if model is None:
            return
        model = replace(model, embedder=self._embedder)
        try:
            save_model(self._dir, model)
        except OSError as error:  # a directory in its place, a full disk: said, not raised
            log.warning(
                "ranker v%d not kept in %s (%s): used until this process stops",
                model.version,
                self._dir,
                error,
            )
        self._model = model
        log.info(
            "ranker v%d trained on %d judged results: %s (held out: %s)",
            model.version,
            model.examples,
            "active" if model.active else "not better than the base ranking, unused",
            model.held_out,
        )

    def stop(self) -> None:
        """Stop the thread (a retrain under way finishes first)."""
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
