"""Prompts whose bad requests are refused as the tools' are: ``-32602`` (invalid params),
naming the prompt or argument at fault and what to send.

The SDK renders a prompt with whatever arguments come, and reports an unknown prompt, a
missing argument or an unknown one (a ``TypeError`` from the function) as a bare ``ValueError``:
JSON-RPC code 0, "Error rendering prompt review-conflicts".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.mcpserver.prompts.manager import PromptManager
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

if TYPE_CHECKING:
    from mcp.server.mcpserver.context import Context
    from mcp.server.mcpserver.prompts.base import Message
    from mcp_types import InputRequiredResult


class CheckedPrompt(Prompt):
    """A prompt that refuses unknown and missing arguments, naming them."""

    async def render(
        self, arguments: dict[str, Any] | None, context: Context[Any, Any]
    ) -> list[Message] | InputRequiredResult:
        """Render as the SDK does, once the arguments are its own.

        Raises:
            MCPError: -32602, naming the argument and the prompt's arguments.
        """
        declared = self.arguments or []
        names = [a.name for a in declared]
        given = arguments or {}
        listed = ", ".join(f"{a.name}{'' if a.required else ' (optional)'}" for a in declared)
        for key in given:
            if key not in names:
                raise MCPError(
                    INVALID_PARAMS,
                    f"prompt {self.name}: unknown argument {key!r}; its arguments are: {listed}",
                )
        for argument in declared:
            if argument.required and argument.name not in given:
                raise MCPError(
                    INVALID_PARAMS,
                    f"prompt {self.name}: argument {argument.name!r} is required; its"
                    f" arguments are: {listed}",
                )
        return await super().render(given, context)


class CheckedPrompts(PromptManager):
    """The server's prompts; asking for one it lacks is refused, naming those it has."""

    def get_prompt(self, name: str) -> Prompt | None:
        """The prompt called ``name``.

        Raises:
            MCPError: -32602, when there is none, with the names there are.
        """
        found = super().get_prompt(name)
        if found is None:
            known = ", ".join(sorted(p.name for p in self.list_prompts()))
            raise MCPError(INVALID_PARAMS, f"unknown prompt {name!r}; the prompts are: {known}")
        return found
