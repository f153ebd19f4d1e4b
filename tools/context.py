"""What every tool needs: the memory from the server's lifespan, and calling it off the event
loop with store errors turned into tool errors the model can read and act on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread
from doxa.store import Memory, MemoryStoreError
from doxa.store.values import decimal_text, iso
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

T = TypeVar("T")


@dataclass(frozen=True)
class MemoryContext:
    """Lifespan state of the server: the open memory."""

    memory: Memory


def memory_of(ctx: Context[Any]) -> Memory:
    """The memory opened by the server's lifespan."""
    state = ctx.request_context.lifespan_context
    if not isinstance(state, MemoryContext):
        raise ToolError("the memory is not open; the server was started without its lifespan")
    return state.memory


async def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a store call on a worker thread; store errors become ``ToolError``."""
    try:
        return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))
    except MemoryStoreError as error:
        raise ToolError(str(error)) from None


def when(moment: datetime | None) -> str | None:
    """A time as ISO 8601 UTC text."""
    return iso(moment)


def exact(value: Decimal | str | None) -> str | None:
    """An exact decimal as text without trailing zeros ("0.800000000000000000" -> "0.8")."""
    if value is None:
        return None
    return decimal_text(Decimal(value) if isinstance(value, str) else value)
