"""Context cost: how many characters of a model's context doxa's tools and answers take.

Models pay for every token. This prints, through a real MCP client (in process, hash
embedder, a fresh memory in a temporary directory):

- ``tools/list``: the whole answer as sent (compact JSON) and the model-facing part (each
  tool's name, description and input schema as compact JSON), per tool and in total;
  target: model-facing <= 8,000 characters for all tools together;
- a ``recall(limit=10)`` over short notes: the characters of the ten memory texts, of the
  answer's text content, and the budget (2 x texts + 120 per result), with and without
  ``explain=true``;
- a ``remember`` answer (one memory and a batch of three).

``--peer CMD`` also lists the tools of another stdio MCP server started with ``CMD`` (for
example ``--peer "npx -y @modelcontextprotocol/server-memory"``) for comparison.

Run: ``python bench/context.py`` (a few seconds).
"""

from __future__ import annotations

import argparse
import json
import shlex
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.types import CallToolResult, TextContent, Tool

from doxa.server.app import create_server
from doxa.server.settings import load_settings

NOTES = [
    "Alice moved to Berlin in March.",
    "Bob is Alice's manager at Northwind.",
    "The Route 9 bridge is closed for repairs.",
    "Alice likes jazz and hiking.",
    "The quarterly review is on Friday at 10.",
    "Carol prefers tea over coffee.",
    "The staging server runs Postgres 16.",
    "Dave is allergic to peanuts.",
    "The team agreed to ship doxa 1.0 in May.",
    "Alice's sister lives in Lisbon.",
    "Alice works on the search project.",
    "The office moves to the fifth floor in June.",
]


def compact(value: Any) -> str:
    """``value`` as compact JSON, as a client would forward it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def model_facing(tool: Tool) -> int:
    """Characters of a tool a model reads: its name, description and input schema."""
    return len(tool.name) + len(tool.description or "") + len(compact(tool.input_schema))


def text_of(result: CallToolResult) -> str:
    """The text content of a tool result."""
    assert not result.is_error, result.content
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


async def measure_doxa() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(
            environ={},
            overrides={
                ("store", "data_dir"): str(Path(tmp) / "memory"),
                ("store", "embedding", "kind"): "hash",
            },
        )
        async with Client(create_server(settings)) as client:
            listed = await client.list_tools()
            whole = compact(listed.model_dump(mode="json", by_alias=True, exclude_none=True))
            print("tools/list (characters, compact JSON)")
            total = 0
            for tool in listed.tools:
                size = model_facing(tool)
                total += size
                print(f"  {tool.name:<16} model-facing {size:>6,}")
            print(f"  {'all tools':<16} model-facing {total:>6,}   (target <= 8,000)")
            print(f"  {'whole answer':<16}              {len(whole):>6,}")

            one = await client.call_tool(
                "remember", {"text": NOTES[0], "topics": ["Alice"], "source": "chat"}
            )
            batch = await client.call_tool(
                "remember", {"memories": [{"text": t} for t in NOTES[1:4]]}
            )
            await client.call_tool("remember", {"memories": [{"text": t} for t in NOTES[4:]]})
            print("\nremember answers (text content)")
            print(f"  one memory       {len(text_of(one)):>6,}")
            print(f"  batch of three   {len(text_of(batch)):>6,}")

            print("\nrecall(limit=10) over short notes")
            for explain in (False, True):
                args: dict[str, Any] = {"query": "What do we know about Alice?", "limit": 10}
                if explain:
                    args["explain"] = True
                answer = await client.call_tool("recall", args)
                if answer.is_error:  # a server without explain
                    refused = "".join(c.text for c in answer.content if isinstance(c, TextContent))
                    print(f"  explain={explain}: refused: {refused[:100]}")
                    continue
                results = (answer.structured_content or {}).get("results", [])
                texts = sum(len(r["text"]) for r in results)
                budget = 2 * texts + 120 * len(results)
                size = len(text_of(answer))
                print(
                    f"  explain={explain!s:<5} results {len(results):>2}  memory texts"
                    f" {texts:>5,}  answer text {size:>6,}  budget {budget:>6,}"
                    f"  ({'within' if size <= budget else 'OVER'})"
                )


async def measure_peer(command: str) -> None:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    argv = shlex.split(command)
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with stdio_client(params) as (read, write):
        from mcp.client.session import ClientSession

        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
    total = sum(model_facing(t) for t in listed.tools)
    print(f"\npeer {command!r}: {len(listed.tools)} tools, model-facing {total:,} characters")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", help="command of another stdio MCP server to compare")
    args = parser.parse_args()
    anyio.run(measure_doxa)
    if args.peer:
        anyio.run(measure_peer, args.peer)


if __name__ == "__main__":
    main()
