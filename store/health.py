"""The health of a data directory, and the repair of what is derived in it.

``check`` opens both stores read-only and reports what each holds and where they disagree: it
changes nothing, and refuses nothing but a directory that another process holds. ``repair``
rebuilds the search index (derived: every text is in the graph) from the graph, and refuses
to when the graph is empty but the index is not, unless forced, because the index may then
hold the only copy of the texts.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from doxa.store import importing, schema
from doxa.store.backup import unfinished
from doxa.store.embedder import Embedder, are_embeddings, make_embedder
from doxa.store.errors import (
    DamagedStore,
    MemoryInUse,
    MemoryStoreError,
    NotPermitted,
    SchemaMismatch,
    StorageError,
)
from doxa.store.learning import MODEL_FILE, keeps_signs, load_model, passes
from doxa.store.settings import StoreSettings
from doxa.store.startup import cut_off_backup, refuse_if_graph_missing, usable_as_kept

if TYPE_CHECKING:  # lancedb loads with the index module: only when a check runs
    from doxa.store.index import SearchIndex

log = logging.getLogger(__name__)


@dataclass
class Health:
    """What ``check`` found in a data directory.

    Attributes:
        data_dir: the directory checked.
        graph: node counts per table, ``wal_bytes``, ``migrations_pending`` (the schema
            migrations the next start applies), ``unheld`` (observations nobody
            holds), ``judged_results`` (results feedback accepted or rejected: what the
            ranker learns from), ``one_sided_links`` (nodes whose links Kùzu reads
            differently from their two ends: damage) and ``judged_queries_to_embed``
            (judged queries whose vectors the next start embeds again:
            ``startup.usable_as_kept``); empty when the graph could not be opened.
        index: ``rows``, ``not_unit`` (vectors that are no embeddings) and ``foreign`` (1 when
            another embedder wrote it); empty when it could not be read.
        orphans: ``index_rows_unknown`` (rows of no current observation) and
            ``observations_unindexed`` (current observations without a row).
        ranker: the kept ranker's ``version``, ``active`` (1 when recall uses it),
            ``examples`` and ``other_model`` (1 when it learned from another embedding
            model's recalls: the next start sets it aside), ``below_settings`` (1 when its
            held-out check does not pass the learning settings now: the next start trains it
            again); and, when it was checked on
            held-out judged recalls, why it is used or not: ``held_out_recalls``, how many of
            them it ordered ``better`` and ``worse`` than the base ranking, and the share of
            their (accepted, rejected) pairs it and the base order right (``pairs_right``,
            ``base_pairs_right``). Empty when none is kept; ``damaged`` (1) alone when its
            file cannot be read as a model (a problem then says so).
        set_aside: after ``repair`` with ``set_aside_log``: ``folder`` (where the graph's
            write-ahead log was moved) and ``lost`` (observations the search index held that
            the graph as of its last checkpoint does not: their texts are in the folder's
            ``lost.jsonl``); empty otherwise.
        problems: one line each, with what to do; empty when healthy.
    """

    data_dir: str
    graph: dict[str, int] = field(default_factory=dict)
    index: dict[str, int] = field(default_factory=dict)
    orphans: dict[str, int] = field(default_factory=dict)
    ranker: dict[str, int | float] = field(default_factory=dict)
    set_aside: dict[str, str | int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        """True when nothing needs doing."""
        return not self.problems


def _held(data_dir: Path, command: str) -> MemoryInUse:
    """The refusal of a maintenance command on a directory a running server holds."""
    return MemoryInUse(
        f"the memory in {data_dir} is in use by another doxa process (a server, or a command"
        f" such as an import): {command} opens the graph itself, so let it finish or stop it,"
        f" and run doxa {command} again"
    )


_NO_GRAPH = "no graph: this directory holds no memory yet"

#: Opens argv[1] for writing and closes it; prints the reason and exits 1 when it cannot.
_OPENS_FOR_WRITING = (
    "import sys\n"
    "try:\n"
    "    open(sys.argv[1], 'r+b').close()\n"
    "except OSError as error:\n"
    "    print(error.strerror)\n"
    "    sys.exit(1)\n"
)


def _unwritable(data_dir: Path, graph_file: Path) -> str | None:
    """Why a server could not write the memory (the graph file, the directory, or its
    ``owner.lock``), or None. Nothing is changed: a child process opens the graph for
    writing and closes it, and nothing is created."""
    lock = data_dir / "owner.lock"
    if lock.exists() and not lock.is_file():
        return f"{lock} is not a file: no process can own the memory; remove it"
    # Opened in a child process: closing a descriptor of the file here would drop the lock
    # of a Kùzu database this process holds on it (POSIX record locks are per process).
    tried = subprocess.run(
        [sys.executable, "-c", _OPENS_FOR_WRITING, str(graph_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    if tried.returncode:
        reason = tried.stdout.strip() or f"exit status {tried.returncode}"
        return (
            f"the graph database ({graph_file.name}) cannot be opened for writing"
            f" ({reason}): no server can serve it; let this user write it and its directory"
        )
    if not os.access(data_dir, os.W_OK):
        return f"{data_dir} cannot be written by this user: no server can serve it"
    return None


def _owned_elsewhere(data_dir: Path) -> bool:
    """Whether a running doxa owns the directory (``owner.lock``). Kùzu's own lock on the
    graph is no proof: a process drops it when it closes any descriptor of the file (a
    server's backup copying the graph did), and repair then rebuilt the index under it."""
    from doxa.store.sharing import Ownership

    if not (data_dir / "owner.lock").exists():
        return False
    probe = Ownership(data_dir)
    try:
        if not probe.try_acquire():
            return True
    except OSError:  # a read-only directory (no process can own it), or a lock not a file
        return False
    probe.release()
    return False


def check(settings: StoreSettings) -> Health:
    """Inspect a data directory without changing it.

    Raises:
        MemoryStoreError: another process holds the directory (stop it, or ask it).
    """
    return _check(settings, owned_here=False)


def _check(settings: StoreSettings, owned_here: bool) -> Health:
    """``check``; ``owned_here``: this process holds the directory's ``owner.lock`` (a
    repair), so it is no other's."""
    from doxa.store.graph import (
        Graph,
        has_log,
        log_crashes,
        needs_writing_to_replay,
        replay_on_copy,
        wal_file,
    )

    data_dir = Path(settings.data_dir).expanduser()
    health = Health(str(data_dir))
    scratch: Path | None = None  # a copy of the graph, its log replayed
    embedder = make_embedder(settings.embedding)
    graph_file = data_dir / "graph"
    live: set[str] | None = None
    judged: dict[str, tuple[npt.NDArray[np.float32], str | None]] = {}
    if unfinished(data_dir):
        # Its files are cut off where the copy stopped: nothing in them is to be read
        # (a graph cut short was called damaged, with a search index that was not copied).
        health.problems.append(cut_off_backup(data_dir))
        return health
    if importing.unfinished(data_dir):
        # Its graph holds nothing, or part of the file: called a healthy (empty) memory.
        health.problems.append(importing.cut_off_import(data_dir))
        return health
    if not graph_file.exists():
        health.problems.append(_NO_GRAPH)
    else:
        if not owned_here and _owned_elsewhere(data_dir):
            raise _held(data_dir, "check")
        writable = _unwritable(data_dir, graph_file)
        if writable is not None:
            health.problems.append(writable)
        # A file Kùzu cannot read may crash the process opening it: tried in a child first.
        crashed = log_crashes(graph_file, settings.buffer_pool_mb << 20, always=True)
        try:
            if crashed is not None and not has_log(graph_file):
                raise DamagedStore(
                    str(data_dir),
                    f"Kùzu crashes (signal {crashed}) opening its graph database (graph)",
                    "Restore that file from a backup; the search index beside it was not"
                    " touched and still holds the memories' texts",
                )
            graph: Graph | None = Graph(graph_file, read_only=True)
        except MemoryInUse:
            raise _held(data_dir, "check") from None
        except DamagedStore as error:
            # A checkpoint cut short after its shadow pages: only an opening for writing
            # replays them, as the next start does. Counted on a copy so replayed (it was
            # called unreadable, with a backup to restore as the remedy).
            graph = None
            if needs_writing_to_replay(error.problem):
                scratch = Path(tempfile.mkdtemp(prefix="doxa-check-"))
                pool = settings.buffer_pool_mb << 20
                try:
                    if replay_on_copy(graph_file, pool, scratch) is None:
                        graph = Graph(scratch / graph_file.name, read_only=True)
                finally:
                    if graph is None:  # no copy to count: none is left behind
                        shutil.rmtree(scratch, ignore_errors=True)
                        scratch = None
            if graph is None:
                health.problems.append(f"{error.problem}; {error.remedy}")
        except NotPermitted as error:  # not this user's to read
            health.problems.append(str(error))
            graph = None
        if graph is not None:
            one_sided: dict[str, int] = {}
            issues: list[str] = []
            try:
                applied = graph.applied_migrations()
                issues, again = schema.judged(applied)
                if issues:
                    # As a start decides: no command opens it.
                    health.problems.append(str(SchemaMismatch(issues)))
                # The log's own size (a copy replayed has none left).
                wal_bytes = wal_file(graph_file).stat().st_size if scratch else graph.wal_bytes()
                health.graph = {**graph.counts(), "wal_bytes": wal_bytes}
                # What the next start applies (the store stays as it is until then).
                health.graph["migrations_pending"] = sum(
                    m.version not in applied or m.version in again for m in schema.MIGRATIONS
                )
                health.graph["unheld"] = graph.unheld_observations()
                health.graph["judged_results"] = graph.judged_result_count()
                one_sided = graph.one_sided_links()
                health.graph["one_sided_links"] = sum(one_sided.values())
                live = graph.live_observation_ids()
                judged = {recall: (v, by) for recall, (v, by, *_) in graph.judged_queries().items()}
            except StorageError:
                if not issues:
                    raise
                # A schema this doxa does not know (a newer one's tables) may not hold what is
                # counted here: the mismatch is the answer, and what was read so far.
            finally:
                graph.close()
                if scratch is not None:
                    shutil.rmtree(scratch, ignore_errors=True)
            for table, count in sorted(one_sided.items()):
                health.problems.append(
                    f"{count} nodes' {table} links read differently from their two ends:"
                    " Kùzu's storage of that table is damaged, and writes reaching them fail;"
                    " restore the graph from a backup (`doxa backup`), or `doxa export` and"
                    " import the file into a new directory"
                )
            if health.graph.get("unheld"):
                health.problems.append(
                    f"{health.graph['unheld']} observations are held by no agent"
                    " (cite_evidence shows no believer for them)"
                )
    foreign = False  # the index was built by another embedding model
    if (data_dir / "index").exists():
        foreign = _look_at_index(data_dir / "index", embedder, live, health)
        if not graph_file.exists() and health.index.get("rows"):
            # As a start refuses it: the graph is lost, and the index holds the texts.
            health.problems[health.problems.index(_NO_GRAPH)] = (
                f"no graph, but the search index holds {health.index['rows']} rows: the graph"
                " was lost or moved; put it back from a backup (the index holds the texts)"
            )
    elif live:  # opening it would create it, and a check changes nothing
        health.problems.append(
            "there is no search index; the next start rebuilds it from the graph, or run"
            " `doxa repair`"
        )
    if health.graph:
        stale = sum(not usable_as_kept(vector, by, embedder) for vector, by in judged.values())
        health.graph["judged_queries_to_embed"] = stale
        if stale:
            health.problems.append(
                f"{stale} judged queries' vectors are another embedding model's or not kept;"
                " the next start embeds them again from their words"
            )
    model = load_model(data_dir)
    if model is None and (data_dir / MODEL_FILE).exists():
        health.ranker = {"damaged": 1}
        health.problems.append(
            f"the ranker's file {MODEL_FILE} is damaged: recall uses the base ranking, and the"
            " next start trains the ranker again from the judged recalls (once enough are)"
        )
    if model is not None:
        health.ranker = {
            "version": model.version,
            "active": int(model.active),
            "examples": model.examples,
            # "" (kept before models said): the index's embedder's, as a start decides.
            "other_model": int(
                model.embedder != embedder.fingerprint and (bool(model.embedder) or foreign)
            ),
        }
        if model.active and not keeps_signs(model):
            # As a start decides (``Trainer``): such a model is not used.
            health.ranker["active"] = 0
            health.problems.append(
                f"the ranker v{model.version} in {MODEL_FILE} has weights of the wrong sign:"
                " recall uses the base ranking, and the next start trains it again"
            )
        elif model.active and not passes(model, settings.learning):
            # As a start decides: trained under looser learning settings, it is not used
            # now, and the next start trains it again under these.
            health.ranker |= {"active": 0, "below_settings": 1}
        held_out = model.held_out
        # A model kept by an earlier version may lack some of these figures.
        if {"recalls", "better", "worse", "blend", "base"} <= held_out.keys():
            health.ranker |= {
                "held_out_recalls": int(held_out["recalls"]),
                "better": int(held_out["better"]),
                "worse": int(held_out["worse"]),
                "pairs_right": round(held_out["blend"], 3),
                "base_pairs_right": round(held_out["base"], 3),
            }
    return health


def _look_at_index(
    path: Path,
    embedder: Embedder,
    live: set[str] | None,
    health: Health,
) -> bool:
    """The search index's part of ``check``: its rows and vectors against the graph's live
    observations. True when another embedding model built it."""
    from doxa.store.index import SearchIndex

    index = SearchIndex(path, embedder.dim, embedder.fingerprint, read_only=True)
    if index.problem is None:
        try:
            _inspect_index(index, live, health)
        except (OSError, RuntimeError, ValueError) as error:
            from doxa.store.index import error_line

            index.problem = error_line(error)
            health.index = {}
    if index.problem is not None and (live or index.problem != "it has no table yet"):
        health.problems.append(
            f"the search index cannot be read ({index.problem}); the next start rebuilds it"
            " from the graph, or run `doxa repair`"
        )
    if live is not None and not live and health.index.get("rows"):
        health.problems.append(
            f"the graph holds no memories but the search index holds {health.index['rows']}:"
            " the graph file may have been emptied or replaced; put it back from a backup"
        )
    return index.foreign


def _inspect_index(index: SearchIndex, live: set[str] | None, health: Health) -> None:
    present: set[str] = set()
    not_unit = 0
    for ids, vectors in index.vectors():
        present.update(ids)
        not_unit += int(np.count_nonzero(~are_embeddings(vectors)))
    health.index = {"rows": index.count(), "not_unit": not_unit, "foreign": int(index.foreign)}
    if not_unit:
        health.problems.append(
            f"{not_unit} search-index rows hold vectors that are no embeddings; the next start"
            " embeds them again, or run `doxa repair`"
        )
    if index.foreign:
        health.problems.append(
            "the search index was built by another embedding model; the next start rebuilds it"
        )
    elif (held := _passages_held(index)) is not None:
        health.problems.append(held)
    if live is None:
        return
    health.orphans = {
        "index_rows_unknown": len(present - live),
        "observations_unindexed": len(live - present),
    }
    if live and (present - live or live - present):
        health.problems.append(
            f"the search index lacks {len(live - present)} current observations and holds"
            f" {len(present - live)} rows of none; the next start repairs it, or run"
            " `doxa repair`"
        )


def _passages_held(index: SearchIndex) -> str | None:
    """What is wrong with the index's passages (``passage_vectors``) table, if anything:
    the next start embeds again those it cannot read, or that are no embeddings."""
    from doxa.store.index import error_line

    try:
        held = index.passages_held()
    except (OSError, RuntimeError, ValueError) as error:
        return (
            f"the search index's passages cannot be read ({error_line(error)}); the next"
            " start embeds them again, or run `doxa repair`"
        )
    if held is None:
        return None
    rows, not_unit = held
    if not_unit:
        return (
            f"{not_unit} of the search index's {rows} passages hold vectors that are no"
            " embeddings; the next start embeds them again, or run `doxa repair`"
        )
    return None


def repair(settings: StoreSettings, force: bool = False, set_aside_log: bool = False) -> Health:
    """Rebuild the search index from the graph: every current observation embedded again.

    Args:
        settings: the store's settings (the embedder is the configured one).
        force: rebuild even when the graph is empty but the index is not.
        set_aside_log: first move the graph's write-ahead log (and its shadow file) into
            ``set-aside/<time>/`` of the data directory, so the graph opens as of its last
            checkpoint: for a log Kùzu cannot replay (a process stopped during a checkpoint).
            The writes it held are lost; the texts of the observations among them, which
            the search index still holds, are saved there as ``lost.jsonl``.

    Returns:
        The health of the directory afterwards.

    Raises:
        DamagedStore: the graph cannot be read, or is empty while the index is not (and
            ``force`` is False); nothing was changed.
        MemoryStoreError: another process holds the directory.
    """
    from doxa.store.sharing import Ownership

    data_dir = Path(settings.data_dir).expanduser()
    # Held for the whole repair: a server started meanwhile took the lock once repair had
    # looked, failed to open the graph repair held, and stayed broken.
    claim = Ownership(data_dir)
    if not claim.try_acquire():
        raise _held(data_dir, "repair")
    try:
        return _repair(settings, data_dir, force, set_aside_log)
    finally:
        claim.release()


def _repair(settings: StoreSettings, data_dir: Path, force: bool, set_aside_log: bool) -> Health:
    """``repair``, the directory's ``owner.lock`` held."""
    from doxa.store.graph import Graph
    from doxa.store.index import SearchIndex
    from doxa.store.memory import Memory

    embedder = make_embedder(settings.embedding)
    pool = settings.buffer_pool_mb * 1024 * 1024
    if not (data_dir / "graph").exists() and not force:
        # Opening the graph would make an empty one: refused first, as the start refuses.
        refuse_if_graph_missing(data_dir, embedder)
    folder = _set_aside(data_dir, pool) if set_aside_log else None
    try:
        try:
            graph = Graph(data_dir / "graph", buffer_pool_bytes=pool)
        except MemoryInUse:
            raise _held(data_dir, "repair") from None
        try:
            held = graph.observation_count()
            known = graph.observation_ids()
        finally:
            graph.close()
        index = SearchIndex(data_dir / "index", embedder.dim, embedder.fingerprint)
        if not held and not force and (index.problem is not None or index.count()):
            raise DamagedStore(
                str(data_dir),
                "its graph holds no memories but its search index is not empty",
                "Nothing was changed. Put the graph back from a backup, or run"
                " `doxa repair --force` to rebuild the index from the empty graph",
            )
    except BaseException:
        if folder is not None:
            _put_back(folder, data_dir)  # a refusal changes nothing
        raise
    lost = 0 if folder is None else _save_lost(index, known, folder)
    index.reset("doxa repair was asked to")
    del index
    memory = Memory(settings, embedder, trains=False)
    try:
        memory.warm_up()  # the start-up repair embeds every current observation
        if not memory.settle():
            raise MemoryStoreError("the rebuilt search index could not be written")
    finally:
        memory.close()
    health = _check(settings, owned_here=True)
    if folder is not None:
        health.set_aside = {"folder": str(folder), "lost": lost}
    return health


def _set_aside(data_dir: Path, pool: int) -> Path:
    """Move the graph's write-ahead log and shadow file into a new ``set-aside/<time>/``
    folder of ``data_dir``, once it is known that Kùzu cannot replay the log and can open
    the graph without it.

    Raises:
        DamagedStore: there is no log, the log replays (nothing is lost by opening the memory
            as it is), or the graph without it crashes Kùzu too; nothing was changed.
    """
    from doxa.store.graph import has_log, opens, wal_file
    from doxa.store.values import utc_now

    graph_file = data_dir / "graph"
    log_file = wal_file(graph_file)
    if not has_log(graph_file):
        raise DamagedStore(
            str(data_dir),
            "its graph has no write-ahead log to set aside",
            "Nothing was changed; run `doxa repair` without --set-aside-log",
        )
    if opens(graph_file, pool) is None:
        raise DamagedStore(
            str(data_dir),
            "its graph's write-ahead log replays: the graph opens with it, and setting it aside"
            " would lose the writes it holds",
            "Nothing was changed; open the memory as it is, or run `doxa repair` without"
            " --set-aside-log",
        )
    moved = [p for p in (log_file, graph_file.with_name("graph.shadow")) if p.exists()]
    folder = data_dir / "set-aside" / utc_now().strftime("%Y%m%dT%H%M%S.%fZ")
    folder.mkdir(parents=True)
    for path in moved:
        path.rename(folder / path.name)
    crashed = opens(graph_file, pool)
    if crashed is not None:
        _put_back(folder, data_dir)
        raise DamagedStore(
            str(data_dir),
            f"its graph does not open without its write-ahead log either ({crashed})",
            "Nothing was changed; restore the data directory from a backup",
        )
    log.warning("repair: moved the graph's write-ahead log aside into %s", folder)
    return folder


def _put_back(folder: Path, data_dir: Path) -> None:
    """Move what ``_set_aside`` moved into ``folder`` back into ``data_dir``."""
    for path in folder.iterdir():
        path.rename(data_dir / path.name)
    folder.rmdir()


def _save_lost(index: SearchIndex, known: set[str], folder: Path) -> int:
    """Write the id and text of every observation the search index holds and the graph does
    not (``known``: all it holds, retracted ones included: a forget whose index row was not
    yet deleted is no loss) to ``folder/lost.jsonl``; how many. One purged before the log was
    written, whose index row was not yet deleted, cannot be told from one lost."""
    import json

    if index.problem is not None:
        return 0
    missing = sorted(set(index.ids()) - known)
    texts = index.texts(missing)
    with (folder / "lost.jsonl").open("w", encoding="utf-8") as out:
        for oid in missing:
            if oid in texts:
                out.write(json.dumps({"observation_id": oid, "text": texts[oid]}) + "\n")
    return len(texts)
