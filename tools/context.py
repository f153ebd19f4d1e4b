"""What every tool needs: the memory from the server's lifespan, and calling it off the event
loop with store errors turned into tool errors the model can read and act on."""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BeforeValidator, StrictFloat, StrictInt, StrictStr, WithJsonSchema

from doxa.store.errors import MemoryStoreError
from doxa.store.settings import StoreSettings
from doxa.store.sharing import SharedMemory
from doxa.store.values import decimal_text

if TYPE_CHECKING:
    from doxa.store.memory import Memory

T = TypeVar("T")

log = logging.getLogger(__name__)

#: A confidence or weight as a client sends it: a string or a JSON number, never a boolean
#: (strict, so JSON ``true`` is refused instead of becoming 1). The schema says it in one
#: type list instead of three branches (a JSON integer is a number).
DecimalInput = Annotated[
    StrictStr | StrictInt | StrictFloat, WithJsonSchema({"type": ["string", "number"]})
]


def _whole(value: object) -> object:
    """5.0 is the whole number 5 (a JSON Schema ``integer``: clients that hold numbers as
    floats send it so); another value is left for the strict check to judge."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: A JSON number literal, as ``server.exact`` passes one a float cannot carry.
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _number(value: object) -> object:
    """A JSON number too precise for a float reaches a tool as its text (``server.exact``,
    for the exact decimals): where a float is all a parameter needs, it is that float. Other
    text ("30", "1_000") stays text, which the schema refuses."""
    if isinstance(value, str) and _JSON_NUMBER.fullmatch(value):
        number = float(value)
        if math.isfinite(number) and Decimal(value) != Decimal(repr(number)):
            return number
    return value


#: A count: a JSON integer (or a float without a fraction), never a boolean.
WholeNumber = Annotated[StrictInt, BeforeValidator(_whole)]
#: A JSON number, never a boolean; one type in the schema (a JSON integer is a number).
Number = Annotated[
    StrictInt | StrictFloat, BeforeValidator(_number), WithJsonSchema({"type": "number"})
]


class MemoryContext:
    """Lifespan state of the server: the memory of the data directory, shared with every
    other doxa process on it (``doxa.store.sharing``): owned by this process, or relayed.

    Importing the store (numpy, Kùzu, LanceDB, torch) and loading the model take seconds; a
    client's ``initialize`` and ``tools/list`` must not wait for them. Finding or taking the
    owner runs on a background thread; tool calls wait for it on a worker thread, never on
    the event loop.
    """

    def __init__(
        self,
        settings: StoreSettings,
        memory: Memory | None = None,
        may_own: bool = True,
        trains: bool = True,
    ) -> None:
        self.settings = settings
        self._given = memory
        self._may_own = may_own
        self._trains = trains  # False: a one-shot command (``SharedMemory``)
        self._shared: SharedMemory | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Open or reach the memory on a thread (returns at once; idempotent)."""
        with self._lock:
            if self._shared is None:
                self._shared = SharedMemory(self.settings, self._given, self._may_own, self._trains)
            self._shared.start()

    def memory(self) -> SharedMemory:
        """The memory, owned here or relayed (its calls wait until it answers)."""
        with self._lock:
            if self._shared is None:
                raise MemoryStoreError("the memory is not open; the server has not started")
            return self._shared

    def close(self) -> None:
        """Close the memory (or hang up on its owner); a later ``start`` opens it again.
        A memory given to the context is left open."""
        with self._lock:
            shared, self._shared = self._shared, None
        if shared is not None:
            shared.close()


def context_of(ctx: Context[Any]) -> MemoryContext:
    """The memory context of the server's lifespan."""
    state = ctx.request_context.lifespan_context
    if not isinstance(state, MemoryContext):
        raise ToolError("the memory is not open; the server was started without its lifespan")
    return state


async def call(
    ctx: Context[Any],
    operation: Callable[[SharedMemory], T],
    cancelled: threading.Event | None = None,
) -> T:
    """Run ``operation(memory)`` on a worker thread; store errors become ``ToolError``.

    With ``cancelled``, a cancelled request returns at once and sets it, for the operation
    to stop at its next step (``doxa.tools.progress.notifier``); without, it finishes first.
    """
    state = context_of(ctx)

    def run() -> T:
        return operation(state.memory())

    try:
        if cancelled is None:
            return await anyio.to_thread.run_sync(run)
        try:
            return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
    except MemoryStoreError as error:
        raise ToolError(str(error)) from None
    except Exception as error:
        # A bug or a driver failing in a way the store did not foresee: the model gets what
        # failed instead of the SDK's bare "Error executing tool", and the log the trace.
        log.exception("tool call failed")
        raise ToolError(
            f"the memory failed unexpectedly during this call ({type(error).__name__}:"
            f" {error}); try again, and if it keeps failing run `doxa check`"
        ) from None


def exact(value: Decimal | str | None) -> str | None:
    """An exact decimal as text without trailing zeros ("0.800000000000000000" -> "0.8")."""
    if value is None:
        return None
    return decimal_text(Decimal(value) if isinstance(value, str) else value)
