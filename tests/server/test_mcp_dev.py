"""``mcp dev server/app.py`` and ``mcp run server/app.py``: the SDK's command line finds
doxa's module-level server object, and that server answers over stdio."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp.cli.cli import _import_server
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server import MCPServer

import doxa.server.app

pytestmark = pytest.mark.anyio

APP = Path(doxa.server.app.__file__)


def test_the_sdks_lookup_finds_the_server_object_in_server_app(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOXA_DATA_DIR", str(tmp_path / "memory"))
    monkeypatch.setattr(sys, "path", [*sys.path])  # the lookup puts server/ first on it
    found = _import_server(APP)
    assert isinstance(found, MCPServer)
    assert found.name == "doxa"
    assert not (tmp_path / "memory").exists()  # built, not opened: the memory opens on use


@pytest.mark.slow
async def test_mcp_run_serves_the_tools_over_stdio(
    tmp_path: Path, server_env: dict[str, str]
) -> None:
    data_dir = tmp_path / "memory"
    env = {**server_env, "DOXA_EMBEDDER": "hash", "DOXA_DATA_DIR": str(data_dir)}
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "mcp"), args=["run", str(APP)], env=env
    )
    with anyio.fail_after(120):
        async with Client(params) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool("remember", {"text": "The bridge is open."})
    assert {"remember", "recall", "about"} <= tools
    assert not result.is_error
    assert (data_dir / "graph").exists()
