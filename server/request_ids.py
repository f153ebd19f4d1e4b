"""A request whose ``id`` is null or no string or integer is refused, not ignored.

JSON-RPC allows only strings and integers as a request's id. The SDK reads a request with
an id of null (or one it cannot read as an id) as a notification, which is never answered:
over stdio the client waited forever, over HTTP it got ``202 Accepted`` and no answer. doxa
answers it instead, with -32600 "Invalid Request" and id null (over HTTP with status 400,
as the SDK answers a body it cannot parse).
"""

from __future__ import annotations

import contextlib
import json
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError

from doxa.server.request_body import Body, BodyCheck

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send


def id_refusal(raw: Any) -> str | None:
    """Why the JSON-RPC message ``raw`` (as parsed) is refused for its id, or None: only a
    request (a ``method`` with an ``id``) has one to refuse."""
    if not isinstance(raw, dict) or "method" not in raw or "id" not in raw:
        return None
    ident = raw["id"]
    if ident is not None and not isinstance(ident, bool) and isinstance(ident, int | str):
        return None
    shown = json.dumps(ident, separators=(",", ":"))[:40]
    return f"Invalid Request: id must be a string or an integer, got {shown}"


def refused(text: str) -> JSONRPCError:
    """The answer to a request refused for its id."""
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=text))


class RequestIds(BodyCheck):
    """ASGI wrapper answering a POSTed request whose id is none a request may have (HTTP and
    SSE); every other request reaches the app as it came."""

    async def check(self, scope: Scope, body: Body, receive: Receive, send: Send) -> None:
        """Answer a request refused for its id; hand any other to the app."""
        why = None
        if body.complete:
            with contextlib.suppress(ValueError, RecursionError):  # not JSON: the SDK answers
                why = id_refusal(json.loads(body.data))
        if why is None:
            await self.app(scope, body.replay(receive), send)
            return
        answer = refused(why).model_dump_json(by_alias=True, exclude_unset=True).encode()
        await send(
            {
                "type": "http.response.start",
                "status": HTTPStatus.BAD_REQUEST,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(answer)).encode("ascii")),
                ],
            }
        )
        await send({"type": "http.response.body", "body": answer})
