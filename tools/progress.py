"""A store operation's progress (``doxa.store.progress``) as MCP progress notifications,
sent to the client that asked for them (a ``progressToken``; the SDK sends nothing
otherwise: whether a request asked is the dispatcher's to know, not the tool's)."""

from __future__ import annotations

import threading
from typing import Any

import anyio.from_thread
from mcp.server.mcpserver import Context

from doxa.store.progress import Progress


class CallCancelled(Exception):
    """The client cancelled the request whose store call told this progress."""


def notifier(ctx: Context[Any], cancelled: threading.Event | None = None) -> Progress:
    """A hook telling the client the progress of the store call this request runs.

    The hook is for a store call running on a worker thread (``doxa.tools.context.call``):
    it waits until the notification is sent, so notifications leave in the order told. Once
    ``cancelled`` is set (the client cancelled the request) it tells nothing more, and a
    step before the last raises ``CallCancelled``: the store call stops there (a remember
    before its write).
    """

    def tell(done: int, total: int, message: str) -> None:
        if cancelled is not None and cancelled.is_set():
            if done < total:
                raise CallCancelled(message)
            return
        anyio.from_thread.run(ctx.report_progress, done, total, message)

    return tell
