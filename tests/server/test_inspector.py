"""Scripted calls through the MCP Inspector's CLI mode (npm ``@modelcontextprotocol/inspector``),
an independent client implementation (the TypeScript SDK) talking to ``doxa serve`` on stdio.

How the Inspector reads its command line (checked against 0.15):
- ``-e KEY=VALUE`` (repeatable) sets environment variables for the server; it must come
  before the server command.
- The server command and its arguments follow; the Inspector's own options (``--method``,
  ``--tool-name``, ``--tool-arg k=v``) may come after them (or before a ``--`` that precedes
  the server command). Options the Inspector does not know (``-m``, ``--embedder``,
  ``--data-dir``) are passed on to the server. It does know ``--transport`` and ``--log-level``
  and takes them for itself, even after ``--`` (the outer launcher drops the ``--`` before the
  inner parser runs): set those for doxa with ``-e DOXA_TRANSPORT=...`` /
  ``-e DOXA_LOG_LEVEL=...``, never as flags.
- Exit code 0 and the JSON result on stdout on success.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

#: Pinned: 0.15.0 declares no Node engine and runs on Node 20; later releases require Node 22
#: (npm only warns, but a fresh machine would otherwise fetch whatever is newest).
INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"
#: The first run downloads the package from npm.
TIMEOUT = 300


def _npx() -> str:
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not on PATH (install Node.js 18+ to run the MCP Inspector tests)")
    return npx


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOXA_")}
    env["npm_config_update_notifier"] = "false"
    env["npm_config_fund"] = "false"
    return env


async def _inspector(*args: str) -> tuple[int, Any, str]:
    """Run the Inspector CLI; returns (exit code, parsed JSON stdout, stderr)."""
    command = [_npx(), "-y", INSPECTOR, "--cli", *args]
    with anyio.fail_after(TIMEOUT):
        done = await anyio.run_process(command, check=False, env=_env())
    stdout = done.stdout.decode("utf-8", errors="replace")
    stderr = done.stderr.decode("utf-8", errors="replace")
    try:
        output = json.loads(stdout)
    except ValueError:
        pytest.fail(f"Inspector printed no JSON (exit {done.returncode}): {stdout!r} {stderr!r}")
    return done.returncode, output, stderr


async def test_the_inspector_cli_calls_remember_and_gets_an_observation_id(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "memory"
    code, output, stderr = await _inspector(
        sys.executable,
        "-m",
        "doxa.server",
        "serve",
        "--embedder",
        "hash",
        "--data-dir",
        str(data_dir),
        "--method",
        "tools/call",
        "--tool-name",
        "remember",
        "--tool-arg",
        "text=The bridge on Route 9 is closed for repairs.",
    )

    assert code == 0, stderr
    assert output["isError"] is False
    assert output["structuredContent"]["observation_id"].startswith("obs_")
    assert json.loads(output["content"][0]["text"]) == output["structuredContent"]
    assert (data_dir / "graph").exists()


async def test_the_inspector_cli_lists_the_tools_of_a_server_configured_by_environment(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "memory"
    environment = ["-e", "DOXA_EMBEDDER=hash", "-e", f"DOXA_DATA_DIR={data_dir}"]
    environment += ["-e", "DOXA_LOG_LEVEL=WARNING"]
    serve = [*environment, sys.executable, "-m", "doxa.server", "serve"]
    code, output, stderr = await _inspector(*serve, "--method", "tools/list")

    assert code == 0, stderr
    tools = {tool["name"]: tool for tool in output["tools"]}
    assert set(tools) == {
        "remember",
        "recall",
        "about",
        "find_conflicts",
        "cite_evidence",
        "feedback",
        "forget",
        "prune",
    }
    assert all("outputSchema" in tool for tool in tools.values())
    assert tools["recall"]["annotations"]["readOnlyHint"] is True
    # DOXA_DATA_DIR reaches the server: a call opens its memory there. (tools/list alone
    # does not wait for the memory, and the Inspector stops the server right after it.)
    code, output, stderr = await _inspector(
        *serve, "--method", "tools/call", "--tool-name", "recall", "--tool-arg", "query=bridge"
    )
    assert code == 0, stderr
    assert output["isError"] is False
    assert (data_dir / "graph").exists()
