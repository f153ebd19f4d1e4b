"""More processes answering HTTP on one port: ``doxa serve --transport http --workers N``.

One Python process spends much of a recall's CPU in the HTTP and MCP stack (3-4 of about 6 ms
with the hash embedder after bench/load.py's mixed load, the recall itself 2-3), all of it
under one interpreter lock: more clients do not get more recalls per second out of it. With N
workers the serving process binds the port, settles as the owner of the data directory and
starts N processes that accept connections on that socket. Each opens the memory through
``doxa.store.sharing`` and relays its tool calls to the serving process over its Unix socket,
several at once. The serving process answers no HTTP itself: its interpreter lock goes to the
memory alone (the recalls of every worker), and the HTTP stack's to the workers
(``bench/load.py``: 32 clients got 1.64-1.67 x one client's recalls this way, 1.27-1.54 x when
the serving process also took connections).

The serving process restarts a worker that died (unless it keeps dying at once), and stops
them all before it closes the memory; a worker stops by itself once the serving process is
gone (``doxa.server.http_server``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from doxa.server.http_server import WORKER_PARENT, WORKER_SETTINGS, WORKER_SOCKET
from doxa.server.settings import Settings
from doxa.server.stdio import DRAIN_SECONDS

log = logging.getLogger(__name__)

#: A worker that exits sooner than this after it started is not started again more than
#: ``_QUICK_DEATHS`` times in a row (it fails at start, e.g. a broken install).
_QUICK_S = 5.0
_QUICK_DEATHS = 3


class Workers:
    """``count`` worker processes serving ``listener`` with ``settings``, watched.

    Args:
        settings: the serving process's settings (the workers get them as they are).
        listener: the bound socket the workers accept connections on.
        count: how many workers.
    """

    def __init__(self, settings: Settings, listener: socket.socket, count: int) -> None:
        self._settings = settings.model_dump_json()
        self._listener = listener
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._processes: list[subprocess.Popen[bytes]] = []
        self._started: list[float] = []
        self._quick_deaths = [0] * count
        self._given_up: set[int] = set()
        for _ in range(count):
            self._processes.append(self._spawn())
            self._started.append(time.monotonic())
        self._watcher = threading.Thread(target=self._watch, name="doxa-workers", daemon=True)
        self._watcher.start()
        log.info(
            "%d HTTP workers %s answer on the port and relay to the process holding the memory",
            count,
            self.pids(),
        )

    def pids(self) -> list[int]:
        """The workers' process ids."""
        with self._lock:
            return [process.pid for process in self._processes]

    def given_up(self) -> bool:
        """Whether every worker kept dying at start and none is started again."""
        with self._lock:
            return len(self._given_up) == len(self._processes)

    def _spawn(self) -> subprocess.Popen[bytes]:
        fd = self._listener.fileno()
        env = {
            **os.environ,
            WORKER_SETTINGS: self._settings,
            WORKER_SOCKET: str(fd),
            WORKER_PARENT: str(os.getpid()),
        }
        return subprocess.Popen(
            [sys.executable, "-m", "doxa.server.http_server"],
            env=env,
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
        )

    def _watch(self) -> None:
        """Start again a worker that exited while the server runs."""
        given_up = self._given_up
        while not self._stopping.wait(1.0):
            with self._lock:
                for k, process in enumerate(self._processes):
                    if k in given_up or process.poll() is None or self._stopping.is_set():
                        continue
                    quick = time.monotonic() - self._started[k] < _QUICK_S
                    self._quick_deaths[k] = self._quick_deaths[k] + 1 if quick else 0
                    if self._quick_deaths[k] >= _QUICK_DEATHS:
                        log.error(
                            "HTTP worker %d exited with %d, the %dth time in a row within %.0f s"
                            " of starting: not started again (see its log above)",
                            process.pid,
                            process.returncode,
                            _QUICK_DEATHS,
                            _QUICK_S,
                        )
                        given_up.add(k)
                        continue
                    log.warning(
                        "HTTP worker %d exited with %d: starting another",
                        process.pid,
                        process.returncode,
                    )
                    self._processes[k] = self._spawn()
                    self._started[k] = time.monotonic()

    def stop(self) -> None:
        """Stop every worker: SIGTERM (each finishes its requests, up to the drain time),
        then SIGKILL for any still running."""
        self._stopping.set()
        self._watcher.join()
        with self._lock:
            processes = list(self._processes)
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + DRAIN_SECONDS + 5
        for process in processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("HTTP worker %d did not stop: killed", process.pid)
                process.kill()
                process.wait()
