"""``doxa export --judgements FILE``: every judged recall result, one JSON object a line.

Each line: ``recall_id``, ``query``, ``agent``, ``judged_at`` (ISO 8601), ``result_id``,
``text``, ``judgement`` ("accepted" or "rejected"), ``rank`` (0 = first), ``score`` and
``features`` (the ranker's features when it was recalled: the ranking's components, ``base``,
and the judged-query links; see ``doxa.store.learning``). The examples the memory's ranker is
trained on, for training others.

It reaches the memory as ``doxa prune`` does (``doxa.store.sharing``): it opens the data
directory when no server holds it, and asks the server that does otherwise.

Exit codes: 0 written, 1 the memory could not be opened or reached, or the file not written.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from doxa.server.settings import Settings
from doxa.store.errors import MemoryStoreError
from doxa.store.values import iso


def judgement_line(row: dict[str, Any]) -> str:
    """One judged result as a JSON line (``Memory.judgements``' dict, time as ISO 8601)."""
    return json.dumps(row | {"judged_at": iso(row["judged_at"])}, ensure_ascii=False)


def judgements_command(settings: Settings, path: Path, as_json: bool = False) -> int:
    """Write the judgements of the configured data directory to ``path``; say how many, in
    words or (``as_json``) as JSON."""
    from doxa.store.sharing import SharedMemory

    shared = SharedMemory(settings.store)
    try:
        rows = shared.judgements()
    except MemoryStoreError as error:
        print(f"doxa export: {error}", file=sys.stderr)
        return 1
    finally:
        shared.close()
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
        return 1
    recalls = len({r["recall_id"] for r in rows})
    if as_json:
        print(json.dumps({"file": str(path), "judged_results": len(rows), "recalls": recalls}))
    else:
        print(f"wrote {len(rows)} judged results of {recalls} recalls to {path}")
    return 0
