"""The ``doxa`` command: ``doxa serve`` runs the MCP server; ``doxa config CLIENT`` prints a
ready client configuration with absolute paths for this install; ``doxa check``, ``repair``
and ``prune`` look after a data directory; ``doxa token`` manages the bearer tokens of the
HTTP and SSE transports; ``doxa remember``, ``recall`` and the others mirror the tools, and
``stats``, ``export``, ``import`` and ``backup`` show, move and copy the whole memory."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import faulthandler
import json
import logging
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from doxa.server.settings import Settings, SettingsError, load_settings, split_list

log = logging.getLogger("doxa")

CLIENTS = ("claude-desktop", "claude-code", "cursor")


def _parser(serve_only: bool = False) -> argparse.ArgumentParser:
    """The command line's parser; with ``serve_only``, one that knows ``serve`` alone: it
    parses a ``serve`` command line as the whole one does, without building the twenty other
    commands' parsers (about 5 ms of a server's start)."""
    from doxa.server.tool_commands import EMBEDDER_HELP

    parser = argparse.ArgumentParser(
        prog="doxa", description="doxa: a typed, time-aware memory for LLM agents, over MCP."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _serve_parser(commands, EMBEDDER_HELP)
    if not serve_only:
        _other_parsers(commands, EMBEDDER_HELP)
    _own_errors(commands)
    return parser


def _serve_parser(commands: Any, embedder_help: str) -> None:
    serve = commands.add_parser("serve", help="run the MCP server (stdio by default)")
    serve.add_argument("--transport", choices=["stdio", "sse", "http"], help="default: stdio")
    serve.add_argument("--host", help="bind address for sse/http (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port for sse/http (default 8765)")
    serve.add_argument(
        "--workers", type=int, help="processes answering http on the port (default 1)"
    )
    serve.add_argument("--data-dir", help="memory directory (default: the user data dir)")
    serve.add_argument("--agent", help="agent that believes what is remembered (default: default)")
    serve.add_argument("--embedder", choices=["sentence-transformers", "hash"], help=embedder_help)
    serve.add_argument("--model", help="sentence-transformers model name or path")
    serve.add_argument("--config", type=Path, help="a TOML file overriding configs/default.toml")
    serve.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="the lowest level logged (default INFO)",
    )
    serve.add_argument(
        "--auth", choices=["auto", "tokens", "none"], help="bearer tokens for sse/http (auto)"
    )
    serve.add_argument("--allowed-hosts", help="extra Host headers for sse/http, comma-separated")
    serve.add_argument("--allowed-origins", help="extra Origin headers, comma-separated")


def _other_parsers(commands: Any, embedder_help: str) -> None:
    config = commands.add_parser("config", help="print a client configuration for this install")
    config.add_argument("client", choices=CLIENTS, help="the client to configure")
    config.add_argument("--data-dir", help="memory directory to put in the configuration")
    config.add_argument(
        "--agent", help="the agent name the client's memories are kept under (default: CLIENT)"
    )
    check = commands.add_parser(
        "check", help="report the health of a data directory (both stores, counts, orphans)"
    )
    repair = commands.add_parser("repair", help="rebuild the search index from the graph")
    repair.add_argument(
        "--force", action="store_true", help="rebuild even if the graph is empty and the index not"
    )
    repair.add_argument(
        "--set-aside-log",
        action="store_true",
        help="move a write-ahead log Kùzu cannot replay aside first (its writes are lost)",
    )
    for maintenance in (check, repair):
        maintenance.add_argument("--data-dir", help="memory directory (default: the user data dir)")
        maintenance.add_argument(
            "--embedder", choices=["sentence-transformers", "hash"], help=embedder_help
        )
        maintenance.add_argument("--model", help="sentence-transformers model name or path")
        maintenance.add_argument("--config", type=Path, help="a TOML file of settings")
        maintenance.add_argument("--json", action="store_true", help="print JSON")
    prune = commands.add_parser(
        "prune", help="retire what nobody uses and merge near-duplicates (a dry run by default)"
    )
    prune.add_argument("--apply", action="store_true", help="retire them (default: only list)")
    prune.add_argument("--data-dir", help="memory directory (default: the user data dir)")
    prune.add_argument("--embedder", choices=["sentence-transformers", "hash"], help=embedder_help)
    prune.add_argument("--model", help="sentence-transformers model name or path")
    prune.add_argument("--config", type=Path, help="a TOML file of settings ([store.prune])")
    prune.add_argument("--json", action="store_true", help="print JSON")
    view = commands.add_parser(
        "view", help="write the memory as one HTML page: entities, facts, timeline, conflicts"
    )
    view.add_argument(
        "--out", type=Path, help="the page to write (default: doxa-memory.html; -: standard output)"
    )
    view.add_argument("--data-dir", help="memory directory (default: the user data dir)")
    view.add_argument("--embedder", choices=["sentence-transformers", "hash"], help=embedder_help)
    view.add_argument("--model", help="sentence-transformers model name or path")
    view.add_argument("--config", type=Path, help="a TOML file of settings")
    _token_parser(commands)
    _memory_parsers(commands)


def _own_errors(commands: Any) -> None:
    """Have each command's parser known to its arguments, so a flag it does not take is
    refused with that command's usage (argparse names the top-level one)."""
    for command in commands.choices.values():
        command.set_defaults(command_parser=command)


