"""``doxa export --judgements FILE``: every judged recall result, one JSON object a line.

Each line: ``recall_id``, ``query``, ``agent``, ``judged_at`` (ISO 8601), ``result_id``,
``text``, ``judgement`` ("accepted" or "rejected"), ``rank`` (0 = first), ``score`` and
``features`` (the ranker's features when it was recalled: the ranking's components, ``base``,
and the judged-query links; see ``doxa.store.learning``). The examples the memory's ranker is
trained on, for training others.

It reaches the memory as ``doxa prune`` does (``doxa.store.sharing``): it opens the data
directory when no server holds it, and asks the server that does otherwise.

``-`` writes them to standard output, and says how many on stderr.

Exit codes: 0 written, 1 the memory could not be opened or reached, or the file not written.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from doxa.server.settings import Settings
from doxa.server.tool_commands import counted
from doxa.store.errors import MemoryStoreError
from doxa.store.values import iso


def judgement_line(row: dict[str, Any]) -> str:
    """One judged result as a JSON line (``Memory.judgements``' dict, time as ISO 8601)."""
    return json.dumps(row | {"judged_at": iso(row["judged_at"])}, ensure_ascii=False)


def judgements_command(
    settings: Settings, path: Path, as_json: bool = False, summary: TextIO | None = None
) -> int:
    """Write the judgements of the configured data directory to ``path`` (``-``: standard
    output); say how many, in words or (``as_json``) as JSON, on ``summary`` (default:
    stdout, or stderr when the judgements go there)."""
    said = write_judgements(settings, path)
    if said is None:
        return 1
    say_judgements(said, as_json, summary or (sys.stderr if str(path) == "-" else sys.stdout))
    return 0


def write_judgements(settings: Settings, path: Path) -> dict[str, Any] | None:
    """Write the judgements to ``path`` (``-``: standard output). Returns what was written
    (``file``, ``judged_results``, ``recalls``), or None, having said why on stderr."""
    from doxa.store.sharing import SharedMemory

    shared = SharedMemory(settings.store, trains=False)
    try:
        rows = shared.judgements()
    except MemoryStoreError as error:
        print(f"doxa export: {error}", file=sys.stderr)
        return None
    finally:
        shared.close()
    if str(path) == "-":
        for row in rows:
            sys.stdout.write(judgement_line(row) + "\n")
        sys.stdout.flush()
    elif not _written(rows, path):
        return None
    recalls = len({r["recall_id"] for r in rows})
    return {"file": str(path), "judged_results": len(rows), "recalls": recalls}


def say_judgements(said: dict[str, Any], as_json: bool, summary: TextIO) -> None:
    """Say what ``write_judgements`` wrote, in words or as JSON, on ``summary``."""
    if as_json:
        print(json.dumps(said), file=summary)
        return
    where = "standard output" if said["file"] == "-" else said["file"]
    n, recalls = said["judged_results"], said["recalls"]
    judged = f"{counted(n, 'judged result')} of {counted(recalls, 'recall')}"
    print(f"wrote {judged} to {where}", file=summary)


def _written(rows: list[dict[str, Any]], path: Path) -> bool:
    """Write ``rows`` to ``path`` whole or not at all; False, having said why, when not."""
    partial = path.with_name(path.name + ".partial")
    try:
        with open(partial, "w", encoding="utf-8") as out:
            for row in rows:
                out.write(judgement_line(row) + "\n")
        os.replace(partial, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            partial.unlink()
        print(f"doxa export: cannot write {path}: {error}", file=sys.stderr)
        return False
    return True
