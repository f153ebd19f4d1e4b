"""The MCP server: the memory opened in a lifespan, the tools, the prompts, the instructions."""

from __future__ import annotations

import functools
import importlib
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

import anyio
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.resources import FunctionResource
from mcp.server.mcpserver.tools import Tool, ToolManager
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    PromptReference,
    ResourceTemplateReference,
    SetLevelRequestParams,
    ToolAnnotations,
)
from mcp.types import Tool as MCPTool
from pydantic import ConfigDict, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from doxa.prompts import prompt_text
from doxa.server.argument_errors import printable, told
from doxa.server.client_log import ClientLog
from doxa.server.completions import NameCompletions
from doxa.server.exact import exact_loads
from doxa.server.params_errors import NamedParamsErrors
from doxa.server.prompt_checks import CheckedPrompt, CheckedPrompts
from doxa.server.settings import Settings, load_settings
from doxa.server.tool_listing import listed_tools
from doxa.server.view_page import view_endpoint
from doxa.tools import about
from doxa.tools.context import MemoryContext
from doxa.tools.schema import compact, lean_input, left_out_when_null

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
- For what is known about one person, project or thing and how it changed, `about`.
- Before acting on beliefs that matter, `find_conflicts` and `cite_evidence`.
- `forget` retracts what turned out wrong (kept for audit) or purges what must not be kept."""


#: The tools, in the order they are listed: the module under ``doxa.tools`` (whose function of
#: the same name is the tool), title, and whether it only reads, may destroy data, and is
#: idempotent (the hints clients show and rely on). A module is imported when its tool is
#: first called (``CheckedTools``); ``tools/list`` answers from ``doxa.server.tool_listing``.
_TOOLS: tuple[tuple[str, str, bool, bool, bool], ...] = (
    ("remember", "Remember", False, False, True),
    ("recall", "Recall", True, False, False),
    ("about", "About an entity", True, False, True),
    ("find_conflicts", "Find conflicts", True, False, True),
    ("cite_evidence", "Cite evidence", True, False, True),
    ("feedback", "Feedback on a recall", False, False, False),
    ("forget", "Forget", False, True, True),
    ("prune", "Prune", False, True, False),
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
    client_log = ClientLog()

    @asynccontextmanager
    async def lifespan(_: MCPServer[MemoryContext]) -> AsyncIterator[MemoryContext]:
        nonlocal sessions
        # The store and the model load on a thread: initialize and tools/list answer at once.
        shared.start()
        sessions += 1
        client_log.attach()
        try:
            yield shared
        finally:
            sessions -= 1
            if sessions == 0:
                client_log.detach()
            if sessions == 0 and state is None:
                # Shielded: a cancelled run must still close the memory (Kùzu's log).
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(shared.close)

    server: MCPServer[MemoryContext] = _Server(
        name="doxa",
        title="doxa memory",
        description="Typed, time-aware, evidence-backed memory for agents",
        instructions=INSTRUCTIONS,
        version=_version(),
        lifespan=lifespan,
        log_level=settings.server.log_level,
        # doxa sends no change notifications: its tools, prompts and resources never change
        # while it runs, and no resource's updates are followed. Without this the 2026-07-28
        # discover answer claimed listChanged and subscribe, and acknowledged
        # subscriptions/listen streams on which nothing would ever come.
        subscriptions=False,
    )
    # An unknown tool is a protocol error (-32602) naming the tools, as an unknown prompt is.
    server._tool_manager = CheckedTools(server.settings.warn_on_duplicate_tools)
    _add_prompts(server)
    _add_resources(server, shared)
    # Served by the HTTP and SSE transports only (stdio has no routes).
    server.custom_route("/view", methods=["GET"], name="view")(
        view_endpoint(shared, settings.server)
    )
    completing = NameCompletions(shared, lambda ref: _arguments_of(server, ref))
    server.completion()(completing)  # type: ignore[no-untyped-call]  # SDK untyped
    # The SDK's MCPServer has no decorator for logging/setLevel (deprecated by the
    # 2026-07-28 revision, still what 2025 clients send): registered on its low-level server.
    server._lowlevel_server.add_request_handler(
        "logging/setLevel", SetLevelRequestParams, client_log.set_level
    )
    # A 2026-07-28 request asks for the log in its _meta instead (and only for itself).
    server._lowlevel_server.middleware.append(client_log.middleware())
    server._lowlevel_server.middleware.append(NamedParamsErrors())
    return server


def __getattr__(name: str) -> MCPServer[MemoryContext]:
    """``mcp`` (and ``server``): a doxa server from the default settings, ``DOXA_*``
    variables over them, built on first use, never at import.

    ``mcp dev server/app.py`` and ``mcp run server/app.py`` look for a module-level server
    object by these names.
    """
    if name in ("mcp", "server"):
        return _default_server()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _default_server() -> MCPServer[MemoryContext]:
    import os

    return create_server(load_settings(environ=os.environ))


class _Server(MCPServer[MemoryContext]):
    """The SDK's server, answering ``tools/list`` from the kept listing, which a test holds
    equal to what the SDK lists from the built tools (``doxa.server.tool_listing``)."""

    async def list_tools(self) -> list[MCPTool]:
        """The tools as listed, none of them built."""
        return list(listed_tools())


class CheckedTools(ToolManager):
    """The server's tools, each built at its first use; calling one it lacks is refused as a
    protocol error, naming those it has.

    Building the eight tools' argument models and schemas took about 40 ms of every start,
    before ``tools/list`` could be answered; the first call of a tool waits for the memory to
    open anyway (seconds with the model), so a few milliseconds more there go unseen.

    The SDK answers an unknown tool with a tool result (``isError``, "Unknown tool: x"),
    which the protocol reserves for a tool that ran and failed; it lists an unknown tool
    among the invalid params (-32602).
    """

    def __init__(self, warn_on_duplicate_tools: bool = True) -> None:
        super().__init__(warn_on_duplicate_tools)
        self._unbuilt = {entry[0]: entry for entry in _TOOLS}

    def get_tool(self, name: str) -> Tool | None:
        """The tool ``name``, built now if this is its first use; None if there is none."""
        entry = self._unbuilt.get(name)
        if entry is not None:
            self._tools[name] = _tool(*entry)
            del self._unbuilt[name]  # only once built: a failure is tried again, not unknown
        return super().get_tool(name)

    def list_tools(self) -> list[Tool]:
        """Every tool, built (the SDK's own listing, ``tool_listing.derived_listing``)."""
        return [tool for name, *_ in _TOOLS if (tool := self.get_tool(name)) is not None]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Any,
        convert_result: bool = False,
    ) -> Any:
        """Call the tool ``name`` as the SDK does.

        Raises:
            MCPError: -32602, when there is no such tool, with the names there are.
        """
        if self.get_tool(name) is None:
            known = ", ".join(dict.fromkeys([*(entry[0] for entry in _TOOLS), *self._tools]))
            shown = name if len(name) <= 80 else name[:79] + "…"
            raise MCPError(INVALID_PARAMS, f"unknown tool {shown!r}; the tools are: {known}")
        return await super().call_tool(name, arguments, context, convert_result=convert_result)