def _parsed(argv: list[str] | None) -> argparse.Namespace:
    given = sys.argv[1:] if argv is None else argv
    args, unknown = _parser(serve_only=given[:1] == ["serve"]).parse_known_args(given)
    command = args.command_parser
    del args.command_parser  # the arguments are relayed to a running server as they are
    if unknown:
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _memory_parsers(commands: Any) -> None:
    """The tools as commands, stats, export, import and backup (defined with their code)."""
    from doxa.server import export_command, tool_commands

    tool_commands.add_parsers(commands)
    export_command.add_parsers(commands)


def _token_parser(commands: Any) -> None:
    token = commands.add_parser("token", help="bearer tokens for the HTTP and SSE transports")
    actions = token.add_subparsers(dest="token_command", required=True)
    create = actions.add_parser("create", help="create a token and print it (once)")
    create.add_argument("--agent", required=True, help="the agent the token acts as")
    flags = create.add_mutually_exclusive_group()
    flags.add_argument("--read-only", action="store_true", help="may only read")
    flags.add_argument(
        "--admin",
        action="store_true",
        help="may also forget other agents' observations and prune",
    )
    listing = actions.add_parser("list", help="list the tokens (never their secrets)")
    revoke = actions.add_parser("revoke", help="revoke a token at once")
    revoke.add_argument("id", help="the token's id, as `doxa token list` shows it")
    for action in (create, listing, revoke):
        action.add_argument("--data-dir", help="memory directory (default: the user data dir)")
        action.add_argument("--config", type=Path, help="a TOML file of settings")
        action.add_argument("--json", action="store_true", help="print JSON")
    _own_errors(actions)  # a token action's flags are its own, not token's


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {
        ("store", "data_dir"): getattr(args, "data_dir", None),
        ("store", "agent"): getattr(args, "agent", None),
        ("store", "embedding", "kind"): getattr(args, "embedder", None),
        ("store", "embedding", "model"): getattr(args, "model", None),
        ("server", "transport"): getattr(args, "transport", None),
        ("server", "host"): getattr(args, "host", None),
        ("server", "port"): getattr(args, "port", None),
        ("server", "workers"): getattr(args, "workers", None),
        ("server", "log_level"): getattr(args, "log_level", None),
        ("server", "auth"): getattr(args, "auth", None),
        ("server", "allowed_hosts"): _listed(getattr(args, "allowed_hosts", None)),
        ("server", "allowed_origins"): _listed(getattr(args, "allowed_origins", None)),
    }
    if getattr(args, "command", None) == "token":
        del overrides[("store", "agent")]  # token's --agent names the token's agent
    return load_settings(getattr(args, "config", None), os.environ, overrides)


def _listed(value: str | None) -> list[str] | None:
    return None if value is None else split_list(value)


