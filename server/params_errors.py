"""Requests whose params do not validate are refused naming the parameter and the fix.

The SDK answers such a request (a prompt argument sent as a number or null, a resource
``uri`` that is no text) with -32602 "Invalid request parameters" and nothing more. This
middleware keeps the code and says which parameter, what it must be, and what came.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from mcp.server.context import ServerMiddleware
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import ValidationError

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

#: The longest sent value a refusal quotes back.
_SENT = 40


class NamedParamsErrors(ServerMiddleware[Any]):
    """Turns the SDK's bare refusal of a request's params into one naming them."""

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Run the request; a params validation error becomes -32602 naming the field.

        Raises:
            MCPError: -32602, with the first field at fault (and how many more).
        """
        try:
            return await call_next(ctx)
        except ValidationError as error:
            raise MCPError(INVALID_PARAMS, described(ctx.method, error)) from None


def described(method: str, error: ValidationError) -> str:
    """``error``'s first problem in words: "prompts/get params.arguments.question: Input
    should be a valid string, got 5"."""
    problems = error.errors(include_url=False)
    first = problems[0]
    where = _cut(".".join(str(part) for part in first["loc"]) or "params", 2 * _SENT)
    try:
        came = json.dumps(first.get("input"), ensure_ascii=False)
    except (TypeError, ValueError):
        came = repr(first.get("input"))
    came = _cut(came, _SENT)
    more = f" ({len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"Invalid request parameters: {method} {where}: {first['msg']}, got {came}{more}"


def _cut(text: str, most: int) -> str:
    """``text`` as sent, cut short: a client's names and values are echoed, not its essays."""
    return text if len(text) <= most else text[: most - 1] + "…"