class ToldTool(Tool):
    """A tool whose arguments that fail its input schema are refused as its own errors are:
    a clause per argument at fault, naming it and what to send (``doxa.server.argument_errors``)
    instead of pydantic's report."""

    def _argument_schema(self) -> dict[str, Any]:
        """The argument model's JSON schema, ``$defs`` and all (the published one is lean:
        the fields of ``memories`` items, said once, are left out of it)."""
        return self.fn_metadata.arg_model.model_json_schema(by_alias=True)

    async def run(self, *args: Any, **kwargs: Any) -> Any:
        """Run as the SDK does; a refusal of the arguments told again."""
        try:
            return await super().run(*args, **kwargs)
        except ToolError as error:
            cause = error.__cause__
            # Only the arguments' refusal: a crash (a result that fails its own model, say)
            # stays the SDK's generic UnexpectedToolError.
            if isinstance(error, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            try:
                clauses = told(cause, self._argument_schema())
            except Exception:
                log.exception("telling the arguments' refusal failed; the SDK's report stands")
                raise error from cause
            raise ToolError(f"Error executing tool {self.name}: {clauses}") from cause


def _tool(name: str, title: str, reads: bool, destroys: bool, idempotent: bool) -> Tool:
    """The function ``name`` of the module ``doxa.tools.<name>`` as a tool, publishing a
    compact output schema."""
    module = importlib.import_module(f"doxa.tools.{name}")
    tool = ToldTool.from_function(
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
    # nullable anyOfs make that slow (see doxa.tools.schema), and the answers leave out the
    # fields that are null rather than send null. The SDK reads output_schema
    # live when listing; the tools build their answers from the pydantic model it describes.
    derived = tool.fn_metadata.output_schema
    closed = _closed(tool.fn_metadata.arg_model)
    tool.fn_metadata = VerbatimArguments(
        arg_model=closed,
        output_schema=None if derived is None else left_out_when_null(compact(derived)),
        output_model=tool.fn_metadata.output_model,
        wrap_output=tool.fn_metadata.wrap_output,
    )
    tool.parameters = lean_input(closed.model_json_schema(by_alias=True))
    return tool


def _closed(model: type[ArgModelBase]) -> type[ArgModelBase]:
    """The argument model refusing keys it does not know.

    The SDK's ignores them, so a misspelt ``confidance`` would be dropped and the memory
    stored with the default: the client would not get what it sent, nor be told.
    """
    namespace = {"model_config": ConfigDict(extra="forbid"), "__module__": model.__module__}
    closed: type[ArgModelBase] = type(model.__name__, (model,), namespace)
    return closed


class VerbatimArguments(FuncMetadata):
    """Tool arguments as the client sent them.

    The SDK json-parses a string sent for any parameter whose annotation is not exactly
    ``str`` (some clients send lists and objects as JSON text). For ``str | None`` that turns
    the text ``"null"`` into None and ``"[1, 2]"`` into a list, and for a bool it turns
    ``"true"`` into True. Here a string is parsed only for a parameter that cannot take a
    string, and kept only if it parses to a list or an object. Strings holding unpaired
    surrogates (no UTF-8 form: the graph cannot store them) are refused, naming the field.
    """

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` with JSON text parsed where the parameter wants a list or an object."""
        takes_text = _string_parameters(self.arg_model)
        parsed = dict(data)
        for key, value in data.items():
            if not isinstance(value, str) or key in takes_text:
                continue
            try:
                decoded = exact_loads(value)
            except (ValueError, RecursionError):
                continue  # not JSON: validation refuses it, naming the parameter
            if isinstance(decoded, list | dict):
                parsed[key] = decoded
        return parsed

    def convert_result(self, result: Any) -> Any:
        """A tool's own ``CallToolResult`` as it is: doxa's tools build theirs from their
        result model on the worker thread (``doxa.tools.answer``), so validating it again here
        would only repeat that work on the event loop every session shares."""
        if isinstance(result, CallToolResult):
            return result
        return super().convert_result(result)

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        """Pre-parse, refuse unpaired surrogates, validate (as the SDK does otherwise)."""
        parsed = self.pre_parse_json(arguments_to_validate)
        problems: list[InitErrorDetails] = []
        known = _argument_names(self.arg_model)
        for key in parsed:
            if key not in known:
                # Named with the valid ones: a model that guessed a filter must not believe
                # it filtered, and can correct the call at once.
                problems.append(
                    InitErrorDetails(
                        type=PydanticCustomError(
                            "unknown_argument",
                            "unknown argument; the arguments are: {known}",
                            {"known": ", ".join(known)},
                        ),
                        loc=(printable(key),),
                        input=printable(key),
                    )
                )
        _find_surrogates(parsed, (), problems)
        if problems:
            # A ValidationError is what the SDK reports as the caller's mistake, by field.
            raise ValidationError.from_exception_data(self.arg_model.__name__, problems)
        return self.arg_model.model_validate(parsed).model_dump_one_level()


@functools.cache
def _argument_names(model: type[ArgModelBase]) -> tuple[str, ...]:
    """The names a client may send, in the order the schema lists them."""
    return tuple(info.alias or name for name, info in model.model_fields.items())


@functools.cache
def _string_parameters(model: type[ArgModelBase]) -> frozenset[str]:
    """Names and aliases of the parameters whose type accepts a string."""
    keys: set[str] = set()
    for field_name, info in model.model_fields.items():
        if _takes_string(info.annotation):
            keys.add(field_name)
            if info.alias:
                keys.add(info.alias)
    return frozenset(keys)


def _takes_string(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _takes_string(get_args(annotation)[0])
    if origin is Union or origin is UnionType:
        return any(_takes_string(arm) for arm in get_args(annotation))
    if origin is Literal:
        return any(isinstance(value, str) for value in get_args(annotation))
    if annotation is Any or annotation is object:
        return True
    return isinstance(annotation, type) and issubclass(annotation, str)


def _find_surrogates(
    value: Any, where: tuple[str | int, ...], found: list[InitErrorDetails]
) -> None:
    """Add an error for every string (or key) in ``value`` that has no UTF-8 form."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            found.append(
                InitErrorDetails(
                    type=PydanticCustomError(
                        "unpaired_surrogate",
                        "holds an unpaired surrogate (U+{code}) at character {at}: send valid"
                        " Unicode text",
                        {"code": f"{ord(value[error.start]):04X}", "at": error.start},
                    ),
                    loc=where,
                    input=printable(value),
                )
            )
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _find_surrogates(item, (*where, i), found)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                _find_surrogates(key, (*where, printable(key)), found)
                _find_surrogates(item, (*where, printable(key)), found)


def _add_resources(server: MCPServer[MemoryContext], state: MemoryContext) -> None:
    """One entity as ``about`` shows it, the list of entities, and the memory's counts."""
    server.resource(
        about.ENTITY_URI,
        name="entity",
        title="An entity",
        description="What about(name) answers: facts, timeline, related entities, conflicts.",
        mime_type="application/json",
    )(about.entity)
    server.add_resource(
        FunctionResource(
            uri=about.ENTITIES_URI,
            name="entities",
            title="Entities",
            description="Entities with their observation and fact counts, most mentioned first"
            " (at most 500).",
            mime_type="application/json",
            fn=about.entity_list(state),
        )
    )
    server.add_resource(
        FunctionResource(
            uri=about.STATS_URI,
            name="stats",
            title="Memory statistics",
            description="How many agents, observations, beliefs, topics, facts and index rows"
            " the memory holds.",
            mime_type="application/json",
            fn=about.stats_reader(state),
        )
    )


def _arguments_of(
    server: MCPServer[MemoryContext], ref: PromptReference | ResourceTemplateReference
) -> list[str]:
    """The argument names of the prompt or resource template ``ref`` names.

    Raises:
        MCPError: -32602, when the server has no such one, naming those it has.
    """
    if isinstance(ref, PromptReference):
        prompt = server._prompt_manager.get_prompt(ref.name)  # CheckedPrompts: or refused
        return [a.name for a in prompt.arguments or []] if prompt is not None else []
    templates = server._resource_manager.list_templates()
    for template in templates:
        if template.uri_template == ref.uri:
            return list(template.parameters.get("properties", {}))
    known = ", ".join(t.uri_template for t in templates)
    raise MCPError(
        INVALID_PARAMS, f"unknown resource template {ref.uri!r}; the templates are: {known}"
    )


def _add_prompts(server: MCPServer[MemoryContext]) -> None:
    # Refusals that name the prompt or argument (-32602), not the SDK's code 0.
    server._prompt_manager = CheckedPrompts(
        warn_on_duplicate_prompts=server.settings.warn_on_duplicate_prompts
    )

    def recall_before_answering(question: str) -> str:
        return prompt_text("recall_before_answering", question=question)

    def remember_after_conversation(transcript: str, episode: str = "") -> str:
        episode_line = json.dumps(episode, ensure_ascii=False) if episode else None
        return prompt_text(
            "remember_after_conversation",
            episode=episode_line or "an id for this conversation",
            transcript=transcript,
        )

    def review_conflicts(agent: str = "", topic: str = "") -> str:
        # Quoted as JSON strings: a quote in a name keeps the call readable.
        args = [
            f"{k}={json.dumps(v, ensure_ascii=False)}"
            for k, v in (("agent", agent), ("topic", topic))
            if v
        ]
        scope = f" ({', '.join(args)})" if args else ""
        call = f"({', '.join(args)})" if args else ""
        return prompt_text("review_conflicts", scope=scope, call=call)

    for fn, name, title, description in (
        (
            recall_before_answering,
            "recall-before-answering",
            "Recall before answering",
            "Check the memory before answering a question, then judge the recall.",
        ),
        (
            remember_after_conversation,
            "remember-after-conversation",
            "Remember after a conversation",
            "Extract facts from a transcript and store them with one remember call.",
        ),
        (
            review_conflicts,
            "review-conflicts",
            "Review conflicts",
            "Find contradictions and clashing facts and resolve them with evidence.",
        ),
    ):
        server.add_prompt(
            CheckedPrompt.from_function(fn, name=name, title=title, description=description)
        )


def _version() -> str:
    """doxa's installed version, read from the header of its metadata: ``importlib.metadata``'s
    ``version`` parses the whole file, the README as its description included (about 3 ms of
    every start)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        found = distribution("doxa")
    except PackageNotFoundError:
        return "0.0.0"
    # As importlib reads it: an egg-info (a source tree's) holds PKG-INFO instead.
    text = found.read_text("METADATA") or found.read_text("PKG-INFO") or ""
    header = text.partition("\n\n")[0]  # the description follows the first blank line
    for line in header.splitlines():
        key, _, value = line.partition(":")
        if key == "Version":
            return value.strip()
    return "0.0.0"
