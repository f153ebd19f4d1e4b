"""``doxa check`` and ``doxa repair``: the health of a data directory, for people and scripts.

Exit codes: 0 healthy (or repaired), 1 problems found (or the repair was refused: no memory
there, or a damaged one), 3 the directory is in use by a running server.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from doxa.server.settings import Settings
from doxa.server.tool_commands import counted
from doxa.store.errors import DamagedStore, MemoryStoreError
from doxa.store.settings import LearningSettings

IN_USE = 3


def check_command(settings: Settings, as_json: bool) -> int:
    """Print the health of the configured data directory; 0 when healthy."""
    from doxa.store.health import check

    try:
        health = check(settings.store)
    except MemoryStoreError as error:
        print(f"doxa check: {error}", file=sys.stderr)
        return IN_USE
    if as_json:
        print(json.dumps({**asdict(health), "healthy": health.healthy}, indent=2))
    else:
        _describe(health, settings.store.learning)
    return 0 if health.healthy else 1


def repair_command(
    settings: Settings, force: bool, as_json: bool, set_aside_log: bool = False
) -> int:
    """Rebuild the search index from the graph (the write-ahead log set aside first, if
    asked) and print the health afterwards."""
    from doxa.server.tool_commands import no_memory
    from doxa.store.health import repair

    if no_memory(settings, "repair"):
        return 1
    try:
        health = repair(settings.store, force=force, set_aside_log=set_aside_log)
    except DamagedStore as error:
        print(f"doxa repair: {error}", file=sys.stderr)
        return 1
    except MemoryStoreError as error:
        print(f"doxa repair: {error}", file=sys.stderr)
        return IN_USE
    if as_json:
        print(json.dumps({**asdict(health), "healthy": health.healthy}, indent=2))
    else:
        if health.set_aside:
            print(
                f"the graph's write-ahead log was moved to {health.set_aside['folder']}; the"
                f" graph opened as of its last checkpoint, and the texts of the"
                f" {health.set_aside['lost']} observations lost with the log are in lost.jsonl"
                " there"
            )
        print("search index rebuilt from the graph")
        _describe(health, settings.store.learning)
    return 0 if health.healthy else 1


def _first_training(judged: int, learning: LearningSettings) -> str:
    """When the first ranker is trained, as ``Trainer`` decides it: at a start, or while
    serving after each ``retrain_every`` newly judged results, once ``min_judgements`` are."""
    needed, every = learning.min_judgements, learning.retrain_every
    serving = f", or while serving at each {every} newly judged" if every else ""
    if judged < needed:
        when = f"{counted(judged, 'result')} judged of the {needed} the first needs"
    else:
        when = f"{counted(judged, 'result')} judged (the first needs {needed}, accepted and"
        when += " rejected ones)"
    return (
        f"{when}; it is trained at the next start that has them{serving}, and used only if"
        " it ranks held-out judged recalls better than the base ranking"
    )


def _describe(health: object, learning: LearningSettings) -> None:
    from doxa.store.health import Health

    assert isinstance(health, Health)
    print(f"data directory: {health.data_dir}")
    if health.graph:
        counts = ", ".join(
            f"{k.lower()}s {health.graph[k]}"
            for k in ("Observation", "Belief", "Agent", "Topic", "Episode", "Recall")
            if k in health.graph
        )
        print(f"graph: {counts}; write-ahead log {health.graph['wal_bytes']} bytes")
        if pending := health.graph.get("migrations_pending"):
            print(f"schema: {counted(pending, 'migration')} to apply, at the next start")
    if health.index:
        print(
            f"search index: {counted(health.index['rows'], 'row')},"
            f" {counted(health.index['not_unit'], 'damaged vector')}"
        )
    if health.orphans:
        print(
            f"orphans: {counted(health.orphans['index_rows_unknown'], 'index row')} of no"
            f" observation, {counted(health.orphans['observations_unindexed'], 'observation')}"
            " not indexed"
        )
    if health.ranker.get("damaged"):
        print("ranker: its file is damaged (see below); recall uses the base ranking")
    elif health.ranker:
        ranker = health.ranker
        use = "used" if ranker["active"] and not ranker["other_model"] else "unused"
        if ranker.get("below_settings"):
            use += (
                ": its held-out check does not pass the learning settings now (significance,"
                " min_ordering); the next start trains it again"
            )
        if ranker["other_model"]:
            use += (
                ": it learned from another embedding model's recalls (used again under that"
                " model, until one trained on this one's replaces it)"
            )
        trained = counted(int(ranker["examples"]), "judged result")
        print(f"ranker: v{ranker['version']} trained on {trained}, {use}")
        if "held_out_recalls" in ranker:
            held_out = counted(int(ranker["held_out_recalls"]), "held-out judged recall")
            print(
                f"  checked on {held_out}: it ordered"
                f" {ranker['better']} better than the base ranking and {ranker['worse']} worse,"
                f" and {ranker['pairs_right']:.0%} of their (accepted, rejected) pairs right"
                f" (the base {ranker['base_pairs_right']:.0%})"
            )
    elif "judged_results" in health.graph:
        print(f"ranker: none yet; {_first_training(health.graph['judged_results'], learning)}")
    if health.healthy:
        print("healthy")
    for problem in health.problems:
        print(f"problem: {problem}")
