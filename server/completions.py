"""Completions (``completion/complete``): the names the memory knows, offered for the
prompt and resource arguments that take one, as the user types them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio.to_thread
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    Completion,
    CompletionArgument,
    PromptReference,
    ResourceTemplateReference,
)

from doxa.store.errors import MemoryStoreError
from doxa.tools.about import ENTITY_URI
from doxa.tools.context import MemoryContext

if TYPE_CHECKING:
    from doxa.store.names import NameKind

log = logging.getLogger(__name__)

#: (prompt name, argument) -> the kind of name it takes.
PROMPT_ARGUMENTS: dict[tuple[str, str], NameKind] = {
    ("review-conflicts", "agent"): "agent",
    # find_conflicts' topic matches a fact's subject or object too: any entity.
    ("review-conflicts", "topic"): "entity",
}
#: (resource template, argument) -> the kind of name it takes.
RESOURCE_ARGUMENTS: dict[tuple[str, str], NameKind] = {(ENTITY_URI, "name"): "entity"}


def kind_of(ref: PromptReference | ResourceTemplateReference, argument: str) -> NameKind | None:
    """The kind of name the argument takes, or None if it takes free text (a question)."""
    if isinstance(ref, PromptReference):
        return PROMPT_ARGUMENTS.get((ref.name, argument))
    return RESOURCE_ARGUMENTS.get((ref.uri, argument))


class NameCompletions:
    """The completion handler: names of the argument's kind starting with what is typed,
    sorted, at most 100 with the total (``doxa.store.names``). A free-text argument, or a
    memory still opening, completes to nothing rather than failing the client's typing; a
    prompt, template or argument the server does not have is refused (-32602)."""

    def __init__(
        self,
        state: MemoryContext,
        arguments: Callable[[PromptReference | ResourceTemplateReference], list[str]],
    ) -> None:
        """``arguments`` gives the argument names of a prompt or resource template, and
        refuses (-32602) one the server does not have."""
        self._state = state
        self._arguments = arguments

    async def __call__(
        self,
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: object,
    ) -> Completion | None:
        """Answer one ``completion/complete`` request.

        Raises:
            MCPError: -32602, for a prompt, template or argument there is not.
        """
        known = self._arguments(ref)
        if isinstance(ref, PromptReference):
            what = f"prompt {ref.name!r}"
        else:
            what = f"resource template {ref.uri!r}"
        if argument.name not in known:
            raise MCPError(
                INVALID_PARAMS,
                f"the {what} has no argument {argument.name!r}; its arguments: {', '.join(known)}",
            )
        kind = kind_of(ref, argument.name)
        if kind is None:
            return None
        state, typed = self._state, argument.value
        try:
            names = await anyio.to_thread.run_sync(lambda: state.memory().names(kind, typed))
        except MemoryStoreError as error:
            log.debug("no completions for %s: %s", argument.name, error)
            return None
        return Completion(values=names.values, total=names.total, has_more=names.has_more)
