"""A store operation's progress (``doxa.store.progress``) as MCP progress notifications,
sent to the client that asked for them with a ``progressToken``."""

from __future__ import annotations

from typing import Any

import anyio.from_thread
from mcp.server.mcpserver import Context

from doxa.store.progress import Progress


def wants_progress(ctx: Context[Any]) -> bool:
    """Whether the request carries a ``progressToken`` (progress is sent only then)."""
    meta = ctx.request_context.meta
    return meta is not None and meta.get("progress_token") is not None


def notifier(ctx: Context[Any]) -> Progress | None:
    """A hook telling the client the progress of the store call this request runs, or None
    when the client did not ask for it.

    The hook is for a store call running on a worker thread (``doxa.tools.context.call``):
    it waits until the notification is sent, so notifications leave in the order told.
    """
    if not wants_progress(ctx):
        return None

    def tell(done: int, total: int, message: str) -> None:
        anyio.from_thread.run(ctx.report_progress, done, total, message)

    return tell
