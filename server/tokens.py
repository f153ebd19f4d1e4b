"""Bearer tokens for the HTTP and SSE transports, kept hashed in the data directory.

``tokens.json`` (mode 0600) lists each token's id, agent, flags, creation time, last use and
the SHA-256 of its secret. The secret (256 random bits) is shown once, by ``doxa token
create``, and never stored: a copy of the file lets nobody in. The file lives beside the memory
so that the tokens hold for whichever process serves the directory, and every change is
written whole to a temporary file and renamed over it, under an ``flock`` on ``tokens.lock``,
so a reader never sees half a file and two writers never lose each other's change.

A server looks at the file's ``stat`` on each request (microseconds) and reads it again only
when it changed: a token created or revoked while the server runs counts from the next request.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import logging
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

TOKENS_FILE = "tokens.json"
LOCK_FILE = "tokens.lock"
#: Every secret starts with this, so a leaked one is recognisable (secret scanners, logs).
SECRET_PREFIX = "doxa_"
#: A token's last use is written at most this often (seconds) by one process: recording
#: every request would rewrite the file, and make every server read it again, all the time.
LAST_USED_EVERY_S = 60.0
#: Longer presented tokens are refused unread (ours are 48 characters).
MAX_SECRET = 256
_VERSION = 1


class TokenFileError(Exception):
    """``tokens.json`` cannot be read or written; the message names the file and the fix."""


@dataclass(frozen=True)
class TokenRecord:
    """One token as stored: everything but its secret.

    Attributes:
        id: what ``doxa token list`` shows and ``doxa token revoke`` takes (``tok_…``).
        agent: the agent every call made with the token acts as.
        read_only: the token may only read (recall, find_conflicts, cite_evidence).
        admin: the token may forget observations other agents believe.
        created: when it was created (ISO 8601, UTC).
        sha256: hex SHA-256 of the secret.
        last_used: when a server last accepted it (ISO 8601, UTC; to the minute or so).
    """

    id: str
    agent: str
    read_only: bool
    admin: bool
    created: str
    sha256: str
    last_used: str | None = None

    @property
    def flags(self) -> str:
        """``read-only``, ``admin`` or ``read-write``."""
        return "read-only" if self.read_only else "admin" if self.admin else "read-write"


def digest(secret: str) -> str:
    """The hex SHA-256 of a secret, as stored."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class TokenStore:
    """The tokens of one data directory.

    Args:
        data_dir: the memory's directory; ``tokens.json`` lives there.
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir).expanduser() / TOKENS_FILE
        self._lock_path = self.path.with_name(LOCK_FILE)
        self._guard = threading.Lock()
        self._seen: tuple[int, ...] | None = None
        self._records: list[TokenRecord] = []
        self._broken: str | None = None
        self._noted: dict[str, float] = {}  # token id -> monotonic time its use was written

    # ---- reading ------------------------------------------------------------------------

    def records(self) -> list[TokenRecord]:
        """Every token, oldest first, as the file holds them now.

        Raises:
            TokenFileError: the file is unreadable or malformed.
        """
        self._refresh()
        with self._guard:
            if self._broken is not None:
                raise TokenFileError(self._broken)
            return list(self._records)

    def in_use(self) -> bool:
        """True once a token was created here: the file exists, even with every token
        revoked (revoking the last one must not open the server to anyone), or it cannot be
        read (then nobody gets in until it is fixed: failing open would turn a damaged file
        into no authentication)."""
        self._refresh()
        with self._guard:
            return self._broken is not None or self._seen is not None

    def verify(self, secret: str) -> TokenRecord | None:
        """The token whose secret this is, or None (also when the file cannot be read)."""
        self._refresh()
        if not secret or len(secret) > MAX_SECRET:
            return None
        presented = digest(secret)
        with self._guard:
            records = self._records
        found = None
        # Every record is compared, in constant time, so the answer's timing says nothing
        # about how much of a hash matched nor where the token is in the list.
        for record in records:
            if hmac.compare_digest(record.sha256, presented):
                found = record
        return found

    def due_for_use_note(self, record: TokenRecord) -> bool:
        """True when ``note_used`` should record this use (at most once a minute per token)."""
        now = time.monotonic()
        with self._guard:
            last = self._noted.get(record.id)
            if last is not None and now - last < LAST_USED_EVERY_S:
                return False
            self._noted[record.id] = now
            return True

    def _refresh(self) -> None:
        """Read the file again if it changed since it was last read (one ``stat`` if not)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            with self._guard:
                self._seen, self._records, self._broken = None, [], None
            return
        except OSError as error:
            self._fail(f"cannot read {self.path}: {error}")
            return
        # A rename gives a new inode; size and times catch an edit in place.
        seen = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        with self._guard:
            if seen == self._seen:
                return
        try:
            records = self._load()
        except TokenFileError as error:
            self._fail(str(error))
            return
        with self._guard:
            self._seen, self._records, self._broken = seen, records, None

    def _fail(self, problem: str) -> None:
        with self._guard:
            if self._broken != problem:
                log.error("%s; no token is accepted until it is fixed", problem)
            self._seen, self._records, self._broken = None, [], problem

    def _load(self) -> list[TokenRecord]:
        try:
            kept = self.path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as error:
            raise TokenFileError(f"cannot read {self.path}: {error}") from None
        try:
            data = json.loads(kept)  # bytes that are no UTF-8: a ValueError too
            if not isinstance(data, dict) or data.get("version") != _VERSION:
                raise ValueError(f"expected an object with version {_VERSION}")
            return [_record(item) for item in data["tokens"]]
        except (ValueError, KeyError, TypeError) as error:
            raise TokenFileError(
                f"{self.path} is not a valid token file ({error}); fix it, or delete it and"
                " create the tokens again with `doxa token create`"
            ) from None

    # ---- changing -----------------------------------------------------------------------

    def create(
        self, agent: str, read_only: bool = False, admin: bool = False
    ) -> tuple[TokenRecord, str]:
        """A new token for ``agent``; returns its record and its secret (shown once).

        Raises:
            ValueError: both ``read_only`` and ``admin``.
            TokenFileError: the file cannot be read or written.
        """
        if read_only and admin:
            raise ValueError("a token is either read-only or admin, not both")
        secret = SECRET_PREFIX + secrets.token_urlsafe(32)
        with self._locked():
            records = self._load()
            taken = {r.id for r in records}
            token_id = _new_id(taken)
            record = TokenRecord(token_id, agent, read_only, admin, _now(), digest(secret))
            self._write([*records, record])
        return record, secret

    def revoke(self, token_id: str) -> TokenRecord | None:
        """Delete the token ``token_id``; returns it, or None if there is no such token.

        Raises:
            TokenFileError: the file cannot be read or written.
        """
        with self._locked():
            records = self._load()
            kept = [r for r in records if r.id != token_id]
            if len(kept) == len(records):
                return None
            self._write(kept)
        return next(r for r in records if r.id == token_id)

    def note_used(self, token_id: str) -> None:
        """Record that a server accepted the token now (blocking: call it off the event loop).
        A failure is logged, never raised: it must not turn an accepted request away."""
        try:
            with self._locked():
                records = self._load()
                now = _now()
                updated = [replace(r, last_used=now) if r.id == token_id else r for r in records]
                if updated != records:
                    self._write(updated)
        except (OSError, TokenFileError) as error:
            log.warning("could not record the use of token %s: %s", token_id, error)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as error:
            raise TokenFileError(f"cannot lock {self._lock_path}: {error}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    def _write(self, records: list[TokenRecord]) -> None:
        data = {"version": _VERSION, "tokens": [asdict(r) for r in records]}
        # mkstemp creates the file 0600, before anything is written to it, and the rename
        # keeps that mode: the hashes are never readable by others, not even for a moment.
        fd, temporary = tempfile.mkstemp(prefix=".tokens.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=2)
                out.write("\n")
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        with contextlib.suppress(OSError):  # the rename itself survives a crash too
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)


def _new_id(taken: set[str]) -> str:
    while True:
        token_id = "tok_" + secrets.token_hex(4)
        if token_id not in taken:
            return token_id


def _record(item: Any) -> TokenRecord:
    if not isinstance(item, dict):
        raise TypeError("each token must be an object")
    record = TokenRecord(
        id=item["id"],
        agent=item["agent"],
        read_only=item["read_only"],
        admin=item["admin"],
        created=item["created"],
        sha256=item["sha256"],
        last_used=item.get("last_used"),
    )
    if not all(isinstance(v, str) for v in (record.id, record.agent, record.sha256)):
        raise TypeError("id, agent and sha256 must be strings")
    if not all(isinstance(v, bool) for v in (record.read_only, record.admin)):
        raise TypeError("read_only and admin must be true or false")
    return record
