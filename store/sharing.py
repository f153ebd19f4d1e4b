"""One memory for every process on the machine: the first to open a data directory owns it,
the others relay their calls to the owner, and when the owner exits one of them takes over.

Kùzu lets one process open a database. So ownership is an exclusive ``flock`` on
``owner.lock`` in the data directory (the kernel drops it when its process dies, so a killed
owner never blocks the next start); the owner opens the ``Memory`` and serves it on a Unix
socket (``doxa.store.relay``), bound at once, before the memory has warmed up. Every other
process connects to that socket; a watch connection tells it at once when the owner is gone,
and then it races the others for the lock: the winner becomes the owner, the rest connect to
it.

A call that was in flight when the owner died is sent again if it only reads; a write (which
the owner may have applied before dying) fails with ``OwnerLost``, a retryable error: a
retried write is never applied twice (remember finds its text already there, feedback its
recall already judged, forget its observation already retracted).
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from doxa.store.errors import MemoryStoreError, OwnerLost, OwnerStopped
from doxa.store.progress import REMEMBER_STEPS
from doxa.store.settings import StoreSettings

if TYPE_CHECKING:
    from doxa.store.drafts import MemoryDraft
    from doxa.store.memory import (
        Forgotten,
        Judged,
        Memory,
        OrderBy,
        RecallOutcome,
        Remembered,
    )
    from doxa.store.names import NameKind, Names
    from doxa.store.picture import Picture
    from doxa.store.progress import Progress
    from doxa.store.pruning import Pruned
    from doxa.store.relay import RelayClient, RelayServer

log = logging.getLogger(__name__)

#: The log line of a refusal to open or reach the memory (a ``MemoryStoreError``: what is
#: wrong, what to do). Every call gets the same error, so a command that prints it drops this.
REACH_FAILED = "could not open or reach the memory: %s"

#: Operations that change the memory: not sent twice after the owner died mid-call.
WRITES = frozenset({"remember", "feedback", "forget", "prune"})
#: How long to wait for an owner that holds the lock to open its socket.
CONNECT_WAIT_S = 30.0
#: A call whose owner was lost keeps trying (after at least three tries) for this long.
RETRY_FOR_S = 10.0


def data_dir_refusal(data_dir: Path) -> str | None:
    """Why ``data_dir`` can be no data directory, or None: it is a file, or lies under one
    (making it would fail with a bare errno: ``File exists``, ``Not a directory``).

    Every command asks before it touches the directory, so each names the file alike.
    """
    try:
        for path in (data_dir, *data_dir.parents):
            if path.is_dir():
                return None
            if path.exists():
                if path == data_dir:
                    return f"the data directory {data_dir} is a file; name a directory"
                return (
                    f"the data directory {data_dir} lies under {path}, which is a file;"
                    " name a directory"
                )
    except OSError:  # unreadable (a parent without search permission): opening says why
        return None
    return None


class Ownership:
    """The exclusive lock that makes a process the owner of a data directory."""

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / "owner.lock"
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        """Take the lock if nobody holds it (never waits). True if this process owns it."""
        if self._fd is not None:
            return True
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())  # for people looking: who owns it
        self._fd = fd
        return True

    def release(self) -> None:
        """Give the lock up (also happens when the process dies)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class SharedMemory:
    """The memory of a data directory, owned by this process or relayed to its owner.

    It offers the operations the tools use, with ``Memory``'s signatures; a relayed
    ``remember`` is believed by this process's own default agent (``settings.agent``).

    Args:
        settings: the store's settings (this process's agent, data directory, embedder).
        memory: an open memory to serve directly, without sharing (tests, benchmarks).
        may_own: False for a process that only relays, never taking the memory over (an
            HTTP worker: its serving process, or another server, holds it).
        trains: False for a one-shot command: owning the memory, it never retrains the
            ranker nor rewrites its file (``Memory.open``); only a server does.
    """

    def __init__(
        self,
        settings: StoreSettings,
        memory: Memory | None = None,
        may_own: bool = True,
        trains: bool = True,
    ) -> None:
        self.settings = settings
        self._trains = trains
        self._data_dir = Path(settings.data_dir).expanduser()
        self._ownership = Ownership(self._data_dir)
        self._may_own = may_own
        self._local = memory
        self._given = memory is not None
        self._server: RelayServer | None = None
        self._client: RelayClient | None = None
        self._role = threading.Condition()
        self._settled = memory is not None
        self._settling = False
        self._failure: BaseException | None = None
        self._closed = False
        self._stopping = False  # close() was called: settle no further
        self._watcher: threading.Thread | None = None
        self._started = False
        #: The connections of an owner being joined (its version asked): close() hangs up.
        self._joining: tuple[RelayClient, RelayClient] | None = None

    # ---- who owns the memory ----------------------------------------------------------------

    def start(self) -> None:
        """Find or take the owner on a background thread (returns at once)."""
        with self._role:
            if self._started:
                return
            self._started = True
        if self._given:
            assert self._local is not None
            self._local.start()
            return
        with self._role:
            self._settling = True  # before the thread runs: close() waits for it
        threading.Thread(target=self._settle_claimed, name="doxa-share", daemon=True).start()

    def wait_settled(self, timeout: float = CONNECT_WAIT_S) -> bool:
        """Wait until this process owns the memory or relays to its owner (or failed to
        do either, which calls report); False after ``timeout``."""
        with self._role:
            return self._role.wait_for(lambda: self._settled or self._closed, timeout)

    @property
    def owner(self) -> bool:
        """True when this process owns the memory."""
        return self._local is not None

    def _settle(self) -> None:
        """Become the owner or connect to it; wakes every waiting call. Runs once at a time:
        the watch connection and a failed call may both find the owner gone."""
        with self._role:
            if self._settling or self._settled or self._closed:
                return
            self._settling = True
        self._settle_claimed()

    def _settle_claimed(self) -> None:
        """``_settle`` once this thread has claimed the settling.

        It settles again when the owner it joined went before it was done: a watcher that
        sees the owner go while this thread still settles leaves the work to it (a killed
        owner's listening socket still takes connections for a moment, then drops them).
        """
        while True:
            try:
                self._take_or_join()
            except BaseException as error:  # reported to every call
                if isinstance(error, MemoryStoreError):  # a refusal that says what to do
                    log.error(REACH_FAILED, error)
                else:
                    log.exception("could not open or reach the memory")
                with self._role:
                    self._failure = error
                    self._settled = True
            with self._role:
                if self._settled or self._closed or self._stopping:
                    self._settling = False
                    self._role.notify_all()
                    return

    def _take_or_join(self) -> None:
        from doxa.store.memory import Memory
        from doxa.store.relay import RelayClient, RelayServer, socket_path

        refused = data_dir_refusal(self._data_dir)
        if refused is not None:
            raise MemoryStoreError(refused)
        self._data_dir.mkdir(parents=True, exist_ok=True)
        path = socket_path(self._data_dir)
        deadline = time.monotonic() + CONNECT_WAIT_S
        while True:
            with self._role:
                if self._stopping:  # nothing opened yet: nothing is left half open
                    return
            if self._may_own and self._ownership.try_acquire():
                local = Memory.open(self.settings, trains=self._trains)
                local.start()
                # Bound to this memory: a peer may call before self._local is set below.
                server = RelayServer(path, functools.partial(_run_on, local))
                with self._role:
                    self._local, self._server, self._client = local, server, None
                    self._settled, self._failure = True, None
                    self._role.notify_all()
                log.info("this process owns the memory in %s", self._data_dir)
                return
            try:
                client = RelayClient(path, stalled=functools.partial(_stopped, self._data_dir))
                watch = RelayClient(path, connections=1)
            except OSError:  # the owner is still binding, or just died: try again
                if time.monotonic() > deadline:
                    raise MemoryStoreError(
                        f"the memory in {self._data_dir} is held by a process that does not"
                        f" answer on {path}; stop it, or use another --data-dir"
                    ) from None
                time.sleep(0.05)
                continue
            with self._role:
                self._joining = (client, watch)
            try:
                # Waits for an owner that is stopped (kill -STOP) until it runs again, or
                # until close() hangs up.
                _same_wire(client, self._data_dir)
            except MemoryStoreError:
                client.close()
                watch.close()
                raise
            finally:
                with self._role:
                    self._joining = None
            with self._role:
                if self._stopping:  # close() hung up while the owner was being asked
                    client.close()
                    watch.close()
                    return
                self._client, self._settled, self._failure = client, True, None
                self._role.notify_all()
            log.info("relaying to the process that owns the memory in %s", self._data_dir)
            self._watch(watch, client)
            return

    def _watch(self, watch: RelayClient, client: RelayClient) -> None:
        """A connection that never sends: it ends when the owner goes, and then this
        process takes over or joins the next owner (unless a failed call of ``client``
        already did)."""

        def wait_for_owner_to_go() -> None:
            watch.wait_closed()
            watch.close()
            with self._role:
                if self._closed or self._client is not client:
                    return
                self._drop_client()
            self._settle()

        self._watcher = threading.Thread(
            target=wait_for_owner_to_go, name="doxa-share-watch", daemon=True
        )
        self._watcher.start()

    def _drop_client(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
            self._settled = False

    def _call(
        self, method: str, *args: Any, local: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> Any:
        """``method(*args, **kwargs)`` on the memory, owned here or relayed; ``local``: more
        keyword arguments for a memory owned here only (callbacks cannot cross processes)."""
        from doxa.store.relay import RequestLost

        # Each lost owner is settled again; a dying owner can take a joining process's
        # connections and drop them several times over, so a call keeps trying for a while
        # rather than a fixed number of times (a write sent to a lost owner is OwnerLost).
        began, attempts, settled_again = time.monotonic(), 0, False
        while attempts < 3 or time.monotonic() - began < RETRY_FOR_S:
            attempts += 1
            with self._role:
                if not self._started:
                    self.start()
                if not self._role.wait_for(lambda: self._settled, timeout=CONNECT_WAIT_S + 5):
                    stopped = _stopped(self._data_dir, method)
                    if stopped is not None:
                        raise stopped
                    raise MemoryStoreError(
                        f"the memory in {self._data_dir} is still being opened, or the process"
                        f" holding it (pid {_holder(self._data_dir)}) does not answer (stopped?);"
                        " try again, or stop that process"
                    )
                failure = self._failure
                if (
                    failure is not None
                    and not settled_again
                    and self._local is None
                    and not self._closed
                ):
                    # Taking or joining the memory failed (its holder did not answer: an
                    # import, a repair, an owner slow to close); it may be free now. Each
                    # call tries once more: the failure was kept for good, every call
                    # refused until this process was restarted.
                    settled_again = True
                    self._settled, self._failure = False, None
                    if not self._settling:
                        self._settling = True
                        threading.Thread(
                            target=self._settle_claimed, name="doxa-share", daemon=True
                        ).start()
                    continue
                if failure is not None:
                    if isinstance(failure, MemoryStoreError):
                        raise failure
                    raise MemoryStoreError(f"the memory could not be opened: {failure}")
                own, client = self._local, self._client
            if own is not None:
                return getattr(own, method)(*args, **kwargs, **(local or {}))
            assert client is not None
            try:
                return client.call(method, args, kwargs)
            except RequestLost as lost:
                with self._role:
                    if self._client is client:
                        self._drop_client()
                        threading.Thread(target=self._settle, daemon=True).start()
                if lost.sent and method in WRITES:
                    raise OwnerLost(method) from None
        raise MemoryStoreError(f"{method}: the memory's owner kept exiting; try again")

    # ---- the operations ---------------------------------------------------------------------

    def remember(
        self,
        drafts: Sequence[MemoryDraft],
        batch: bool = False,
        agent: str | None = None,
        progress: Progress | None = None,
    ) -> list[Remembered]:
        """``Memory.remember``, believed by this process's agent unless ``agent`` says.
        Relayed to another process's memory, ``progress`` hears only the end."""
        told: list[int] = []

        def hear(done: int, total: int, message: str) -> None:
            told.append(done)
            if progress is not None:
                progress(done, total, message)

        result: list[Remembered] = self._call(
            "remember",
            list(drafts),
            batch=batch,
            agent=agent or self.settings.agent,
            local={"progress": hear},
        )
        if progress is not None and not told and result:
            progress(REMEMBER_STEPS, REMEMBER_STEPS, f"wrote {len(result)} memories")
        return result

    def recall(
        self,
        query: str,
        agent: str | None = None,
        topics: Sequence[str] | None = None,
        min_confidence: object = None,
        as_of: object = None,
        include_superseded: bool = False,
        limit: int = 10,
        order_by: OrderBy = "relevance",
        subject: str | None = None,
        predicate: str | None = None,
        object: str | None = None,
        episode: str | None = None,
        known_at: object = None,
        where: object = None,
    ) -> RecallOutcome:
        """``Memory.recall``."""
        result: RecallOutcome = self._call(
            "recall",
            query,
            agent=agent,
            topics=None if topics is None else list(topics),
            min_confidence=min_confidence,
            as_of=as_of,
            include_superseded=include_superseded,
            limit=limit,
            order_by=order_by,
            subject=subject,
            predicate=predicate,
            object=object,
            episode=episode,
            known_at=known_at,
            where=where,
        )
        return result

    def feedback(
        self, recall_id: str, accepted: Sequence[str] = (), rejected: Sequence[str] = ()
    ) -> Judged:
        """``Memory.feedback``."""
        result: Judged = self._call(
            "feedback", recall_id, accepted=list(accepted), rejected=list(rejected)
        )
        return result

    def forget(
        self,
        observation_id: str,
        mode: str = "retract",
        agent: str | None = None,
        alone: bool = False,
    ) -> Forgotten:
        """``Memory.forget``."""
        result: Forgotten = self._call(
            "forget", observation_id, mode=mode, agent=agent, alone=alone
        )
        return result

    def prune(self, rule: Mapping[str, object] | None = None, apply: bool = False) -> Pruned:
        """``Memory.prune``."""
        result: Pruned = self._call("prune", None if rule is None else dict(rule), apply=apply)
        return result

    def evidence(self, id: str, known_at: object = None) -> dict[str, Any]:
        """``Memory.evidence``."""
        result: dict[str, Any] = self._call("evidence", id, known_at=known_at)
        return result

    def unsupported(self, agent: str, known_at: object = None) -> dict[str, Any]:
        """``Memory.unsupported``."""
        result: dict[str, Any] = self._call("unsupported", agent, known_at=known_at)
        return result

    def conflicts(
        self,
        agent: str | None = None,
        other_agent: str | None = None,
        topic: str | None = None,
        known_at: object = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """``Memory.conflicts``."""
        result: dict[str, Any] = self._call(
            "conflicts", agent, other_agent, topic, known_at=known_at, limit=limit
        )
        return result

    def about(self, entity: str, as_of: object = None, known_at: object = None) -> dict[str, Any]:
        """``Memory.about``."""
        result: dict[str, Any] = self._call("about", entity, as_of=as_of, known_at=known_at)
        return result

    def entities(self, limit: int = 500) -> list[dict[str, Any]]:
        """``Memory.entities``."""
        result: list[dict[str, Any]] = self._call("entities", limit)
        return result

    def picture(self) -> Picture:
        """``Memory.picture``: a snapshot read, from the owner when another process owns it."""
        result: Picture = self._call("picture")
        return result

    def names(self, kind: NameKind, prefix: str = "", limit: int = 100) -> Names:
        """``Memory.names`` (at most ``doxa.store.names.MAX_NAMES`` by default)."""
        result: Names = self._call("names", kind, prefix, limit)
        return result

    def judgements(self) -> list[dict[str, Any]]:
        """``Memory.judgements``."""
        result: list[dict[str, Any]] = self._call("judgements")
        return result

    def stats(self) -> dict[str, int]:
        """``Memory.stats``."""
        result: dict[str, int] = self._call("stats")
        return result

    def tallies(self) -> dict[str, int]:
        """``Memory.tallies``."""
        result: dict[str, int] = self._call("tallies")
        return result

    def export(self, path: Path) -> dict[str, Any]:
        """``Memory.export``: written by the process that owns the memory."""
        result: dict[str, Any] = self._call("export", str(Path(path).resolve()))
        return result

    def backup(self, target: Path) -> dict[str, Any]:
        """``Memory.backup``: copied by the process that owns the memory."""
        result: dict[str, Any] = self._call("backup", str(Path(target).resolve()))
        return result

    def close(self) -> None:
        """Stop serving other processes (letting their running calls finish), close the
        memory if this process owns it, and give up ownership; or hang up on the owner.
        An opening still under way finishes first, so the memory is never left half open;
        joining an owner that does not answer (stopped) is given up at once."""
        with self._role:
            self._stopping = True
            joining = self._joining
        for connection in joining or ():
            connection.close()  # an owner that does not answer is not waited for
        with self._role:
            self._role.wait_for(lambda: not self._settling, timeout=CONNECT_WAIT_S)
            self._closed = True
            server, local, client = self._server, self._local, self._client
            self._server = self._client = None
        if server is not None:
            server.close()
        if local is not None and not self._given:
            local.close()
            self._local = None
        if client is not None:
            client.close()
        self._ownership.release()

    @property
    def memory(self) -> Memory | None:
        """The memory itself when this process owns it (tests, benchmarks), else None."""
        return self._local


def _same_wire(client: RelayClient, data_dir: Path) -> None:
    """Refuse an owner of another doxa version: their messages would not read the same.

    Raises:
        MemoryStoreError: naming the owner and what to do.
    """
    from doxa.store.relay import WIRE, RequestLost, wire

    try:
        theirs = client.call(WIRE, (), {})
    except RequestLost:
        return  # it went: the watch connection finds the next owner
    except MemoryStoreError:  # "unknown operation": older than the question
        theirs = None
    if theirs != wire():
        raise MemoryStoreError(
            f"the process that owns the memory in {data_dir} (pid {_holder(data_dir)}) runs"
            " another version"
            " of doxa; stop it (or every doxa on this directory) and start again, so that one"
            " version serves the memory"
        )


def _stopped(data_dir: Path, method: str) -> OwnerStopped | None:
    """``OwnerStopped`` if the process owning ``data_dir`` is stopped (Linux: its state in
    ``/proc``; elsewhere a call waits for it as for a busy one), else None. Joining it
    (``WIRE``) waits: the process joins once the owner runs again."""
    from doxa.store.relay import WIRE

    if method == WIRE:
        return None
    pid = _holder(data_dir)
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except (OSError, ValueError):
        return None
    # The state follows the command name, which is in parentheses and may hold any text.
    state = stat.rpartition(")")[2].split()[:1]
    return OwnerStopped(method, pid) if state in (["T"], ["t"]) else None


def _holder(data_dir: Path) -> str:
    """The pid ``owner.lock`` names (its owner writes it), or "?"."""
    try:
        return (data_dir / "owner.lock").read_text(errors="replace").split()[0]
    except (OSError, IndexError):
        return "?"


def _run_on(memory: Memory, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run one relayed call on the memory this process owns. A relayed recall's client
    lives on in the relaying process, which may take over if this one dies: its event is
    journaled before it answers (``recall_journal``), so a feedback sent after a takeover
    finds the recall."""
    return getattr(memory, method)(*args, **kwargs)
