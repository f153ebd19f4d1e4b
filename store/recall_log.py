"""The recall log: what each recall returned, kept for its feedback and written to the graph
in batches, off the request path.

Every recall is recorded as a ``Recall`` node with its ``RETURNED`` results, but a graph write
per recall would put a transaction (and the graph's lock) on the path of every recall. So a
recall only notes its event here, which appends it to the journal (``recall_journal``: a
process killed before the graph write loses none, the next opening writes them); a
background thread writes what has gathered every 0.25 s in one transaction, and ``feedback``
writes it at once (``record``) before judging. The last 4,096 recalls are also kept in memory
with their query vectors, so judging a recent recall needs neither a graph read nor the
model.

One small lock guards both (the events not yet written and the recent recalls); it is held
only to add, take or look up, never while anything else is waited for. Events are taken for
writing only with the graph's write lock held (it comes first in the lock order), so a
writer holding that lock that calls ``record`` knows every event noted before is written.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from doxa.store.errors import MemoryStoreError
from doxa.store.recall_journal import Event, RecallJournal

if TYPE_CHECKING:
    from pathlib import Path

    from doxa.store.graph import Graph

log = logging.getLogger(__name__)

#: Recalls kept in memory for their feedback (older ones are read back from the graph).
RECENT_RECALLS = 4_096
#: Seconds between two writes of the gathered events.
RECORD_EVERY_S = 0.25


@dataclass
class Recent:
    """A recall as feedback needs it: its query (and the query's vector, when this process
    embedded it), the observations it returned in rank order, and whether it was judged."""

    query: str
    vector: npt.NDArray[np.float32] | None
    returned: list[str]
    judged: bool = False


class RecallLog:
    """Recent recalls and their events still to be written to the graph.

    Args:
        embedder: the fingerprint of the embedder this process ranks with, recorded with
            each recall (the ranker learns only from recalls of the embedder it ranks with).
        recent: how many recalls to keep in memory for feedback.
    """

    def __init__(self, embedder: str, recent: int = RECENT_RECALLS) -> None:
        self._embedder = embedder
        self._capacity = recent
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, Recent] = OrderedDict()
        self._unrecorded: list[Event] = []
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._journal: RecallJournal | None = None

    def note(
        self,
        recall_id: str,
        query: str,
        agent: str | None,
        at: datetime,
        vector: npt.NDArray[np.float32] | None,
        returned: list[tuple[str, float, str]],
    ) -> None:
        """Log a recall: its results as (observation id, score, features), best first."""
        event: Event = (
            recall_id,
            query,
            agent,
            at,
            [(obs, rank, score, f) for rank, (obs, score, f) in enumerate(returned)],
        )
        recent = Recent(query, vector, [obs for obs, _, _ in returned])
        with self._lock:
            if self._journal is not None:
                try:
                    self._journal.append(event)
                except OSError as error:  # still written to the graph within 0.25 s
                    log.warning("recall %s not journaled: %s", recall_id, error)
            self._unrecorded.append(event)
            self._recent[recall_id] = recent
            while len(self._recent) > self._capacity:
                self._recent.popitem(last=False)

    def find(self, recall_id: str) -> Recent | None:
        """The recall if it is among the recent ones, else None (look in the graph)."""
        with self._lock:
            return self._recent.get(recall_id)

    def record(self, graph: Graph) -> None:
        """Write the events gathered so far to the graph (one transaction), unless none
        are. Afterwards every event noted before the call is in the graph. On failure they
        stay queued, ahead of newer ones, and the error is raised."""
        with self._lock:
            if not self._unrecorded:
                return
        # The batch is taken with the graph's lock held, so once a writer holding that lock
        # has called this, every event noted before is in the graph: a feedback must never
        # judge a recall whose event another thread has taken but not yet written (its
        # judging would match no Recall node and be lost).
        with graph.exclusive():
            with self._lock:
                batch, self._unrecorded = self._unrecorded, []
                segment = None if self._journal is None else self._journal.rotate()
            if not batch:
                return
            try:
                graph.transact(
                    "recording recalls", lambda w: w.record_recalls(batch, self._embedder)
                )
            except BaseException:
                # Their journal segments stay, until a later batch holding them commits.
                with self._lock:
                    self._unrecorded = batch + self._unrecorded
                raise
            if segment is not None:
                with self._lock:
                    if self._journal is not None:
                        self._journal.drop_through(segment)

    def recover(self, graph: Graph, folder: Path, embedder: str) -> int:
        """Open the journal in ``folder`` and write to the graph the events it holds that
        are not there yet (a process killed before writing them), as ranked by ``embedder``
        ("" when not known); returns how many. When the graph refuses them, this process
        journals nothing and they stay for the next."""
        journal = RecallJournal(folder)
        pending = journal.pending()
        try:
            known = graph.known_recalls([event[0] for event in pending]) if pending else set()
            missing = [event for event in pending if event[0] not in known]
            if missing:
                graph.transact(
                    "recording journaled recalls", lambda w: w.record_recalls(missing, embedder)
                )
                log.info("%d recalls of a stopped process written from the journal", len(missing))
        except MemoryStoreError as error:
            # A log, not something acknowledged: the memory still opens, and this process
            # journals nothing, so its segments stay for the next opening to retry.
            log.warning("journaled recalls not written (kept for the next opening): %s", error)
            journal.close()
            return 0
        journal.clear()
        with self._lock:
            self._journal = journal
        return len(missing)

    def start(self, graph: Graph) -> None:
        """Write gathered events every ``RECORD_EVERY_S`` on a background thread, which also
        checkpoints the graph when it is due."""
        self._thread = threading.Thread(
            target=self._run, args=(graph,), name="doxa-recalls", daemon=True
        )
        self._thread.start()

    def _run(self, graph: Graph) -> None:
        failing: str | None = None
        while not self._stopping.wait(RECORD_EVERY_S):
            try:
                self.record(graph)
                failing = None
            except Exception as error:  # the events stay queued and are retried
                # Once per failure, not every 0.25 s while it lasts (a graph refusing
                # writes until a restart would fill the log).
                if str(error) != failing:
                    log.exception("could not record recall events (retried until it works)")
                failing = str(error)
            # Here, off the writers' path: a checkpoint takes tens of milliseconds or more.
            graph.checkpoint_if_due()

    def stop(self) -> None:
        """Stop the background thread (the caller then records what is left)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def close(self) -> None:
        """Close the journal's file (what it holds stays for the next opening)."""
        with self._lock:
            if self._journal is not None:
                self._journal.close()
                self._journal = None
