"""What every tool needs: the memory from the server's lifespan, and calling it off the event
loop with store errors turned into tool errors the model can read and act on."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import StrictFloat, StrictInt, StrictStr

from doxa.store.errors import MemoryStoreError
from doxa.store.settings import StoreSettings
from doxa.store.values import decimal_text

if TYPE_CHECKING:
    from doxa.store.memory import Memory

T = TypeVar("T")

log = logging.getLogger(__name__)

#: A confidence or weight as a client sends it: a string or a JSON number, never a boolean
#: (strict, so JSON ``true`` is refused instead of becoming 1).
DecimalInput = StrictStr | StrictInt | StrictFloat


class MemoryContext:
    """Lifespan state of the server: the memory, opened on a background thread.

    Importing the store (numpy, Kùzu, LanceDB, torch) and loading the model take seconds; a
    client's ``initialize`` and ``tools/list`` must not wait for them. Tool calls do, on a
    worker thread, never on the event loop.
    """

    def __init__(self, settings: StoreSettings, memory: Memory | None = None) -> None:
        self.settings = settings
        self._given = memory
        self._memory = memory
        self._opened = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        """Open the memory and warm it up on a thread (returns at once; idempotent)."""
        with self._lock:
            if self._started:
                return
            self._started = True
            if self._memory is not None:
                self._memory.start()
                self._opened.set()
                return
            self._thread = threading.Thread(target=self._open, name="doxa-open", daemon=True)
            self._thread.start()

    def _open(self) -> None:
        try:
            from doxa.store.memory import Memory

            self._memory = Memory.open(self.settings)
        except BaseException as error:  # surfaced to every tool call
            self._error = error
        finally:
            self._opened.set()
        if self._memory is not None:
            self._memory.start()

    def memory(self) -> Memory:
        """The memory (blocks until it exists; call from a worker thread)."""
        self._opened.wait()
        if self._memory is None:
            raise MemoryStoreError(f"the memory could not be opened: {self._error}")
        return self._memory

    def close(self) -> None:
        """Close the memory if this context opened it; a later ``start`` opens it again."""
        with self._lock:
            if self._thread is not None:
                self._thread.join()
                self._thread = None
            if self._given is None and self._memory is not None:
                self._memory.close()
                self._memory = None
                self._opened.clear()
            self._started = False


def context_of(ctx: Context[Any]) -> MemoryContext:
    """The memory context of the server's lifespan."""
    state = ctx.request_context.lifespan_context
    if not isinstance(state, MemoryContext):
        raise ToolError("the memory is not open; the server was started without its lifespan")
    return state


async def call(ctx: Context[Any], operation: Callable[[Memory], T]) -> T:
    """Run ``operation(memory)`` on a worker thread; store errors become ``ToolError``."""
    state = context_of(ctx)

    def run() -> T:
        return operation(state.memory())

    try:
        return await anyio.to_thread.run_sync(run)
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