def serve(settings: Settings) -> int:
    """Run the server on the configured transport until the client, Ctrl-C, SIGTERM or SIGHUP
    stops it; every way out closes the memory. Returns the exit status.

    Raises:
        SettingsError: the server must not start: ``workers`` asks for more than one process
            on stdio or SSE, ``doxa.server.access`` refuses, or the port cannot be taken.
    """
    import anyio

    from doxa.server.app import create_server
    from doxa.server.stdio import serve_stdio

    transport = settings.server.transport
    workers = settings.server.workers
    if workers > 1 and transport != "http":
        # Refused before anything opens, as any bad setting is.
        name, why = {
            "stdio": ("stdio", "its one client is the process that started the server"),
            "sse": ("SSE", "SSE keeps each session in the process that opened it"),
        }[transport]
        raise SettingsError(
            f"server.workers = {workers} needs --transport http: {why}; set workers = 1 for {name}"
        )
    if transport == "stdio":
        announce(settings)
        anyio.run(serve_stdio, create_server(settings))
        return 0
    from doxa.server.http_server import serve_http

    return serve_http(settings)  # announces once it may serve, and holds the port


def announce(settings: Settings) -> None:
    """Log that the server serves: only once nothing can refuse it any more."""
    log.info("doxa serving on %s, data in %s", settings.server.transport, settings.store.data_dir)


#: Where the project lives: what ``uvx --from`` runs when the install does not say.
REPOSITORY = "git+https://github.com/doxa-memory/doxa"


def client_config(client: str, data_dir: Path, agent: str | None = None) -> str:
    """A configuration snippet for ``client`` that starts this install's ``doxa serve``, the
    client's memories kept under the agent name ``agent`` (default: the client's name)."""
    command, args = serve_command()
    env = {"DOXA_DATA_DIR": str(data_dir), "DOXA_AGENT": agent or client}
    entry = {"command": command, "args": args, "env": env}
    if client == "claude-code":
        settings = " ".join(f"--env {shlex.quote(f'{k}={v}')}" for k, v in env.items())
        return (
            "# run once, in your project:\n"
            f"claude mcp add doxa {settings} -- {shlex.join([command, *args])}\n"
            "# or put this in .mcp.json at the project root:\n"
            + json.dumps({"mcpServers": {"doxa": entry}}, indent=2)
        )
    return json.dumps({"mcpServers": {"doxa": entry}}, indent=2)


def serve_command(prefix: str | None = None) -> tuple[str, list[str]]:
    """The command and arguments that start this install's server, by a path that lasts.

    pip and pipx installs have a ``doxa`` next to the interpreter, in a virtualenv that stays.
    ``uvx`` runs from an environment in uv's cache, which uv may remove or replace at any
    time: the lasting command is ``uvx`` itself, from where this install came from.
    """
    prefix = prefix or sys.prefix
    if _in_uv_cache(Path(prefix)):
        return "uvx", ["--from", installed_from(), "doxa", "serve"]
    executable = Path(prefix) / "bin" / "doxa"
    if not executable.exists():
        executable = Path(sys.executable).parent / "doxa"
    return str(executable if executable.exists() else "doxa"), ["serve"]


def _in_uv_cache(prefix: Path) -> bool:
    """Whether ``prefix`` is an environment uvx made in uv's cache: an ``archive-v*`` entry
    of the cache (wherever ``UV_CACHE_DIR`` puts it), made by uv (its ``pyvenv.cfg`` says)."""
    if not prefix.parent.name.startswith("archive-v"):
        return False
    if f"{os.sep}uv{os.sep}" in str(prefix):
        return True
    try:
        config = (prefix / "pyvenv.cfg").read_text(encoding="utf-8")
    except OSError:
        return False
    return any(line.split("=")[0].strip() == "uv" for line in config.splitlines())


