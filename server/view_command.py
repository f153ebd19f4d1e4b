"""``doxa view``: the picture of the memory as one HTML page, written to a file.

It reaches the memory as a server does (``doxa.store.sharing``): with no server on the data
directory this process opens it, and with one it asks that server for the picture.

``--out -`` writes the page to standard output, as ``export -`` does the export; what was
written is then said on stderr.

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
    """Write the page of the configured data directory's memory to ``out`` (``-``: standard
    output, the summary then on stderr)."""
    from doxa.server.tool_commands import no_memory, quiet
    from doxa.server.view_page import render
    from doxa.store.sharing import SharedMemory

    quiet()
    if no_memory(settings, "view"):
        return 1
    target = out or DEFAULT_OUT
    # "-" is standard output, as for export (a file named "-" was written, and said to be).
    piped = str(target) == "-"
    data_dir = Path(settings.store.data_dir).expanduser().resolve()
    if not piped and data_dir in (target.resolve(), *target.resolve().parents):
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
    page = render(picture).encode("utf-8")
    if piped:
        sys.stdout.flush()
        sys.stdout.buffer.write(page)
        sys.stdout.buffer.flush()
    else:
        try:
            target.write_bytes(page)
        except OSError as error:
            print(
                f"doxa view: cannot write {target}: {error.strerror}; pick another --out",
                file=sys.stderr,
            )
            return 1
    drawn = ", ".join(
        f"{n} {one if n == 1 else many}"
        for n, one, many in (
            (len(picture.entities), "entity", "entities"),
            (len(picture.facts), "fact", "facts"),
            (len(picture.conflicts), "conflict", "conflicts"),
        )
    )
    size = f"{len(page) / 1024:.0f} KB"
    if piped:
        print(f"wrote the page to standard output ({size}): {drawn}", file=sys.stderr)
    else:
        print(f"wrote {target} ({size}): {drawn}; open it in a browser")
    return 0
