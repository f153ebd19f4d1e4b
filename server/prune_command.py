"""``doxa prune``: retire what nobody uses and merge near-duplicates, from the command line.

A dry run unless ``--apply``. It reaches the memory as a server does (``doxa.store.sharing``):
with no server on the data directory this process opens it, and with one it sends the prune
to that server, which applies it between its other calls. The rule is ``[store.prune]`` of
the settings (``--config`` a file overriding it).

Exit codes: 0 done, 1 no memory there, or it could not be opened or reached, 2 a bad rule
value.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from doxa.server.settings import Settings
from doxa.store.errors import InvalidInput, MemoryStoreError
from doxa.store.pruning import described
from doxa.store.values import iso


def prune_command(settings: Settings, apply: bool, as_json: bool) -> int:
    """Prune the configured data directory (a dry run unless ``apply``) and print what was,
    or would be, retired."""
    from doxa.server.tool_commands import hanging, no_memory, quiet
    from doxa.store.sharing import SharedMemory

    quiet()
    if no_memory(settings, "prune"):
        return 1
    shared = SharedMemory(settings.store, trains=False)
    try:
        # The rule as this command reads it: a server owning the memory has its own settings,
        # and --config must count there too.
        done = shared.prune(described(settings.store.prune), apply=apply)
    except InvalidInput as error:
        print(f"doxa prune: {error} (see [store.prune] in the configuration)", file=sys.stderr)
        return 2
    except MemoryStoreError as error:
        print(f"doxa prune: {error}", file=sys.stderr)
        return 1
    finally:
        shared.close()
    if as_json:
        print(
            json.dumps(
                {
                    "dry_run": not done.applied,
                    "unused": done.unused,
                    "merged": done.merged,
                    "rule": done.rule,
                    "at": iso(done.at),
                    "retired": [asdict(r) for r in done.retired],
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    total = len(done.retired)
    counts = f"{done.unused} unused, {done.merged} merged into a near-duplicate"
    if done.applied and not total:
        print("retired nothing: nothing meets the rule")
    elif done.applied:
        print(f"retired {total} ({counts}); kept for audit (cite_evidence says why)")
    else:
        more = "; run with --apply to retire them" if total else ""
        print(f"dry run: {total} would be retired ({counts}){more}")
    for r in done.retired:
        why = r.reason if r.merged_into is None else f"merged into {r.merged_into}"
        # A text's further lines hang under its first: at a line's start, they could list
        # an observation of their own as retired.
        print("\n".join(hanging(f"  {r.observation_id}  {why}: ", r.text)))
    return 0
