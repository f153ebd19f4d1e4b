"""The tools as commands: ``doxa remember``, ``recall``, ``about``, ``conflicts``,
``evidence``, ``feedback``, ``forget``, and ``doxa stats``.

Each command calls its tool through an in-process MCP server, so the arguments are checked
by the tool's own validation and the answer is the tool's. The memory is reached as a
server reaches it (``doxa.store.sharing``): this process opens the data directory when no
server owns it, and otherwise relays to the server that does. Output is for people; with
``--json`` it is the tool's structured answer.

Exit codes: 0 done, 1 the tool refused (bad input, named) or the memory could not be reached.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
from pathlib import Path
from typing import Any

from doxa.server import flag_names
from doxa.server.settings import Settings

#: Command -> the tool it runs.
TOOLS = {
    "remember": "remember",
    "recall": "recall",
    "about": "about",
    "conflicts": "find_conflicts",
    "evidence": "cite_evidence",
    "feedback": "feedback",
    "forget": "forget",
}
COMMANDS = (*TOOLS, "stats")

#: ``--embedder``'s help, on every command that takes it.
EMBEDDER_HELP = "sentence-transformers (the model; default) or hash (fast, meaningless: tests)"


def add_common(parser: argparse.ArgumentParser) -> None:
    """The flags every memory command takes: where the memory is, and how to print."""
    parser.add_argument("--data-dir", help="memory directory (default: the user data dir)")
    parser.add_argument("--embedder", choices=["sentence-transformers", "hash"], help=EMBEDDER_HELP)
    parser.add_argument("--model", help="sentence-transformers model name or path")
    parser.add_argument("--config", type=Path, help="a TOML file of settings")
    parser.add_argument("--json", action="store_true", help="print JSON")


def add_parsers(commands: Any) -> None:
    """Add the tool commands and ``stats`` to the ``doxa`` parser's subcommands."""
    remember = commands.add_parser("remember", help="store an observation (the remember tool)")
    remember.add_argument("text", nargs="?", help="one or two sentences")
    remember.add_argument("--topic", action="append", dest="topics", help="repeatable")
    remember.add_argument("--agent", help="who believes it (default: the configured agent)")
    remember.add_argument("--confidence", help='exact decimal 0..1, e.g. "0.8"')
    remember.add_argument("--observed-at", help="ISO 8601; default now")
    remember.add_argument("--source", help="a URL, a person, a file")
    remember.add_argument("--episode", help="conversation id")
    remember.add_argument(
        "--fact",
        nargs=3,
        metavar=("SUBJECT", "PREDICATE", "OBJECT"),
        help='the fact the text states: Alice "lives in" Lyon',
    )
    remember.add_argument("--valid-from", help="the fact's start, ISO 8601")
    remember.add_argument("--valid-until", help="the fact's end, ISO 8601")
    remember.add_argument("--cardinality", choices=["one", "many"], help="of the predicate")
    remember.add_argument(
        "--supports", action="append", metavar="BELIEF[=WEIGHT]", help="repeatable"
    )
    remember.add_argument("--contradicts", action="append", metavar="ID", help="repeatable")
    remember.add_argument("--record", help='JSON: {"type": "Track", "fields": {...}}')
    remember.add_argument(
        "--memories", type=Path, help="a JSON file of many memories (-: standard input)"
    )
    recall = commands.add_parser("recall", help="search the memory (the recall tool)")
    recall.add_argument("query", nargs="?", default="", help="may be empty with a filter")
    recall.add_argument("--agent", help="only what this agent believes")
    recall.add_argument("--topic", action="append", dest="topics", help="repeatable")
    for name in ("subject", "predicate", "object"):
        recall.add_argument(f"--{name}", help=f"fact {name}")
    recall.add_argument("--episode", help="only what was remembered in this episode")
    recall.add_argument(
        "--where", help='record fields as JSON, e.g. {"album_id": 176, "@type": "Track"}'
    )
    recall.add_argument("--min-confidence", help='exact decimal, e.g. "0.8"')
    recall.add_argument("--as-of", help="ISO 8601: what was true then")
    recall.add_argument("--known-at", help="ISO 8601: what the memory held then")
    recall.add_argument(
        "--include-superseded",
        action="store_true",
        default=None,
        help="also replaced facts (marked current: false)",
    )
    recall.add_argument("--limit", type=int, help="1..100 (default 10; with --all: all)")
    recall.add_argument(
        "--order-by",
        choices=["relevance", "confidence", "newest", "oldest"],
        help="default relevance; the others sort the most relevant (no query: all that match)",
    )
    recall.add_argument("--explain", action="store_true", default=None, help="scores and ids")
    recall.add_argument(
        "--all",
        action="store_true",
        default=None,
        dest="everything",
        help="list every observation, newest first (no query or filter)",
    )
    about = commands.add_parser("about", help="one entity at a glance (the about tool)")
    about.add_argument("name", help="an entity: a fact's subject or object, or a topic")
    about.add_argument("--as-of", help="ISO 8601: what was true then")
    about.add_argument("--known-at", help="ISO 8601: as held then")
    conflicts = commands.add_parser("conflicts", help="disagreements (find_conflicts)")
    conflicts.add_argument("--agent", help="only those involving this agent")
    conflicts.add_argument("--other-agent", help="with --agent: only between the two")
    conflicts.add_argument("--topic", help="only those mentioning this topic")
    conflicts.add_argument("--known-at", help="ISO 8601: what the memory held then")
    conflicts.add_argument("--limit", type=int, help="1..1000 (default 50)")
    evidence = commands.add_parser("evidence", help="why a belief is held (cite_evidence)")
    evidence.add_argument("id", nargs="?", help="an observation or belief id")
    evidence.add_argument("--agent", help="with --unsupported: whose beliefs")
    evidence.add_argument(
        "--unsupported",
        action="store_true",
        default=None,
        help="list beliefs without evidence (--agent's; default: the configured agent's)",
    )
    evidence.add_argument("--known-at", help="ISO 8601: what the memory held then")
    feedback = commands.add_parser("feedback", help="judge a recall (the feedback tool)")
    feedback.add_argument("recall_id", help="the id recall printed (rec_…)")
    feedback.add_argument("--accepted", action="append", metavar="ID", help="repeatable")
    feedback.add_argument("--rejected", action="append", metavar="ID", help="repeatable")
    feedback.add_argument(
        "--none",
        action="store_true",
        default=None,
        help="none of its results helped (each counts an impression, none a hit)",
    )
    forget = commands.add_parser("forget", help="retract or purge (the forget tool)")
    forget.add_argument("id", help="observation id")
    forget.add_argument(
        "--mode",
        choices=["retract", "purge"],
        help="retract (default: kept for audit) or purge (deleted with its beliefs and links)",
    )
    forget.add_argument("--agent", help="who forgets (default: the configured agent)")
    stats = commands.add_parser("stats", help="counts of everything and the data's size")
    for parser in (remember, recall, about, conflicts, evidence, feedback, forget, stats):
        add_common(parser)
    for command, parser in zip(
        COMMANDS, (remember, recall, about, conflicts, evidence, feedback, forget), strict=False
    ):
        flag_names.learn(command, parser)


