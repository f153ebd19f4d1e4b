"""Requests whose params do not validate are refused naming the parameter and the fix.

The SDK answers such a request (a prompt argument sent as a number or null, a resource
``uri`` that is no text) with -32602 "Invalid request parameters" and nothing more. This
middleware keeps the code and says which parameter, what it must be, and what came.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp.server.context import ServerMiddleware
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import ValidationError

from doxa.store.drafts import sent

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

#: The longest parameter path a refusal quotes back (a client names its own arguments).
_PATH = 80


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
    where = ".".join(str(part) for part in first["loc"]) or "params"
    where = where if len(where) <= _PATH else where[: _PATH - 1] + "…"
    came = sent(first.get("input"))
    more = f" ({len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"Invalid request parameters: {method} {where}: {first['msg']}, got {came}{more}"
