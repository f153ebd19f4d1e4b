"""``doxa export``, ``doxa import`` and ``doxa backup``: the memory as a file and back, and
a copy of the data directory taken while a server runs.

Export and backup reach the memory as a server does (``doxa.store.sharing``): through the
server that owns the data directory, which writes the file or the copy with its writers held
off, or in this process when none does. Import writes the graph directly and so refuses while
a server owns the directory (``doxa.store.importing``). The file format is described in
``doxa.store.exporting``.

``export -`` (and ``--judgements -``) writes to standard output, as ``import -`` reads
standard input; what was written is then said on stderr.

Exit codes: 0 done, 1 refused or failed (the message says why).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from doxa.server.settings import Settings
from doxa.server.tool_commands import CommandError, add_common, counted

COMMANDS = ("export", "import", "backup")


def _path(text: str) -> Path:
    """A path argument; an empty one is refused (``Path("")`` would mean the working
    directory: ``--markdown ""`` wrote its files there)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("give a path, not an empty string")
    return Path(text)


#: A FILE of ``export`` or ``--judgements`` that means standard output, as ``import -``
#: reads standard input: ``doxa export - | doxa import - --data-dir copy``.
STDOUT = "-"


def _to_stdout(path: Path | None) -> bool:
    return path is not None and str(path) == STDOUT


def _directory(text: str) -> Path:
    """A directory argument: a path, and not ``-``, which names one stream, not a folder of
    files (``--markdown -`` made a directory named ``-``)."""
    if text.strip() == STDOUT:
        raise argparse.ArgumentTypeError(
            "- (standard output) holds one stream, not a folder of files; name a directory"
        )
    return _path(text)


def add_parsers(commands: Any) -> None:
    """Add ``export``, ``import`` and ``backup`` to the ``doxa`` parser's subcommands."""
    export = commands.add_parser("export", help="write the whole memory as JSON Lines")
    export.add_argument(
        "file", nargs="?", type=_path, help="the .jsonl file to write (-: standard output)"
    )
    export.add_argument(
        "--markdown",
        type=_directory,
        metavar="DIR",
        help="also one Markdown file per entity, for people",
    )
    export.add_argument(
        "--judgements",
        type=_path,
        metavar="FILE",
        help="the judged results, for rankers (besides the memory's FILE, when given;"
        " -: standard output)",
    )
    importing = commands.add_parser("import", help="read an export file into the memory")
    importing.add_argument(
        "file", type=_path, help="a file written by doxa export (-: standard input)"
    )
    backup = commands.add_parser("backup", help="copy the data directory, consistently")
    backup.add_argument("target", type=_directory, help="a new or empty directory")
    for parser in (export, importing, backup):
        add_common(parser)


def export_command(settings: Settings, args: argparse.Namespace) -> int:
    """Run ``export``, ``import`` or ``backup`` as ``args`` say."""
    from doxa.server.tool_commands import quiet, require_memory
    from doxa.store.errors import MemoryStoreError

    quiet()
    try:
        if args.command == "import":
            return _import(settings, args.file, args.json)
        require_memory(settings)
        if args.command == "backup":
            return _report(_shared(settings, "backup", args.target), args.json, "backed up to")
        data_dir = Path(settings.store.data_dir).expanduser().resolve()
        both = (args.file, args.judgements)
        if _to_stdout(args.file) and _to_stdout(args.judgements):
            raise CommandError("FILE and --judgements both name -; give each its own")
        files = [
            p for p in zip(both, ("FILE", "--judgements"), strict=True) if not _to_stdout(p[0])
        ]
        for path, what in (*files, (args.markdown, "--markdown")):
            # Written over the memory's own files, the export destroyed what it read.
            if path is not None and data_dir in (path.resolve(), *path.resolve().parents):
                raise CommandError(
                    f"{what}: {path} lies inside the data directory {data_dir}; choose another"
                )
        for path, what in files:
            if path is not None and path.is_dir():
                raise CommandError(f"{what}: {path} is a directory; name a file to write")
            if path is not None and not path.parent.is_dir():
                raise CommandError(f"cannot write {path}: there is no directory {path.parent}")
        if args.markdown is not None and args.markdown.exists() and not args.markdown.is_dir():
            # Before anything is written: the file was, then the pages failed ([Errno 17]).
            raise CommandError(f"--markdown {args.markdown} is a file; give a directory")
        if None not in both and both[0].resolve() == both[1].resolve():
            raise CommandError(f"FILE and --judgements both name {args.file}; give each its own")
        # Standard output carries an export or the judgements alone: what was done is said
        # on stderr then, so `doxa export - | doxa import -` reads a clean file.
        summary = sys.stderr if any(_to_stdout(p) for p in both) else sys.stdout
        judged = None
        if args.judgements is not None:
            from doxa.server.judgements_command import say_judgements, write_judgements

            judged = write_judgements(settings, args.judgements)
            if judged is None:
                return 1
            alone = args.file is None and args.markdown is None
            if alone or not args.json:
                say_judgements(judged, args.json, summary)
            if alone:
                return 0
        if args.file is None and args.markdown is None:
            said = "give the FILE to write, --markdown DIR or --judgements FILE"
            print(f"doxa export: {said}", file=sys.stderr)
            return 1
        # With --json, one document says all that was written: the judgements' own line
        # before the export's JSON left nothing a JSON reader could parse.
        try:
            return _export(settings, args.file, args.markdown, args.json, summary, judged)
        except (CommandError, MemoryStoreError, OSError) as error:
            if judged is None or not args.json:
                raise  # none written, or already said
            sent = "sent to standard output" if _to_stdout(args.judgements) else "written to"
            where = "" if _to_stdout(args.judgements) else f" {args.judgements}"
            raise CommandError(f"{error}; the judgements were {sent}{where}") from None
    except BrokenPipeError:
        raise  # the reader of standard output went away: main's to end quietly
    except (CommandError, MemoryStoreError, OSError) as error:
        print(f"doxa {args.command}: {error}", file=sys.stderr)
        return 1