#: Flags that are no tool argument.
_NOT_ARGUMENTS = {"command", "data_dir", "embedder", "model", "config", "json"}


def arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The tool's arguments from the command's flags: only those given, so the tool's own
    defaults apply; JSON flags parsed (the tool names a bad one)."""
    given = {k: v for k, v in vars(args).items() if k not in _NOT_ARGUMENTS and v is not None}
    if args.command == "forget":
        given.pop("agent", None)  # the configured agent forgets (--agent sets it)
    if args.command == "remember":
        if "memories" in given and ("text" in given or "record" in given):
            raise CommandError("give TEXT or --record (one memory), or --memories (many)")
        if not {"text", "record", "memories"} & given.keys():
            raise CommandError("give the TEXT to remember, a --record, or --memories FILE for many")
        fact = given.pop("fact", None)
        extra = {k: given.pop(k, None) for k in ("valid_from", "valid_until", "cardinality")}
        if fact is not None:
            given["fact"] = {
                "subject": fact[0],
                "predicate": fact[1],
                "object": fact[2],
                **{k: v for k, v in extra.items() if v is not None},
            }
        else:
            named = [k for k, v in extra.items() if v is not None]
            if named:  # it would be dropped: there is no fact to hold it
                flag = "--" + named[0].replace("_", "-")
                raise CommandError(
                    f"{flag} belongs to a fact: give --fact SUBJECT PREDICATE OBJECT too"
                )
        if "supports" in given:
            given["supports"] = [_support(s) for s in given["supports"]]
        if "memories" in given:
            given["memories"] = _json(_text_of(given["memories"], "--memories"), "--memories")
        if "record" in given:
            given["record"] = _json(given["record"], "--record")
    if args.command == "feedback":
        # A recall is judged once: a bare `doxa feedback rec_…` would judge it empty.
        nothing = given.pop("none", None)
        judged = "accepted" in given or "rejected" in given
        if nothing and judged:
            raise CommandError("--none judges that nothing helped: give it without ids")
        if not nothing and not judged:
            raise CommandError(
                "give --accepted or --rejected ids, or --none if nothing in the recall helped"
                " (a recall is judged once)"
            )
    if args.command == "evidence":
        _evidence_flags(given)
    if "where" in given:
        given["where"] = _json(given["where"], "--where")
    return given


def _evidence_flags(given: dict[str, Any]) -> None:
    """Refuse what cite_evidence refuses in words of its arguments, in the command's: which
    of an id and ``--unsupported`` (with ``--agent``) to give is said in prose there, where
    its argument names are not told from words (``flag_names``)."""
    cited = bool(str(given.get("id") or "").strip())
    agent = bool(str(given.get("agent") or "").strip())
    if given.get("unsupported"):
        if cited:
            raise CommandError("give either an id to cite or --unsupported, not both")
    elif not cited:
        raise CommandError(
            "give an observation or belief id to cite, or --unsupported [--agent NAME] for"
            " beliefs without evidence"
        )
    elif agent:
        raise CommandError(
            "--agent names whose unsupported beliefs to list (with --unsupported); a citation"
            " of an id names every believer: leave --agent out"
        )


class CommandError(Exception):
    """A flag that cannot become a tool argument (named)."""


def _unmade(data_dir: Path) -> None:
    """Take away the memory a refused ``remember`` made where there was none (bad input
    writes nothing, and a mistyped ``--data-dir`` leaves nothing behind), unless another
    process started serving it meanwhile."""
    from doxa.store.sharing import Ownership

    ownership = Ownership(data_dir)
    if ownership.try_acquire():
        try:
            shutil.rmtree(data_dir, ignore_errors=True)
        finally:
            ownership.release()


def _support(text: str) -> dict[str, str]:
    belief, said, weight = text.partition("=")
    if said and not weight.strip():  # "bel_x=": a weight meant, and lost to the default
        raise CommandError(f"--supports {text}: give a weight after '=' (bel_…=0.6), or none")
    return {"belief_id": belief, "weight": weight} if said else {"belief_id": belief}


def _text_of(path: Path, flag: str) -> str:
    """The text of the file ``path`` (``-``: standard input)."""
    try:
        held = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
        return held.decode("utf-8")
    except OSError as error:
        raise CommandError(f"{flag}: cannot read {path} ({error.strerror})") from None
    except UnicodeDecodeError as error:
        where = "standard input" if str(path) == "-" else path
        raise CommandError(f"{flag}: {where} is not UTF-8 text (byte {error.start + 1})") from None


def _json(text: str, flag: str) -> Any:
    # Here, not at the top: its module imports the MCP SDK (a second), which `doxa stats`,
    # `export` or `backup` never use.
    from doxa.server.exact import exact_loads

    try:
        return exact_loads(text)
    except (ValueError, RecursionError) as error:
        raise CommandError(f"{flag}: not JSON ({error})") from None


def tool_command(settings: Settings, args: argparse.Namespace) -> int:
    """Run one tool command and print its answer."""
    quiet()
    name = f"doxa {args.command}"
    data_dir = Path(settings.store.data_dir).expanduser()
    new = not data_dir.exists()
    try:
        if args.command != "remember":
            require_memory(settings)
        if args.command == "stats":
            result = stats(settings)
        elif args.command == "recall" and args.everything:
            result = _everything(settings, args)
        else:
            try:
                result = call_tool(settings, TOOLS[args.command], arguments(args))
            except ToolRefused as refused:  # in the tool's argument names: told in flags
                told = flag_names.flagged(args.command, str(refused))
                if args.command == "recall" and "must not be empty unless a filter" in told:
                    # The tool names its filters; a person here may only want to see it all.
                    told += "; --all lists every observation"
                raise ToolRefused(told) from None
    except (CommandError, ToolRefused) as error:
        if new and data_dir.exists():
            _unmade(data_dir)
        print(f"{name}: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        if isinstance(result.get("note"), str):  # told in the flags typed, as a refusal is
            result = {**result, "note": flag_names.flagged(args.command, result["note"])}
        print(render(args.command, result))
    return 0


def no_memory(settings: Settings, command: str) -> bool:
    """True, having said so on stderr, when ``command`` needs a memory and there is none."""
    try:
        require_memory(settings)
    except CommandError as error:
        print(f"doxa {command}: {error}", file=sys.stderr)
        return True
    return False


def require_memory(settings: Settings) -> None:
    """Refuse a command that needs a memory where there is none: opening the directory would
    create an empty one, so a mistyped ``--data-dir`` would leave a stray memory behind.

    Raises:
        CommandError: the data directory holds no memory.
    """
    data_dir = Path(settings.store.data_dir).expanduser()
    if not (data_dir / "graph").exists():
        raise CommandError(
            f"no memory in {data_dir}; check --data-dir (or DOXA_DATA_DIR), or remember"
            " something first"
        )


def _everything(settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    """``doxa recall --all``: the whole memory, newest first (``doxa.server.listing``)."""
    from doxa.server.listing import listing

    given = arguments(args)
    limit = given.pop("limit", None)
    given.pop("everything")
    if not given.get("query"):
        given.pop("query", None)
    if given:
        name = next(iter(given))
        flag = {"query": "a query", "topics": "--topic"}.get(name, "--" + name.replace("_", "-"))
        raise CommandError(
            f"--all lists everything newest first, so {flag} does not apply; drop --all to search"
        )
    if limit is not None and limit < 1:
        raise CommandError(f"--limit: must be at least 1, got {limit}")
    from doxa.store.errors import MemoryStoreError

    try:
        return listing(settings, limit)
    except MemoryStoreError as error:
        raise ToolRefused(str(error)) from None


#: The loggers ``quiet`` changed, with their levels before: ``loud_again`` puts them back.
_QUIETED: dict[str, int] = {}


def quiet() -> None:
    """Only warnings on stderr: the owner-or-relay notes are for servers' logs; a refusal
    at warm-up is the command's own error, printed once by it."""
    for name in ("doxa", "mcp"):  # the SDK logs each refused call at INFO: said once below
        logger = logging.getLogger(name)
        _QUIETED.setdefault(name, logger.level)
        logger.setLevel(max(logger.getEffectiveLevel(), logging.WARNING))
    for name in _REFUSING:
        logging.getLogger(name).addFilter(_refusal_said_by_command)


