"""Errors raised by the memory store.

    MemoryStoreError (base; never raised itself)
    ├── InvalidInput      a value given by the caller is wrong; nothing was written
    ├── NotFound          an id names nothing in the memory
    ├── SchemaMismatch    the data directory was written by another or altered schema
    ├── StorageError      a database failed during an operation; nothing of it was written
    ├── DamagedStore      the data directory cannot be opened without losing what it holds
    ├── OwnerLost         the process owning the memory exited during a call (retryable)
    └── OwnerStopped      the process owning the memory is stopped (suspended): resume it

Each error carries its data as attributes so callers (the MCP tools, the CLI) can show the
field and the fix without parsing the message, and pickles with them (``__reduce__``), so it
crosses the relay between processes (``doxa.store.relay``) intact.
"""

from __future__ import annotations


class MemoryStoreError(Exception):
    """Base class of every error the store raises on purpose."""


class InvalidInput(MemoryStoreError):
    """A caller-supplied value is invalid. Nothing was written.

    Attributes:
        field: dotted path of the offending field (``"memories[2].confidence"``).
        problem: what is wrong and how to fix it.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field} {problem}")

    def __reduce__(self) -> tuple[type[InvalidInput], tuple[str, str]]:
        return (type(self), (self.field, self.problem))

    def within(self, prefix: str) -> InvalidInput:
        """Return the same error with its field nested under ``prefix``."""
        return InvalidInput(f"{prefix}.{self.field}", self.problem)


#: The prefix of each kind of id the memory gives.
_PREFIXES = {"obs_": "observation", "bel_": "belief", "rec_": "recall"}


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


class NotFound(MemoryStoreError):
    """An id given by the caller names no observation, belief or recall.

    Attributes:
        field: the parameter that held the id.
        kind: what was looked for (``"observation"``, ``"belief"``, ``"recall"``).
        id: the id that was not found.
        retracted: it names one that was retracted (a belief: in a retracted observation),
            which nothing new may refer to.
    """

    def __init__(self, field: str, kind: str, id: str, retracted: bool = False) -> None:
        self.field = field
        self.kind = kind
        self.id = id
        self.retracted = retracted
        # Recall ids come from recall alone; the others from remember and recall.
        source = "recall" if kind == "recall" else "remember or recall"
        if retracted:
            where = "is in a retracted observation" if kind == "belief" else "was retracted"
            super().__init__(f"{field}: the {kind} {id!r} {where}; name one still held")
            return
        # An id of another kind (a belief id where an observation's is wanted: remember
        # answers both) is named as such, with the kind wanted.
        other = next((k for p, k in _PREFIXES.items() if id.startswith(p)), None)
        if other is not None and other not in kind:
            wanted = " or ".join(f"{k} id ({p}…)" for p, k in _PREFIXES.items() if k in kind)
            message = f"{id!r} is {_article(other)} {other} id, not {_article(kind)} {wanted}"
            super().__init__(f"{field}: {message}; use one returned by {source}")
        else:
            super().__init__(f"{field}: no {kind} with id {id!r}; use an id returned by {source}")

    def __reduce__(self) -> tuple[type[NotFound], tuple[str, str, str, bool]]:
        return (type(self), (self.field, self.kind, self.id, self.retracted))


class SchemaMismatch(MemoryStoreError):
    """The data directory does not match the schema this version of doxa writes.

    Attributes:
        issues: one line per difference found.
    """

    def __init__(self, issues: list[str]) -> None:
        self.issues = issues
        super().__init__(
            "the memory store's schema does not match this version of doxa: "
            + "; ".join(issues)
            + ". Export it with the doxa version that wrote it (doxa export FILE) and import"
            " the file with this one into a new directory (doxa import FILE --data-dir NEW), or"
            " point --data-dir at a new directory."
        )

    def __reduce__(self) -> tuple[type[SchemaMismatch], tuple[list[str]]]:
        return (type(self), (self.issues,))


class StorageError(MemoryStoreError):
    """A database failed during an operation; what that operation wrote was rolled back.

    Attributes:
        operation: what the memory was doing (``"feedback"``, ``"reading evidence"``…).
        detail: the database's own message.
    """

    def __init__(self, operation: str, detail: str) -> None:
        self.operation = operation
        self.detail = detail
        super().__init__(
            f"the memory's graph database failed during {operation}: {detail.rstrip('. ')}."
            " Nothing of"
            " it was written; try again, and if it keeps failing run `doxa check`"
        )

    def __reduce__(self) -> tuple[type[StorageError], tuple[str, str]]:
        return (type(self), (self.operation, self.detail))


class DamagedStore(MemoryStoreError):
    """The data directory is damaged in a way that opening it would make worse.

    Attributes:
        path: the data directory.
        problem: what was found.
        remedy: what to do about it.
    """

    def __init__(self, path: str, problem: str, remedy: str) -> None:
        self.path = path
        self.problem = problem
        self.remedy = remedy
        super().__init__(f"the memory in {path} was not opened: {problem}. {remedy}")

    def __reduce__(self) -> tuple[type[DamagedStore], tuple[str, str, str]]:
        return (type(self), (self.path, self.problem, self.remedy))


class NotPermitted(MemoryStoreError):
    """The operating system refuses this user the memory's files (permissions, attributes, a
    read-only mount): sound, and nothing to restore from a backup."""


class MemoryInUse(MemoryStoreError):
    """Another process has the graph open (Kùzu allows one): a server serving the memory."""


class OwnerLost(MemoryStoreError):
    """The process that owned the memory exited while it ran this call, before answering;
    another process has taken over. Retrying is safe: a write is never applied twice."""

    def __init__(self, operation: str) -> None:
        self.operation = operation
        super().__init__(
            f"the process that owned the memory exited during this {operation}, before"
            " answering; another has taken over. Retry the call: if it had been applied,"
            " remember answers with duplicate_of, feedback says the recall was already judged"
            " and forget says already"
        )

    def __reduce__(self) -> tuple[type[OwnerLost], tuple[str]]:
        return (type(self), (self.operation,))


class OwnerStopped(MemoryStoreError):
    """The process that owns the memory is stopped (Ctrl-Z, ``kill -STOP``, a debugger), so
    a call relayed to it would wait until it runs again. It may run this call when resumed:
    retrying then is safe, a write is never applied twice."""

    def __init__(self, operation: str, pid: str) -> None:
        self.operation = operation
        self.pid = pid
        super().__init__(
            f"the process that owns the memory (pid {pid}) is stopped (suspended with Ctrl-Z"
            f" or kill -STOP) and cannot answer this {operation}; resume it (fg, or kill -CONT"
            f" {pid}) and retry the call: a write it had received is applied when it resumes,"
            " and a retried one is not applied twice"
        )

    def __reduce__(self) -> tuple[type[OwnerStopped], tuple[str, str]]:
        return (type(self), (self.operation, self.pid))


class MessageTooLarge(MemoryStoreError):
    """A call, or its answer, too large to relay between the memory's owner and a process
    relaying to it (``relay._MAX_MESSAGE``): the other end would hang up on it unread."""
