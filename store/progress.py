"""Progress of a long operation, told to whoever asked as it goes: a remember of many
memories, an import. The store knows nothing of who listens (an MCP client's progress
notifications, a command line's counter); it calls the hook it was given."""

from __future__ import annotations

from typing import Protocol

#: The steps ``remember`` tells its progress in: received (0), checked (1), written (2).
REMEMBER_STEPS = 2


class Progress(Protocol):
    """Told how far an operation has come: ``done`` of ``total`` units (the same units
    throughout one operation, ``done`` never decreasing), and what it is doing."""

    def __call__(self, done: int, total: int, message: str) -> None: ...


def unheard(done: int, total: int, message: str) -> None:
    """The hook of an operation nobody watches."""