def loud_again() -> None:
    """Undo ``quiet``, once a command is done: ``main``'s caller may log on (a test, or a
    program running commands before it serves)."""
    for name, level in _QUIETED.items():
        logging.getLogger(name).setLevel(level)
    _QUIETED.clear()
    for name in _REFUSING:
        logging.getLogger(name).removeFilter(_refusal_said_by_command)


#: The loggers that log a refusal every call of a command then gets (and prints).
_REFUSING = ("doxa.store.memory", "doxa.store.sharing")


def _refusal_said_by_command(record: logging.LogRecord) -> bool:
    from doxa.store.memory import WARM_UP_FAILED
    from doxa.store.sharing import REACH_FAILED

    return record.msg not in (WARM_UP_FAILED, REACH_FAILED)


class ToolRefused(Exception):
    """The tool answered with an error: its message names the field and the fix."""


def call_tool(settings: Settings, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Call ``tool`` through an in-process MCP server on the configured memory."""
    import anyio

    async def run() -> dict[str, Any]:
        from mcp.client import Client

        from doxa.server.app import create_server
        from doxa.tools.context import MemoryContext

        # A one-shot command: it never retrains the ranker nor rewrites its file. Its memory
        # is closed here, as the server's lifespan closes one it opened itself.
        state = MemoryContext(settings.store, trains=False)
        try:
            async with Client(create_server(settings, state=state)) as client:
                result = await client.call_tool(tool, args)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(state.close)
        if result.is_error:
            text = "".join(getattr(c, "text", "") for c in result.content)
            raise ToolRefused(text.removeprefix(f"Error executing tool {tool}: "))
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    return anyio.run(run)


def stats(settings: Settings) -> dict[str, Any]:
    """Counts of every kind of object, and the sizes of the data directory's parts."""
    from doxa.store.errors import MemoryStoreError
    from doxa.store.sharing import SharedMemory

    shared = SharedMemory(settings.store, trains=False)
    try:
        counts = shared.tallies()
    except MemoryStoreError as error:
        raise ToolRefused(str(error)) from None
    finally:
        shared.close()
    data_dir = Path(settings.store.data_dir).expanduser()
    sizes = {part: _size(data_dir / part) for part in ("graph", "index")}
    sizes["total"] = _size(data_dir)
    return {"data_dir": str(data_dir), "counts": counts, "bytes": sizes}


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# ---- output for people ------------------------------------------------------------------------


def render(command: str, result: dict[str, Any]) -> str:
    """A tool's answer as text for people."""
    if command == "recall":
        return _recall(result) if "recall_id" in result else _listing(result)
    if command == "remember" and not result.get("remembered"):
        head = f"remembered {result['observation_id']} (belief {result['belief_id']})"
        return "\n".join([head, *_lines({k: v for k, v in result.items() if "_id" not in k})])
    if command == "stats":
        counts = result["counts"]
        lines = [f"data directory: {result['data_dir']}"]
        lines += [f"  {name:<16} {n}" for name, n in counts.items()]
        lines += [f"  {part + ' bytes':<16} {n}" for part, n in result["bytes"].items()]
        return "\n".join(lines)
    return "\n".join(_lines(result)) or "(nothing)"


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 (its last word takes the "s": "judged
    result")."""
    return f"{n} {noun}{'s' * (n != 1)}"


def _recall(result: dict[str, Any]) -> str:
    found = result["results"]
    lines = [f"recall {result['recall_id']}: {counted(len(found), 'result')}"]
    for item in found:
        lines += _item(item)
    if result.get("note"):
        lines.append(result["note"])
    return "\n".join(lines)


def _listing(result: dict[str, Any]) -> str:
    found, total = result["results"], result["total"]
    lines = [f"{len(found)} of {counted(total, 'observation')}, newest first"]
    for item in found:
        lines += _item(item)
    return "\n".join(lines)


def _item(item: dict[str, Any]) -> list[str]:
    """One result: id, confidence, time and text, then what else it carries, indented.

    A text's (or a value's) further lines hang under its first, deeper than the four spaces
    of what it carries: set at the start of a line, as they were, a text could forge a result
    of its own or an ``agents:`` line. That a fact is not current is said on a line of its
    own (``current: false``), where no text can say it: after the text, it followed the last
    line of a text of many, and a text ending "(not current)" looked it."""
    text = item.get("text") or ""
    record = item.get("record")
    if record:
        from doxa.store.records import validate

        # Read back as the record it was, so it prints as its text says it (Record.line);
        # kept: a text "1e400" kept before such numbers were refused is that text.
        text = f"{text} [{validate(record, kept=True).line()}]".strip()
    lines = hanging(
        f"{item['observation_id']}  {item['confidence']}  {item['observed_at']}  ", text
    )
    if not item.get("current", True):
        lines.append("    current: false")
    for key in ("source", "happened", "superseded_by", "score", "topics", "agents"):
        if item.get(key):
            lines += hanging(f"    {key}: ", _scalar(item[key]))
    if item.get("scores"):  # --explain: what the score is made of, learned parts included
        lines.append("    scores: " + ", ".join(f"{k} {v}" for k, v in item["scores"].items()))
    return lines


def hanging(head: str, value: str) -> list[str]:
    """``head`` and the first line of ``value``, its further lines (broken by any line break
    ``str.splitlines`` knows: a CR went back to the line's start) indented by ``head``'s
    width; an empty one left empty."""
    first, *rest = value.splitlines() or [""]
    indent = " " * len(head)
    return [head + first, *(indent + line if line.strip() else "" for line in rest)]


def _scalar(value: Any) -> str:
    """A value as the memory writes it: a boolean as JSON's (and a record's text's) ``true``
    and ``false``, not Python's ``True``; a list's values parted by commas."""
    if isinstance(value, list):
        return ", ".join(_scalar(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _lines(value: dict[str, Any], indent: str = "") -> list[str]:
    """Nested answers as indented ``key: value`` lines, empty values left out; a value's
    further lines hang under its first (see ``_item``): at a line's start, a text's
    ``believers:`` line forged a believer in ``doxa evidence``."""
    out: list[str] = []
    for key, item in value.items():
        if item in (None, "", [], {}):
            continue
        if isinstance(item, dict):
            out.append(f"{indent}{key}:")
            out.extend(_lines(item, indent + "  "))
        elif isinstance(item, list) and any(isinstance(x, dict) for x in item):
            out.append(f"{indent}{key}:")
            for entry in item:
                nested = _lines(entry, indent + "    ") if isinstance(entry, dict) else []
                if nested:
                    out.append(f"{indent}  - {nested[0].strip()}")
                    out.extend(nested[1:])
                else:
                    out.extend(hanging(f"{indent}  - ", _scalar(entry)))
        else:
            out.extend(hanging(f"{indent}{key}: ", _scalar(item)))
    return out
