"""``doxa token create|list|revoke``: the bearer tokens of a data directory.

``create`` prints the secret alone on stdout (``TOKEN=$(doxa token create --agent scout)``)
and what it is on stderr; it is never shown again. ``list`` never prints a secret.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from doxa.server.settings import Settings
from doxa.server.tokens import TokenFileError, TokenRecord, TokenStore
from doxa.store.drafts import name
from doxa.store.errors import InvalidInput


def token_command(settings: Settings, args: argparse.Namespace) -> int:
    """Run ``doxa token <args.token_command>``; returns the exit code (1: no such token, or
    neither a memory nor tokens in the data directory; 2: a bad value or an unreadable token
    file)."""
    store = TokenStore(Path(settings.store.data_dir))
    if args.token_command != "create" and _nothing_there(store):
        # "no tokens in typo/tokens.json", exit 0, read as a memory without tokens.
        print(
            f"doxa token {args.token_command}: no memory and no tokens in {store.path.parent};"
            " check --data-dir (or DOXA_DATA_DIR)",
            file=sys.stderr,
        )
        return 1
    try:
        if args.token_command == "create":
            return _create(store, args)
        if args.token_command == "list":
            return _list(store, args.json)
        return _revoke(store, args.id, args.json)
    except TokenFileError as error:
        print(f"doxa: {error}", file=sys.stderr)
        return 2


def _nothing_there(store: TokenStore) -> bool:
    """Whether the data directory holds neither a memory nor a token file (one that held
    tokens keeps its file, emptied, after the last is revoked; tokens may come before a
    memory's first start)."""
    return not store.path.exists() and not (store.path.parent / "graph").exists()


def _public(record: TokenRecord) -> dict[str, Any]:
    """A record as shown: everything but the hash (which only identifies, but is not for
    showing either)."""
    shown = asdict(record)
    del shown["sha256"]
    return shown


def _create(store: TokenStore, args: argparse.Namespace) -> int:
    try:
        agent = name(args.agent, "--agent")
    except InvalidInput as error:
        print(f"doxa: {error}", file=sys.stderr)
        return 2
    assert agent is not None
    record, secret = store.create(agent, read_only=args.read_only, admin=args.admin)
    if args.json:
        print(json.dumps({**_public(record), "token": secret}, indent=2))
    else:
        print(secret)
    print(
        f"doxa: created token {record.id} for agent {record.agent!r} ({record.flags}) in"
        f" {store.path}. It is shown only now; send it as `Authorization: Bearer <token>`."
        f" Revoke it with `doxa token revoke {record.id}`.",
        file=sys.stderr,
    )
    if not (store.path.parent / "graph").exists():
        # Tokens come before a first start, but a mistyped --data-dir is as likely.
        print(
            f"doxa: note: {store.path.parent} holds no memory yet; the token is for a server"
            " started with this --data-dir",
            file=sys.stderr,
        )
    return 0


def _list(store: TokenStore, as_json: bool) -> int:
    records = store.records()
    if as_json:
        print(json.dumps([_public(r) for r in records], indent=2))
        return 0
    if not records:
        print(f"no tokens in {store.path}", file=sys.stderr)
        return 0
    rows = [("ID", "AGENT", "FLAGS", "CREATED", "LAST USED")]
    rows += [(r.id, r.agent, r.flags, r.created, r.last_used or "never") for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)]
        print("  ".join([*cells, row[-1]]))
    return 0


def _revoke(store: TokenStore, token_id: str, as_json: bool) -> int:
    revoked = store.revoke(token_id.strip())
    if revoked is None:
        print(
            f"doxa: no token with id {token_id!r} in {store.path}; `doxa token list` shows them",
            file=sys.stderr,
        )
        return 1
    if as_json:
        print(json.dumps(_public(revoked), indent=2))
    else:
        print(f"revoked {revoked.id} (agent {revoked.agent!r}); servers refuse it from now on")
    return 0
