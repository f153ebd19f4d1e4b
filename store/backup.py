"""A copy of a data directory that opens as the memory was when it was taken.

``Memory.backup`` calls it with writers held off and the graph checkpointed (its
write-ahead log folded in), after the search index's queued rows were written; the copy is
then a consistent pair of stores. Should the index still lag the graph, the copy's first
start repairs it from the graph, as after a crash.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from doxa.store.errors import InvalidInput

#: What belongs to the running process, not to the memory.
_SKIPPED = ("owner.lock", "doxa.sock", "*.part")


def copy_data_dir(source: Path, target: Path) -> dict[str, Any]:
    """Copy ``source`` into ``target`` (absent or empty). Returns the target, the number of
    files and their bytes.

    Raises:
        InvalidInput: ``target`` holds files already, or lies inside ``source``.
    """
    source, target = source.resolve(), target.resolve()
    if target == source or source in target.parents:
        raise InvalidInput("target", f"{target} lies inside the data directory; choose another")
    if target.exists() and any(target.iterdir()):
        raise InvalidInput("target", f"{target} is not empty; give a new or empty directory")
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*_SKIPPED), dirs_exist_ok=True)
    files = [p for p in target.rglob("*") if p.is_file()]
    return {
        "target": str(target),
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
    }