def _pages_failed(markdown: Path, error: OSError, file: Path | None, piped: bool) -> str:
    """What to say when the pages of ``--markdown`` could not be written, the export's
    ``file`` done (written, or to be sent to standard output: then it is not)."""
    where = (
        f" ({error.filename})" if error.filename and str(error.filename) != str(markdown) else ""
    )
    why = f"{error.strerror or error}{where}"
    pages = f"--markdown {markdown}: the pages were not written ({why})"
    if file is None:
        return pages
    if piped:
        return f"{pages}; nothing was sent to standard output"
    return f"wrote the export to {file}, but not the pages of --markdown {markdown} ({why})"


def _shared(settings: Settings, operation: str, path: Path) -> dict[str, Any]:
    from doxa.store.sharing import SharedMemory

    shared = SharedMemory(settings.store, trains=False)
    try:
        result: dict[str, Any] = getattr(shared, operation)(path)
        return result
    finally:
        shared.close()


def _export(
    settings: Settings,
    file: Path | None,
    markdown: Path | None,
    as_json: bool,
    summary: TextIO,
    judged: dict[str, Any] | None = None,
) -> int:
    """Write the export to ``file`` (``-``: standard output) and the pages to ``markdown``;
    say what was written on ``summary`` (with ``as_json``, ``judged``: the judgements
    written before, under ``judgements``)."""
    began = time.perf_counter()
    piped = _to_stdout(file)
    with tempfile.TemporaryDirectory() as scratch:
        # Standard output gets the file once it is whole (the owner writes it, maybe in
        # another process, and only to a path): an export that fails sends nothing.
        target = Path(scratch) / "memory.jsonl" if file is None or piped else file
        header = _shared(settings, "export", target)
        if file is not None:
            header["file"], header["bytes"] = str(file), target.stat().st_size
        if markdown is not None:
            from doxa.server.markdown_export import write_markdown

            header["markdown"] = str(markdown)
            try:
                header["markdown_files"] = write_markdown(target, markdown)
            except OSError as error:
                # After FILE: a bare "[Errno 2] …" left unsaid that the export was written.
                raise CommandError(_pages_failed(markdown, error, file, piped)) from None
        if piped:
            sys.stdout.flush()
            with target.open("rb") as written:
                shutil.copyfileobj(written, sys.stdout.buffer, 1 << 20)
            sys.stdout.buffer.flush()
        header["seconds"] = round(time.perf_counter() - began, 2)
    if as_json:
        import json

        if judged is not None:
            header["judgements"] = judged
        print(json.dumps(header, indent=2), file=summary)
        return 0
    total = sum(header["counts"].values())
    where = [] if file is None else ["standard output" if piped else str(file)]
    if markdown is not None:
        files = header["markdown_files"]
        where.append(f"{markdown}/ ({counted(files, 'Markdown file')})")
    said = f"exported {counted(total, 'object')} to {' and '.join(where)} in {header['seconds']} s"
    print(said, file=summary)
    return 0


def _import(settings: Settings, file: Path, as_json: bool) -> int:
    from doxa.store.importing import import_file

    began = time.perf_counter()

    def say(line: str) -> None:
        print(line, file=sys.stderr)

    if str(file) == "-":
        # Standard input, read whole first: the file is checked whole before anything is
        # written, and read again to write it.
        with tempfile.TemporaryDirectory(prefix="doxa-import-") as folder:
            copy = Path(folder) / "stdin.jsonl"
            with copy.open("wb") as out:
                shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
            done = import_file(settings.store, copy, say, name="stdin")
    else:
        done = import_file(settings.store, file, say)
    seconds = round(time.perf_counter() - began, 2)
    if as_json:
        import json

        print(json.dumps({"created": done.created, "skipped": done.skipped, "seconds": seconds}))
        return 0
    created, skipped = sum(done.created.values()), sum(done.skipped.values())
    if created == 0 and skipped:
        every = counted(skipped, "object")
        print(f"nothing imported: all {every} already there, skipped in {seconds} s")
        return 0
    print(
        f"imported {counted(created, 'object')} ({skipped} already there, skipped) in {seconds} s"
    )
    return 0


def _report(result: dict[str, Any], as_json: bool, verb: str) -> int:
    if as_json:
        import json

        print(json.dumps(result, indent=2))
    else:
        files, size = counted(result["files"], "file"), counted(result["bytes"], "byte")
        print(f"{verb} {result['target']}: {files}, {size}")
    return 0
