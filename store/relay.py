"""Calls to a memory in another process, over a Unix domain socket: the owner of a data
directory serves them (``RelayServer``) and every other process sends them (``RelayClient``).

The wire is a 4-byte length and a pickle per message, both ways. Pickle keeps exact values
(``Decimal``, aware ``datetime``) and the store's own result types without a second schema;
it is read with an allow-list (``_Unpickler``), so a peer can only send the store's own types,
and the socket is created mode 0600 inside the data directory: only its owner's processes
can connect, and those can already read and write the directory's files.

A request is ``(method, args, kwargs)``; a reply is ``("ok", result)`` or ``("error",
exception)``, where the exception is one of the store's errors (anything else is sent as a
``MemoryStoreError`` naming it).
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import os
import pickle
import select
import socket
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from doxa.store.errors import MemoryStoreError, MessageTooLarge

log = logging.getLogger(__name__)

#: The operations a relay may ask of the owner's memory.
METHODS = frozenset(
    {"remember", "recall", "feedback", "forget", "evidence", "unsupported", "conflicts", "stats"}
    | {"about", "entities", "prune", "picture", "names", "tallies", "export", "backup"}
    | {"judgements"}
)

_HEADER = struct.Struct("!I")
_MAX_MESSAGE = 256 * 1024 * 1024

#: What a message may contain besides builtins: exact values and the store's own types.
_ALLOWED = {
    ("decimal", "Decimal"),
    ("datetime", "datetime"),
    ("datetime", "timezone"),
    ("datetime", "timedelta"),
    ("datetime", "date"),
    ("doxa.store.drafts", "MemoryDraft"),
    ("doxa.store.drafts", "FactDraft"),
    ("doxa.store.drafts", "SupportDraft"),
    ("doxa.store.memory", "Remembered"),
    ("doxa.store.memory", "Recollection"),
    ("doxa.store.event_time", "EventTime"),
    ("doxa.store.records", "Record"),
    ("doxa.store.records", "RecordField"),
    ("doxa.store.memory", "RecallOutcome"),
    ("doxa.store.memory", "Judged"),
    ("doxa.store.memory", "Forgotten"),
    ("doxa.store.pruning", "Pruned"),
    ("doxa.store.names", "Names"),
    ("doxa.store.pruning", "Retirement"),
    ("doxa.store.picture", "Picture"),
    ("doxa.store.picture", "PicturedEntity"),
    ("doxa.store.picture", "PicturedFact"),
    ("doxa.store.picture", "PicturedNote"),
    ("doxa.store.picture", "PicturedConflict"),
    ("doxa.store.errors", "MemoryStoreError"),
    ("doxa.store.errors", "InvalidInput"),
    ("doxa.store.errors", "NotFound"),
    ("doxa.store.errors", "SchemaMismatch"),
    ("doxa.store.errors", "StorageError"),
    ("doxa.store.errors", "DamagedStore"),
    ("doxa.store.errors", "OwnerLost"),
    ("doxa.store.errors", "OwnerStopped"),
    ("doxa.store.errors", "MemoryInUse"),
    ("doxa.store.errors", "NotPermitted"),
    ("doxa.store.errors", "MessageTooLarge"),
    ("copyreg", "_reconstructor"),
    ("builtins", "object"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
}


#: The operation that answers ``wire``: asked once by each relaying process, so that one of
#: another doxa version is refused with what to do (an owner without it is older still).
WIRE = "wire"


@functools.cache
def wire() -> str:
    """What both ends must share for their messages to read the same: the relay's methods
    and the fields of every store type that crosses it (a field added to one unpickled
    without it, in an older peer: ``'RecordField' object has no attribute 'listed'``)."""
    import dataclasses
    import hashlib
    import importlib

    parts = [",".join(sorted(METHODS))]
    for module, name in sorted(_ALLOWED):
        if module.startswith("doxa."):
            kind = getattr(importlib.import_module(module), name)
            names = (
                [f.name for f in dataclasses.fields(kind)] if dataclasses.is_dataclass(kind) else []
            )
            parts.append(f"{module}.{name}({','.join(names)})")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} may not cross the relay")
        return super().find_class(module, name)


def socket_path(data_dir: Path) -> Path:
    """Where the owner of ``data_dir`` listens. Inside the directory when its real path fits
    a socket address (108 bytes on Linux); otherwise in ``/tmp/doxa-<uid>``, named by that
    path. Every spelling of the directory (a link to it, a relative path) and every session
    (whatever its ``$XDG_RUNTIME_DIR``) finds the same socket.

    Raises:
        MemoryStoreError: ``/tmp/doxa-<uid>`` is not a private directory of this user's.
    """
    real = data_dir.resolve()
    inside = real / "doxa.sock"
    if len(os.fsencode(inside)) < 100:
        return inside
    import hashlib
    import stat

    private = Path(f"/tmp/doxa-{os.getuid()}")
    private.mkdir(mode=0o700, exist_ok=True)
    found = private.lstat()
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
        raise MemoryStoreError(
            f"{private} (where a memory whose path is too long for a socket address is"
            " served) is not a directory only this user may use; remove it and start again"
        )
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:24]
    return private / f"{digest}.sock"


def _send(connection: socket.socket, message: object, answering: str | None = None) -> None:
    """Send ``message``: a call (its method first), or with ``answering``, the answer to
    that method's call."""
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    if len(payload) > _MAX_MESSAGE:
        # Sent, the other end hung up on it, and the call was sent again until the owner
        # "kept exiting".
        size, most = f"{len(payload) / 2**20:.1f} MiB", f"{_MAX_MESSAGE / 2**20:.1f} MiB"
        if answering is not None:
            raise MessageTooLarge(
                f"{answering}: the answer is {size}, more than the memory's owner may send"
                f" to a process relaying to it ({most}); ask for less (a smaller limit)"
            )
        operation = message[0] if isinstance(message, tuple) and message else "call"
        raise MessageTooLarge(
            f"{operation}: the call is {size}, more than a process relaying to the memory's"
            f" owner may send ({most}); send it in parts"
        )
    connection.sendall(_HEADER.pack(len(payload)) + payload)


