"""``doxa view``: the picture of the memory as one HTML page, written to a file.

It reaches the memory as a server does (``doxa.store.sharing``): with no server on the data
directory this process opens it, and with one it asks that server for the picture.

Exit codes: 0 written, 1 no memory there, the memory could not be opened or reached, or the
file not written.
"""

from __future__ import annotations

import sys
from pathlib import Path

from doxa.server.settings import Settings
from doxa.store.errors import MemoryStoreError

#: Where the page goes without ``--out``.
DEFAULT_OUT = Path("doxa-memory.html")


def view_command(settings: Settings, out: Path | None) -> int:
    """Write the page of the configured data directory's memory to ``out``."""
    from doxa.server.tool_commands import no_memory, quiet
    from doxa.server.view_page import render
    from doxa.store.sharing import SharedMemory

    quiet()
    if no_memory(settings, "view"):
        return 1
    target = out or DEFAULT_OUT
    data_dir = Path(settings.store.data_dir).expanduser().resolve()
    if data_dir in (target.resolve(), *target.resolve().parents):
        # Written over the memory's own files (--out DIR/graph), the page destroyed it.
        print(
            f"doxa view: --out: {target} lies inside the data directory {data_dir}; choose another",
            file=sys.stderr,
        )
        return 1
    shared = SharedMemory(settings.store, trains=False)
    try:
        picture = shared.picture()
    except MemoryStoreError as error:
        print(f"doxa view: {error}", file=sys.stderr)
        return 1
    finally:
        shared.close()
    try:
        target.write_text(render(picture), encoding="utf-8")
    except OSError as error:
        print(
            f"doxa view: cannot write {target}: {error.strerror}; pick another --out",
            file=sys.stderr,
        )
        return 1
    size = target.stat().st_size
    drawn = ", ".join(
        f"{n} {one if n == 1 else many}"
        for n, one, many in (
            (len(picture.entities), "entity", "entities"),
            (len(picture.facts), "fact", "facts"),
            (len(picture.conflicts), "conflict", "conflicts"),
        )
    )
    print(f"wrote {target} ({size / 1024:.0f} KB): {drawn}; open it in a browser")
    return 0
