"""A store operation's progress (``doxa.store.progress``) as MCP progress notifications,
sent to the client that asked for them (a ``progressToken``; the SDK sends nothing
otherwise: whether a request asked is the dispatcher's to know, not the tool's)."""

from __future__ import annotations

from typing import Any

import anyio.from_thread
from mcp.server.mcpserver import Context

from doxa.store.progress import Progress


def notifier(ctx: Context[Any]) -> Progress:
    """A hook telling the client the progress of the store call this request runs.

    The hook is for a store call running on a worker thread (``doxa.tools.context.call``):
    it waits until the notification is sent, so notifications leave in the order told.
    """

    def tell(done: int, total: int, message: str) -> None:
        anyio.from_thread.run(ctx.report_progress, done, total, message)

    return tell
