"""What a hostile or sloppy client gets from the real ``doxa serve --transport http|sse``: a
clear HTTP or JSON-RPC error for each request, and no traceback in the server's log (anyone
who can reach the port could otherwise fill it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

Start = Callable[..., Awaitable[Any]]


def _quiet_log(server: Any) -> str:
    """The server's stderr once it has stopped (every line written), checked to hold no
    traceback."""
    assert server.stop() == 0
    stderr = str(server.output()[1])
    assert "Traceback" not in stderr, stderr
    assert "Exception in ASGI application" not in stderr, stderr
    return stderr


async def test_an_sse_stream_refused_for_its_host_or_origin_logs_no_traceback(
    tmp_path: Path, start_server: Start
) -> None:
    server = await start_server("sse", tmp_path / "memory")
    refused = [
        ("GET", {"Host": "evil.example"}, 421, b"Invalid Host header"),
        ("GET", {"Host": "evil.example:80"}, 421, b"Invalid Host header"),
        ("GET", {"Origin": "http://evil.example"}, 403, b"Invalid Origin header"),
        ("HEAD", {"Origin": "http://evil.example"}, 403, b""),
    ]
    with anyio.fail_after(60):
        # One connection for all: uvicorn closed it after each raised exception, so the
        # next request on it failed too.
        async with httpx2.AsyncClient(timeout=30) as http:
            for method, headers, status, body in refused:
                answer = await http.request(method, server.url, headers=headers)
                assert (answer.status_code, answer.content) == (status, body), headers
    stderr = _quiet_log(server)
    assert stderr.count("Invalid Host header: evil.example") == 2
    assert stderr.count("Invalid Origin header: http://evil.example") == 2