def installed_from() -> str:
    """What this install was made from as pip writes it (``direct_url.json``): a git URL at
    its commit, or the project's repository when unknown."""
    from importlib import metadata

    try:
        recorded = metadata.distribution("doxa").read_text("direct_url.json")
        origin = json.loads(recorded or "{}")
    except (metadata.PackageNotFoundError, ValueError):
        return REPOSITORY
    vcs = origin.get("vcs_info")
    url = origin.get("url")
    if not isinstance(url, str):
        return REPOSITORY
    if isinstance(vcs, dict) and vcs.get("vcs") == "git":
        return f"git+{url}"
    if "dir_info" in origin and url.startswith("file://"):
        return url.removeprefix("file://")  # a local clone: uvx --from takes its path
    return REPOSITORY


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas (unless MALLOC_ARENA_MAX says otherwise).

    glibc gives threads that allocate their own arenas, up to 8 per core, and memory freed
    in one stays there: the database drivers' thread pools stranded about 140 MB of a server
    holding 100k memories. Two arenas serve a small server as fast.
    """
    if "MALLOC_ARENA_MAX" in os.environ:
        return
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL("libc.so.6").mallopt(_M_ARENA_MAX, arenas)


_M_ARENA_MAX = -8  # from glibc's malloc.h


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``doxa`` command."""
    # Recall's one matrix-vector product per query runs fastest on one BLAS thread; more
    # threads fight the model's own threads for the cores (p95 at 100k: 115 ms -> 32 ms).
    # Set before numpy is first imported; an explicit setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # Arrow's default mimalloc pool keeps what loading the store freed (about 180 MB at 100k
    # memories); the system allocator hands it back. Read when pyarrow is first imported.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    limit_malloc_arenas()
    args = _parsed(argv)
    try:
        return _run(args)
    except KeyboardInterrupt:
        # Ctrl-C: a traceback said nothing a user needs. What a write committed before it
        # stays, as after any stop (writes are atomic; `doxa check` tells).
        print(f"doxa {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`doxa config claude-code | head -1`): the rest was not
        # wanted. Later writes (the interpreter's own flush at exit) go nowhere instead.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        from doxa.server.tool_commands import loud_again

        loud_again()


def _data_dir_refused(args: argparse.Namespace, settings: Settings) -> int | None:
    """The exit code of a command refused, having said why, because its data directory is a
    file or lies under one; None when it is not. Asked before any command touches it: each
    failed there in its own way (a bare ``[Errno 17] File exists``, a traceback)."""
    from doxa.store.sharing import data_dir_refusal

    refused = data_dir_refusal(Path(settings.store.data_dir).expanduser())
    if refused is None:
        return None
    print(f"doxa {args.command}: {refused}", file=sys.stderr)
    # A setting that cannot be used, for those that take settings alone; the memory's
    # commands exit 1 when refused, as for a directory that holds no memory.
    return 2 if args.command in ("serve", "config", "token") else 1


def _run(args: argparse.Namespace) -> int:
    """Run the command ``args`` name."""
    try:
        settings = _settings(args)
    except SettingsError as error:
        print(f"doxa: {error}", file=sys.stderr)
        return 2
    # Logs go to stderr: on stdio, stdout carries the protocol.
    logging.basicConfig(
        stream=sys.stderr,
        level=settings.server.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    refused = _data_dir_refused(args, settings)
    if refused is not None:
        return refused
    if args.command == "config":
        data_dir = Path(settings.store.data_dir).expanduser().resolve()
        print(client_config(args.client, data_dir, args.agent))
        sys.stdout.flush()  # inside the try: a pipe closed early fails here, not at exit
        return 0
    if args.command in ("check", "repair"):
        from doxa.server.maintenance import check_command, repair_command

        if args.command == "check":
            return check_command(settings, args.json)
        return repair_command(settings, args.force, args.json, args.set_aside_log)
    if args.command == "prune":
        from doxa.server.prune_command import prune_command

        return prune_command(settings, args.apply, args.json)
    if args.command == "view":
        from doxa.server.view_command import view_command

        return view_command(settings, args.out)
    if args.command == "token":
        from doxa.server.token_commands import token_command

        return token_command(settings, args)
    if args.command != "serve":  # the memory's own commands
        from doxa.server.export_command import COMMANDS, export_command
        from doxa.server.tool_commands import tool_command

        command = export_command if args.command in COMMANDS else tool_command
        done = command(settings, args)
        sys.stdout.flush()  # inside main's try: a pipe closed early fails here, not at exit
        return done
    # A crash inside a native library (Kùzu, LanceDB, ONNX Runtime) kills the process with
    # no Python traceback; this writes every thread's stack to stderr first (the client's
    # log), so the call that met it can be named.
    faulthandler.enable()
    try:
        return serve(settings)
    except SettingsError as error:  # refused to serve (see doxa.server.access)
        print(f"doxa: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
