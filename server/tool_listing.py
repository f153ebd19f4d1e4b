"""What ``tools/list`` answers, kept in ``tools.json`` beside this module.

Deriving it means building every tool's argument model and JSON schemas through the SDK
(``doxa.server.app``): about 40 ms of each start, 10% of a handshake, for an answer that only
changes with the code. A start reads the kept answer instead and builds each tool at its first
call. tests/server/test_tool_listing.py checks that the kept answer is what the code derives;
after changing a tool's description, arguments, result or hints, rewrite it with
``python -m doxa.server.tool_listing``.
"""

from __future__ import annotations

import argparse
import functools
import json
from pathlib import Path
from typing import Any

from mcp.types import Tool as MCPTool

#: The kept answer: each tool as ``tools/list`` sends it.
LISTING = Path(__file__).with_name("tools.json")


@functools.cache
def listed_tools() -> tuple[MCPTool, ...]:
    """The tools as ``tools/list`` answers them, read once per process."""
    entries = json.loads(LISTING.read_text(encoding="utf-8"))
    return tuple(MCPTool.model_validate(entry) for entry in entries)


def derived_listing() -> list[dict[str, Any]]:
    """The tools as the SDK lists them once built from their functions, as sent."""
    import anyio
    from mcp.server import MCPServer

    from doxa.server.app import create_server
    from doxa.server.settings import load_settings

    # The server opens no memory until a session starts: the settings' data dir is not touched.
    server = create_server(load_settings(None, {}))

    async def listed() -> list[MCPTool]:
        return await MCPServer.list_tools(server)  # the SDK's own, not the kept answer

    return [
        tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in anyio.run(listed)
    ]


def main(argv: list[str] | None = None) -> int:
    """Write the listing the code derives (to ``tools.json`` unless ``--out`` says)."""
    parser = argparse.ArgumentParser(description="rewrite the kept tools/list answer")
    parser.add_argument("--out", type=Path, default=LISTING, help="where to write it")
    out: Path = parser.parse_args(argv).out
    text = json.dumps(derived_listing(), ensure_ascii=False, indent=1)
    out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
