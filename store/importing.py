"""Reading an export file (``doxa.store.exporting``) into the memory of a data directory.

The import writes the graph directly, so it needs the directory to itself: it takes the
ownership lock (``doxa.store.sharing``) and refuses while a server owns the directory (a
running server's working memory would not see the imported objects). Once the graph has
committed, the memory is opened once: its start-up embeds the imported observations with
this directory's model and fills the search index, as after a crash (but as expected
work, logged at INFO: an export keeps no vectors).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from doxa.store.errors import MemoryStoreError
from doxa.store.exporting import (
    PRUNED,
    Imported,
    Parsed,
    Progress,
    parse_export,
    write_import,
)
from doxa.store.pruning import AuditLog
from doxa.store.settings import StoreSettings
from doxa.store.sharing import Ownership

#: How long the import waits for the imported observations to be embedded and indexed.
INDEX_WAIT_S = 3600.0

#: In a new memory while an import fills it: one whose process was killed midway is no
#: memory (``unfinished``; its graph held nothing, or a part, and was called healthy), and
#: the next import into it starts again. It names what the directory held before (JSON), which
#: starting again leaves alone.
UNFINISHED = ".doxa-import-unfinished"


def unfinished(data_dir: Path) -> bool:
    """Whether ``data_dir`` is a new memory whose import stopped midway."""
    return (data_dir / UNFINISHED).exists()


def cut_off_import(data_dir: Path) -> str:
    """What to say of a data directory whose import stopped midway (``unfinished``)."""
    return (
        f"{data_dir} is a new memory whose import stopped midway: it is no memory; import"
        " the file into it again (or delete the directory)"
    )


#: Graph page cache an import reserves per object of its file, beyond the settings' own:
#: Kùzu keeps a transaction's pages in the pool, and the file is one transaction (measured:
#: 120,000 objects overflowed 64 MiB, 600,000 overflowed 256 MiB; this is 4 times that).
POOL_BYTES_PER_OBJECT = 2048


def page_cache_bytes(buffer_pool_mb: int, objects: int) -> int:
    """The graph's page cache for importing ``objects`` in one transaction: the configured
    one, or more for a large file (``POOL_BYTES_PER_OBJECT``)."""
    return max(buffer_pool_mb << 20, objects * POOL_BYTES_PER_OBJECT)


def import_file(
    settings: StoreSettings, path: Path, progress: Progress | None = None, name: str | None = None
) -> Imported:
    """Read ``path`` (named ``name`` in messages; default: its path) into the memory of
    ``settings.data_dir`` (created if absent; removed again, with any parent the import
    created, if the import fails).

    Raises:
        ImportRefused: the file is bad (nothing was written).
        MemoryStoreError: a server owns the directory, or the memory failed.
    """
    say = progress or (lambda _: None)
    parsed = parse_export(path, name, settings.timezone)
    objects = f"{parsed.total} object{'s' * (parsed.total != 1)}"
    say(f"read {objects} from {path if name is None else name}")
    data_dir = Path(settings.data_dir).expanduser()
    created = _first_missing(data_dir)
    if unfinished(data_dir):
        _start_again(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    there = set(data_dir.iterdir())
    new = not (data_dir / "graph").exists()
    held = sorted(e.name for e in there) if new else None
    try:
        return _import_into(settings, data_dir, parsed, say, held)
    except BaseException:
        # Whatever failed (the check, the database, the memory's first start, an
        # interrupt): no half-written memory is left where there was none, and a directory
        # that held no memory keeps only what it held.
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        elif new:
            _remove_all_but(data_dir, {entry.name for entry in there}, ignore_errors=True)
        raise


def _start_again(data_dir: Path) -> None:
    """Take away what an import killed midway wrote into a new memory: all but what the
    directory held before it (``UNFINISHED`` names them; the user's own files stayed there)."""
    ownership = Ownership(data_dir)
    if not ownership.try_acquire():
        raise MemoryStoreError(f"a running doxa owns {data_dir}; stop it and import again")
    try:
        try:
            before = set(json.loads((data_dir / UNFINISHED).read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError) as error:
            raise MemoryStoreError(
                f"{data_dir} is a new memory whose import stopped midway, and what it held"
                f" before cannot be read ({error}); delete what the import wrote (graph,"
                " index) and the file .doxa-import-unfinished, then import again"
            ) from None
        _remove_all_but(data_dir, {UNFINISHED, "owner.lock", *before}, ignore_errors=False)
    finally:
        ownership.release()


def _remove_all_but(data_dir: Path, kept: set[str], ignore_errors: bool) -> None:
    """Take away every file and folder of ``data_dir`` not named in ``kept`` (``ignore_errors``:
    as much as can be, on a failure's way out; else any that stays raises)."""
    for entry in data_dir.iterdir():
        if entry.name not in kept:
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=ignore_errors)
            else:
                entry.unlink(missing_ok=ignore_errors)


def _first_missing(path: Path) -> Path | None:
    """The outermost of ``path`` and its parents that does not exist (None: it exists)."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing = folder
    return missing


def _import_into(
    settings: StoreSettings,
    data_dir: Path,
    parsed: Parsed,
    say: Progress,
    held: list[str] | None,
) -> Imported:
    """Write ``parsed`` into the graph of ``data_dir``, owned meanwhile, then open the memory
    once to embed and index what it brought. ``held``: for a new memory, what the directory
    held before, named in ``UNFINISHED`` until its graph has committed (what it lacks then a
    start embeds, as after a crash)."""
    from doxa.store.graph import Graph
    from doxa.store.memory import Memory

    ownership = Ownership(data_dir)
    if not ownership.try_acquire():
        raise MemoryStoreError(
            f"a running doxa owns {data_dir}; stop it and import again (an import writes"
            " the graph directly, which a running server would not see)"
        )
    try:
        pool = page_cache_bytes(settings.buffer_pool_mb, parsed.total)
        if held is not None:
            # Written whole or not at all: a marker cut short would name nothing kept.
            marker = data_dir / f"{UNFINISHED}.tmp"
            marker.write_text(json.dumps(held), encoding="utf-8")
            marker.replace(data_dir / UNFINISHED)
        graph = Graph(data_dir / "graph", buffer_pool_bytes=pool)
        try:
            done = write_import(graph, parsed, say)
        finally:
            graph.close()
        if held is not None:
            (data_dir / UNFINISHED).unlink()
        # After the graph: a reason shows only beside the retraction it names.
        added = AuditLog(data_dir).add(parsed.pruned)
        if added:
            done.created[PRUNED] = added
        if len(parsed.pruned) > added:
            done.skipped[PRUNED] = len(parsed.pruned) - added
        if done.created:
            # A file imported already brought nothing to embed: saying so came before the
            # line saying every object was skipped.
            say("embedding the imported observations for the search index")
        memory = Memory.open(settings, trains=False, imported=True)
        try:
            memory.warm_up()
            memory.settle(timeout=INDEX_WAIT_S)
        finally:
            memory.close()
    finally:
        ownership.release()
    return done