def _receive(connection: socket.socket) -> Any:
    (size,) = _HEADER.unpack(_exactly(connection, _HEADER.size))
    if size > _MAX_MESSAGE:
        raise ConnectionError(f"a relay message of {size} bytes is too large")
    return _Unpickler(io.BytesIO(_exactly(connection, size))).load()


#: How often a call waiting for its answer asks whether to give up (``RelayClient``).
STALL_CHECK_S = 1.0


def _answered(connection: socket.socket, timeout: float) -> bool:
    """Whether the peer sent something (or hung up) within ``timeout`` seconds; True too for
    a connection closed under the wait (``RelayClient.close``: reading it then fails, and the
    call is lost as sent)."""
    poller = select.poll()
    try:
        poller.register(connection, select.POLLIN | select.POLLERR | select.POLLHUP)
    except ValueError:  # closed: its file descriptor is -1
        return True
    return bool(poller.poll(timeout * 1000))


def _exactly(connection: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = connection.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionResetError("the other side of the relay closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class RelayServer:
    """Serves another process's calls on the memory this process owns.

    Args:
        path: the socket to listen on (a stale one left by a killed owner is replaced: the
            caller holds the ownership lock, so no live owner is listening there).
        call: ``call(method, args, kwargs)`` runs one operation on the memory.
    """

    def __init__(self, path: Path, call: Callable[[str, tuple[Any, ...], dict[str, Any]], Any]):
        self.path = path
        self._call = call
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        old_mask = os.umask(0o177)  # the socket is born 0600: no window where others connect
        try:
            self._listener.bind(str(path))
        finally:
            os.umask(old_mask)
        self._listener.listen(64)
        self._connections: set[socket.socket] = set()
        self._busy = 0
        self._lock = threading.Condition()
        self._closing = False
        self._thread = threading.Thread(target=self._accept, name="doxa-relay", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:  # closed
                return
            with self._lock:
                if self._closing:
                    connection.close()
                    return
                self._connections.add(connection)
            threading.Thread(
                target=self._serve, args=(connection,), name="doxa-relay-peer", daemon=True
            ).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            while True:
                try:
                    method, args, kwargs = _receive(connection)
                except (OSError, EOFError, struct.error):
                    return
                except pickle.UnpicklingError as error:
                    _send(connection, ("error", MemoryStoreError(f"relay refused: {error}")))
                    continue
                with self._lock:
                    if self._closing:
                        return
                    self._busy += 1
                try:
                    reply = self._answer(method, args, kwargs)
                finally:
                    with self._lock:
                        self._busy -= 1
                        self._lock.notify_all()
                try:
                    _send(connection, reply, method)
                except MessageTooLarge as error:  # the answer: say so, as for a call
                    _send(connection, ("error", error))
                except OSError:
                    return
        finally:
            with self._lock:
                self._connections.discard(connection)
            connection.close()

    def _answer(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> object:
        if method == WIRE:
            return ("ok", wire())
        if method not in METHODS:
            return ("error", MemoryStoreError(f"relay: unknown operation {method!r}"))
        try:
            return ("ok", self._call(method, tuple(args), dict(kwargs)))
        except MemoryStoreError as error:
            return ("error", error)
        except Exception as error:
            log.exception("relayed %s failed", method)
            return ("error", MemoryStoreError(f"{method} failed: {type(error).__name__}: {error}"))

    def close(self, drain_s: float = 10.0) -> None:
        """Stop taking calls, let those running finish (up to ``drain_s``), hang up."""
        with self._lock:
            self._closing = True
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            self._lock.wait_for(lambda: self._busy == 0, timeout=drain_s)
            peers = list(self._connections)
        for peer in peers:
            with contextlib.suppress(OSError):
                peer.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


class RelayClient:
    """Connections to the owner's ``RelayServer``: one call at a time on each, and as many
    at once as ``connections`` (opened when every open one is busy), so that a relaying
    process's calls run in parallel in the owner as its own would (one HTTP worker relays
    many clients' calls).

    ``stalled``, asked each second a call waits for its answer, may give up on it: it returns
    the error to raise (the owner is stopped, say), or None to keep waiting.

    Raises (from ``call``):
        ConnectionError: the owner is gone; ``sent`` tells whether the request had left.
    """

    def __init__(
        self,
        path: Path,
        timeout: float = 1.0,
        connections: int = 8,
        stalled: Callable[[str], Exception | None] | None = None,
    ) -> None:
        self._path = path
        self._timeout = timeout
        self._stalled = stalled
        self._most = max(1, connections)
        self._lock = threading.Condition()
        self._closed = False
        first = self._connect()
        #: Every open connection, and those waiting for a call.
        self._open: set[socket.socket] = {first}
        self._idle: list[socket.socket] = [first]
        self._opening = 0

    def _connect(self) -> socket.socket:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(self._timeout)
        try:
            connection.connect(str(self._path))
        except OSError:
            connection.close()
            raise
        connection.settimeout(None)
        return connection

    def _take(self) -> socket.socket:
        """An idle connection, a new one while fewer than ``connections`` are open, or the
        first to come back."""
        with self._lock:
            while not self._closed:
                if self._idle:
                    return self._idle.pop()
                if len(self._open) + self._opening < self._most:
                    self._opening += 1
                    break
                self._lock.wait()
            else:
                raise RequestLost(sent=False)
        try:
            connection = self._connect()
        except OSError as error:
            with self._lock:
                self._opening -= 1
                self._lock.notify()
            raise RequestLost(sent=False) from error
        with self._lock:
            self._opening -= 1
            if self._closed:
                connection.close()
                raise RequestLost(sent=False)
            self._open.add(connection)
        return connection

    def _give_back(self, connection: socket.socket, usable: bool) -> None:
        with self._lock:
            if usable and not self._closed:
                self._idle.append(connection)
            else:
                self._open.discard(connection)
                with contextlib.suppress(OSError):
                    connection.close()
            self._lock.notify()

    def call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run ``method`` in the owner and return its result or raise its error.

        Raises:
            RequestLost: the connection failed; its ``sent`` says whether the owner may
                have received the request.
            MemoryStoreError: the owner's answer, or what ``stalled`` gave up with.
        """
        connection = self._take()
        usable = False
        try:
            try:
                _send(connection, (method, args, kwargs))
            except OSError as error:
                raise RequestLost(sent=False) from error
            while self._stalled is not None and not _answered(connection, STALL_CHECK_S):
                given_up = self._stalled(method)
                if given_up is not None:  # the connection is closed: its answer is dropped
                    raise given_up
            try:
                status, value = _receive(connection)
            except (OSError, EOFError, struct.error) as error:
                raise RequestLost(sent=True) from error
            usable = True
        finally:
            self._give_back(connection, usable)
        if status == "error":
            raise value
        return value

    def wait_closed(self) -> None:
        """Block until the owner hangs up (for a connection that sends nothing)."""
        with self._lock:
            connection = next(iter(self._open), None)
        if connection is None:
            return
        with contextlib.suppress(OSError):
            while connection.recv(4096):
                pass

    def close(self) -> None:
        """Hang up (calls in flight fail with ``RequestLost``)."""
        with self._lock:
            self._closed = True
            connections = list(self._open)
            self._lock.notify_all()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                connection.close()


class RequestLost(ConnectionError):
    """The relay connection failed during a call.

    Attributes:
        sent: True when the request had been sent, so the owner may have run it.
    """

    def __init__(self, sent: bool) -> None:
        self.sent = sent
        super().__init__("the connection to the memory's owner process was lost")
