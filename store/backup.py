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
#: In a copy while it is being made: a copy whose process was killed midway is no memory
#: (``unfinished``), and the next backup into it starts again.
UNFINISHED = ".doxa-backup-unfinished"


def unfinished(data_dir: Path) -> bool:
    """Whether ``data_dir`` is a backup that stopped midway."""
    return (data_dir / UNFINISHED).exists()


def copy_data_dir(source: Path, target: Path) -> dict[str, Any]:
    """Copy ``source`` into ``target`` (absent, empty, or a copy that stopped midway).
    Returns the target, the number of files and their bytes. A copy that fails is taken
    away again.

    Raises:
        InvalidInput: ``target`` holds files already, or lies inside ``source``.
    """
    source, target = source.resolve(), target.resolve()
    if target == source or source in target.parents:
        raise InvalidInput("target", f"{target} lies inside the data directory; choose another")
    if target.exists() and not target.is_dir():
        raise InvalidInput("target", f"{target} is a file; give a new or empty directory")
    if target.exists() and any(target.iterdir()):
        if not unfinished(target):
            raise InvalidInput("target", f"{target} is not empty; give a new or empty directory")
        shutil.rmtree(target)  # its process was killed midway (as the owner of a memory can be)
    target.mkdir(parents=True, exist_ok=True)
    (target / UNFINISHED).touch()
    try:
        shutil.copytree(
            source, target, ignore=shutil.ignore_patterns(*_SKIPPED), dirs_exist_ok=True
        )
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    (target / UNFINISHED).unlink()
    files = [p for p in target.rglob("*") if p.is_file()]
    return {
        "target": str(target),
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
    }
