"""The MCP server: the memory opened in a lifespan, the tools, the prompts, the instructions."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import ModuleType
from typing import TYPE_CHECKING

import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations

from doxa.prompts import prompt_text
from doxa.server.settings import Settings
from doxa.tools import cite_evidence, feedback, find_conflicts, forget, recall, remember
from doxa.tools.context import MemoryContext
from doxa.tools.schema import compact

if TYPE_CHECKING:
    from doxa.store.memory import Memory

log = logging.getLogger(__name__)

INSTRUCTIONS = """doxa is your long-term memory: typed observations with time, source,
exact confidence, evidence and contradictions, shared by the agents that use this server.

- Before answering anything that may depend on earlier conversations, call `recall`.
- When you learn something worth keeping (facts about people and projects, decisions,
  preferences, corrections), call `remember`; use `fact` for attributes that can change, so
  newer facts supersede older ones, and `memories` to store many at once.
- After using recall results, call `feedback` with the recall_id and the ids that helped.
- Before acting on beliefs that matter, `find_conflicts` and `cite_evidence`.
- `forget` retracts what turned out wrong (kept for audit) or purges what must not be kept."""


#: The tools: module (whose function of the same name is the tool), title, and whether it
#: only reads, may destroy data, and is idempotent (the hints clients show and rely on).
_TOOLS: tuple[tuple[ModuleType, str, bool, bool, bool], ...] = (
    (remember, "Remember", False, False, True),
    (recall, "Recall", True, False, False),
    (find_conflicts, "Find conflicts", True, False, True),
    (cite_evidence, "Cite evidence", True, False, True),
    (feedback, "Feedback on a recall", False, False, False),
    (forget, "Forget", False, True, True),
)


def create_server(
    settings: Settings, memory: Memory | None = None, state: MemoryContext | None = None
) -> MCPServer[MemoryContext]:
    """Build the doxa MCP server.

    One memory serves every session of the server: over SSE and HTTP the SDK runs the
    lifespan once per session, and a data directory may be opened only once per process.

    Args:
        settings: the settings (see ``load_settings``).
        memory: an already open memory to serve (tests, benchmarks); it is left open.
        state: a memory context whose lifetime the caller manages (``serve`` for HTTP and
            SSE, so the memory outlives sessions). Without it, the memory opens with the first
            session and closes when the last one ends.
    """
    shared = state or MemoryContext(settings.store, memory)
    sessions = 0

    @asynccontextmanager
    async def lifespan(_: MCPServer[MemoryContext]) -> AsyncIterator[MemoryContext]:
        nonlocal sessions
        # The store and the model load on a thread: initialize and tools/list answer at once.
        shared.start()
        sessions += 1
        try:
            yield shared
        finally:
            sessions -= 1
            if sessions == 0 and state is None:
                await anyio.to_thread.run_sync(shared.close)

    server: MCPServer[MemoryContext] = MCPServer(
        name="doxa",
        title="doxa memory",
        description="Typed, time-aware, evidence-backed memory for agents",
        instructions=INSTRUCTIONS,
        version=_version(),
        lifespan=lifespan,
        log_level=settings.server.log_level,
        tools=[_tool(*entry) for entry in _TOOLS],
    )
    _add_prompts(server)
    return server


def _tool(module: ModuleType, title: str, reads: bool, destroys: bool, idempotent: bool) -> Tool:
    """The tool ``module``'s function of the same name, publishing a compact output schema."""
    name = module.__name__.rsplit(".", 1)[-1]
    tool = Tool.from_function(
        getattr(module, name),
        name=name,
        title=title,
        description=module.DESCRIPTION,
        annotations=ToolAnnotations(
            read_only_hint=reads,
            destructive_hint=destroys,
            idempotent_hint=idempotent,
            open_world_hint=False,  # the memory is a closed world: nothing outside is touched
        ),
    )
    # Clients validate every result against the published schema; pydantic's $refs and
    # nullable anyOfs make that slow (see doxa.tools.schema). The SDK reads output_schema
    # live when listing, and the server keeps validating results with the pydantic model.
    derived = tool.fn_metadata.output_schema
    if derived is not None:
        tool.fn_metadata.output_schema = compact(derived)
    return tool


def _add_prompts(server: MCPServer[MemoryContext]) -> None:
    @server.prompt(
        name="recall-before-answering",
        title="Recall before answering",
        description="Check the memory before answering a question, then judge the recall.",
    )
    def recall_before_answering(question: str) -> str:
        return prompt_text("recall_before_answering").replace("{question}", question)

    @server.prompt(
        name="remember-after-conversation",
        title="Remember after a conversation",
        description="Extract facts from a transcript and store them with one remember call.",
    )
    def remember_after_conversation(transcript: str, episode: str = "") -> str:
        text = prompt_text("remember_after_conversation")
        episode_line = f'"{episode}"' if episode else "an id for this conversation"
        return text.replace("{episode}", episode_line).replace("{transcript}", transcript)

    @server.prompt(
        name="review-conflicts",
        title="Review conflicts",
        description="Find contradictions and clashing facts and resolve them with evidence.",
    )
    def review_conflicts(agent: str = "", topic: str = "") -> str:
        args = [f'agent="{agent}"'] if agent else []
        args += [f'topic="{topic}"'] if topic else []
        scope = f" ({', '.join(args)})" if args else ""
        call = f"({', '.join(args)})" if args else ""
        return prompt_text("review_conflicts").replace("{scope}", scope).replace("{call}", call)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("doxa")
    except PackageNotFoundError:
        return "0.0.0"
