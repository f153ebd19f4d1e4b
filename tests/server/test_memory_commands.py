"""The tools as commands (``doxa remember``, ``recall``, ``about``, ``conflicts``,
``evidence``, ``feedback``, ``forget``, ``stats``) and ``doxa export``, ``import`` and
``backup``, run as a user runs them: on a data directory no server holds, and on one that
another process owns (an in-process owner here, a real ``doxa serve`` in the slow test)."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import kuzu
import pytest
from calls import LATER, ok, seed_bridge
from conftest import hash_settings
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from doxa.server.app import create_server
from doxa.server.cli import main
from doxa.server.markdown_export import write_markdown
from doxa.store import FactDraft, Memory, relay
from doxa.store.backup import UNFINISHED
from doxa.store.drafts import MemoryDraft
from doxa.store.exporting import write_export
from doxa.store.schema import MIGRATION_TABLE
from doxa.store.sharing import SharedMemory


class Doxa:
    """``doxa COMMAND ... --embedder hash --data-dir DIR`` in this process."""

    def __init__(self, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.data_dir = data_dir
        self.capsys = capsys

    def __call__(self, *args: str, data_dir: Path | None = None) -> tuple[int, str, str]:
        """Run the command; returns its exit code, stdout and stderr."""
        self.capsys.readouterr()  # what came before is not this command's
        where = ["--embedder", "hash", "--data-dir", str(data_dir or self.data_dir)]
        code = main([*args, *where])
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *args: str, data_dir: Path | None = None) -> Any:
        """Run the command with ``--json``; it must succeed. Returns the parsed answer."""
        code, out, err = self(*args, "--json", data_dir=data_dir)
        assert code == 0, err
        return json.loads(out)

    def counts(self, data_dir: Path | None = None) -> dict[str, int]:
        """``doxa stats --json``'s counts."""
        counts: dict[str, int] = self.json("stats", data_dir=data_dir)["counts"]
        return counts


@pytest.fixture
def doxa(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Doxa:
    return Doxa(tmp_path / "memory", capsys)


#: Where ``fill`` keeps, per test process, a data directory it filled and nobody opened since.
_FILLED: dict[str, Path] = {}


@pytest.fixture(autouse=True, scope="module")
def _filled_here(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    _FILLED["root"] = tmp_path_factory.mktemp("filled")
    yield
    _FILLED.clear()


def fill(data_dir: Path) -> dict[str, str]:
    """The bridge example (two agents, evidence, a contradiction), a fact replaced by a later
    one, and a judged recall: through a real MCP client, faster than one command each. Filled
    once per test process; a new ``data_dir`` gets a copy of that memory (filling took over a
    second a test), and the same ids."""
    if data_dir.exists():  # a memory is there already: fill it
        return _fill(data_dir)
    made = _FILLED["root"] / "memory"
    if not made.exists():
        ids = _fill(made)
        (_FILLED["root"] / "ids.json").write_text(json.dumps(ids), encoding="utf-8")
    shutil.copytree(made, data_dir)
    ids = json.loads((_FILLED["root"] / "ids.json").read_text(encoding="utf-8"))
    return {str(k): str(v) for k, v in ids.items()}


def _fill(data_dir: Path) -> dict[str, str]:
    async def run() -> dict[str, str]:
        async with Client(create_server(hash_settings(data_dir))) as client:
            ids = await seed_bridge(client)
            for city, month in (("Paris", "01"), ("Lyon", "06")):
                done = await ok(
                    client,
                    "remember",
                    text=f"Alice lives in {city}.",
                    fact={"subject": "Alice", "predicate": "lives in", "object": city},
                    observed_at=f"2024-{month}-01T00:00:00Z",
                )
                ids[city] = done["observation_id"]
            found = await ok(client, "recall", query="bridge route 9")
            await ok(client, "feedback", recall_id=found["recall_id"], accepted=[ids["closed"]])
            return ids

    return anyio.run(run)


def export_lines(path: Path) -> tuple[dict[str, Any], list[str]]:
    """An export file's header, and its other lines as written."""
    first, *rest = path.read_text(encoding="utf-8").splitlines()
    return json.loads(first), rest


@pytest.fixture
def owner(tmp_path: Path) -> Iterator[SharedMemory]:
    """A process owning ``tmp_path / "memory"`` (this one, as a server would): the commands
    must reach the memory through it."""
    shared = SharedMemory(hash_settings(tmp_path / "memory").store)
    shared.start()
    shared.stats()  # settled: this process owns the memory
    assert shared.owner
    yield shared
    shared.close()


# ---- the tools as commands ----------------------------------------------------------------


def test_remember_then_recall_prints_for_people_and_as_json(doxa: Doxa) -> None:
    code, out, err = doxa("remember", "The ferry leaves at noon.", "--topic", "harbour")
    assert code == 0, err
    head, topics = out.splitlines()
    assert head.startswith("remembered obs_") and "(belief bel_" in head
    assert topics == "topics: harbour"
    observation = head.split()[1]
    code, out, _ = doxa("recall", "ferry")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("recall rec_") and lines[0].endswith(": 1 result")
    assert lines[1].startswith(f"{observation}  1  ") and lines[1].endswith(
        "The ferry leaves at noon."
    )
    found = doxa.json("recall", "", "--topic", "harbour", "--explain")
    assert found["recall_id"].startswith("rec_")
    [item] = found["results"]
    assert item["observation_id"] == observation and item["topics"] == ["harbour"]
    assert item["confidence"] == "1" and item["agents"] == ["default"]


def test_a_record_prints_as_its_text_says_it(doxa: Doxa) -> None:
    record = {
        "type": "Invoice",
        "fields": {"total": 3.98, "customer": {"country": "Brazil"}, "tags": ["rock", "metal"]},
    }
    code, _, err = doxa("remember", "--record", json.dumps(record))
    assert code == 0, err
    code, out, _ = doxa("recall", "", "--where", '{"customer.country": "Brazil"}')
    assert code == 0
    assert out.splitlines()[1].endswith(
        "[Invoice: total=3.98, customer.country=Brazil, tags=[rock, metal]]"
    )


def test_a_fact_with_its_validity_is_remembered_from_flags(doxa: Doxa) -> None:
    done = doxa.json(
        "remember",
        "Bob manages the harbour.",
        "--fact",
        "Bob",
        "manages",
        "harbour",
        "--valid-from",
        "2024-03-01T00:00:00Z",
        "--confidence",
        "0.75",
        "--agent",
        "scout",
    )
    seen = doxa.json("about", "Bob")
    [value] = seen["facts"]["manages"]
    assert value["object"] == "harbour" and value["observation_id"] == done["observation_id"]
    assert value["confidence"] == "0.75" and value["agents"] == ["scout"]
    assert value["since"] == "2024-03-01T00:00:00Z"


def test_many_memories_are_remembered_from_a_json_file_or_none_if_one_is_bad(
    doxa: Doxa, tmp_path: Path
) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps([{"text": "One.", "topics": ["t"]}, {"text": "Two."}]))
    bad.write_text(json.dumps([{"text": "Three."}, {"text": "Four.", "confidence": "9"}]))
    done = doxa.json("remember", "--memories", str(good))
    assert [r.get("topics") for r in done["remembered"]] == [["t"], None]
    code, _, err = doxa("remember", "--memories", str(bad))
    assert code == 1 and "memories[1].confidence" in err
    latin = tmp_path / "latin-1.json"
    latin.write_bytes('[{"text": "Café."}]'.encode("latin-1"))
    code, _, err = doxa("remember", "--memories", str(latin))
    assert (code, err) == (1, f"doxa remember: --memories: {latin} is not UTF-8 text (byte 15)\n")
    code, _, err = doxa("remember", "--memories", str(tmp_path / "none.json"))
    assert code == 1 and err.endswith("none.json (No such file or directory)\n")
    assert doxa.json("recall", "--all")["total"] == 2


def test_about_lists_entities_mentioned_as_often_in_the_same_order_in_every_process(
    doxa: Doxa,
) -> None:
    # Tied ones came in the order of a set of strings, which Python's hash seed changes
    # from one process to the next: `doxa about hub` answered differently each run.
    topics = ["hub", "kiwi", "apple", "mango", "fig", "cherry", "lime", "date"]
    doxa.json("remember", "A note on fruit.", *(a for t in topics for a in ("--topic", t)))
    where = ["--embedder", "hash", "--data-dir", str(doxa.data_dir), "--json"]
    seen = []
    for seed in ("1", "2", "3", "4"):
        done = subprocess.run(
            [sys.executable, "-m", "doxa.server", "about", "hub", *where],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        seen.append([r["name"] for r in json.loads(done.stdout)["related"]])
    assert seen == [sorted(topics[1:])] * 4, seen


def test_about_conflicts_and_evidence_answer_as_the_tools_do(doxa: Doxa) -> None:
    ids = fill(doxa.data_dir)
    code, out, _ = doxa("about", "Alice")
    assert code == 0
    assert out.startswith("name: Alice\nsummary: Alice: lives in Lyon")
    assert f"observation_id: {ids['Lyon']}" in out
    code, out, _ = doxa("conflicts")
    assert code == 0
    assert "kind: contradiction" in out and out.rstrip().endswith("count: 1")
    found = doxa.json("conflicts", "--agent", "driver")
    [conflict] = found["conflicts"]
    assert {conflict["a"]["observation_id"], conflict["b"]["observation_id"]} == {
        ids["open"],
        ids["closed"],
    }
    assert doxa.json("conflicts", "--agent", "default")["count"] == 0
    cited = doxa.json("evidence", ids["closed"])
    assert [b["agent"] for b in cited["believers"]] == ["scout"]
    code, out, _ = doxa("evidence", ids["closed"])
    assert code == 0 and "citation: " in out and "believed by scout" in out
    unsupported = doxa.json("evidence", "--unsupported", "--agent", "driver")
    assert [u["observation_id"] for u in unsupported["unsupported"]] == [ids["open"]]


def test_feedback_and_forget_change_what_recall_returns(doxa: Doxa) -> None:
    ids = fill(doxa.data_dir)
    found = doxa.json("recall", "bridge")
    judged = doxa.json("feedback", found["recall_id"], "--accepted", ids["open"])
    assert judged["recall_id"] == found["recall_id"] and judged["accepted"] == [ids["open"]]
    # --explain prints what each score is made of: the acceptance shows for the same query.
    code, out, _ = doxa("recall", "bridge", "--explain", "--limit", "1")
    assert code == 0
    head, *details = out.splitlines()[1:]
    assert head.startswith(ids["open"])
    [scores] = [line for line in details if line.startswith("    scores: ")]
    assert "vector " in scores and "feedback 0.6" in scores
    code, out, _ = doxa("forget", ids["sign"])
    assert code == 0
    assert f"observation_id: {ids['sign']}\nmode: retract" in out
    left = doxa.json("recall", "bridge", "--limit", "50")
    assert ids["sign"] not in {r["observation_id"] for r in left["results"]}
    assert doxa.counts()["retracted"] == 1


def test_feedback_with_no_judgement_is_refused_and_none_judges_that_nothing_helped(
    doxa: Doxa,
) -> None:
    # A bare `doxa feedback rec_…` judged the recall empty, and a recall is judged once.
    ids = fill(doxa.data_dir)
    found = doxa.json("recall", "bridge")
    code, _, err = doxa("feedback", found["recall_id"])
    assert code == 1 and "give --accepted or --rejected ids, or --none" in err
    code, _, err = doxa("feedback", found["recall_id"], "--none", "--accepted", ids["open"])
    assert code == 1 and "--none judges that nothing helped" in err
    judged = doxa.json("feedback", found["recall_id"], "--none")
    assert judged == {"recall_id": found["recall_id"], "impressions": len(found["results"])}


def test_stats_counts_everything_and_the_data_directory_size(doxa: Doxa) -> None:
    fill(doxa.data_dir)
    found = doxa.json("stats")
    assert found["data_dir"] == str(doxa.data_dir)
    counts = found["counts"]
    assert counts["Observation"] == 5 and counts["facts"] == 2
    assert counts["Agent"] == 3 and counts["CONTRADICTS"] == 1 and counts["SUPERSEDES"] == 1
    # One result accepted; the judged recall's others were shown, not judged.
    assert counts["judged recalls"] == 1 and counts["judgements"] == 1 < counts["RETURNED"]
    assert found["bytes"]["total"] >= found["bytes"]["graph"] + found["bytes"]["index"] > 0
    code, out, _ = doxa("stats")
    assert code == 0
    assert out.splitlines()[0] == f"data directory: {doxa.data_dir}"
    assert "  Observation      5" in out.splitlines()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["remember", "Too sure.", "--confidence", "7"], "--confidence must be"),
        (["remember", "Bad time.", "--observed-at", "yesterday-ish"], "--observed-at must be"),
        (["remember", "--record", "{not json"], "--record: not JSON"),
        (["recall", "x", "--limit", "500"], "--limit must be"),
        # The tool names its arguments; the command names its flags.
        (["conflicts", "--other-agent", "x"], "--agent is required when --other-agent is given"),
        (["evidence"], "give an observation or belief id to cite, or --unsupported"),
        (["evidence", "obs_x", "--unsupported"], "an id to cite or --unsupported, not both"),
        (["evidence", "obs_x", "--agent", "x"], "leave --agent out"),
        (["remember"], "give the TEXT to remember, a --record, or --memories FILE"),
        (["remember", "Topic.", "--topic", "a", "--topic", " "], "the 2nd --topic must not"),
        (["remember", "F.", "--fact", " ", "is", "x"], "--fact SUBJECT must not be empty"),
        (
            [
                *("remember", "F.", "--fact", "a", "is", "x"),
                *("--valid-from", "2024-02-01T00:00:00Z", "--valid-until", "2024-01-01T00:00:00Z"),
            ],
            "--valid-until must be later than --valid-from",
        ),
        (["recall", "x", "--known-at", "later"], "--known-at must be an ISO 8601 time"),
        (["recall", "", "--limit", "3"], "unless a filter (--agent, --topic, --subject"),
        (["recall", "x", "--where", "[1"], "--where: not JSON"),
        (
            ["remember", "--record", '{"type": "T", "fields": {"v": NaN}}'],
            "--record: not JSON (NaN is no JSON number",
        ),
        (["recall", "x", "--where", '{"v": Infinity}'], "Infinity is no JSON number"),
        # A float cannot carry these: each arrives as its text, and was kept as that string.
        (
            ["remember", "--record", '{"type": "T", "fields": {"v": 1e400}}'],
            "record.fields.v is 1e400, a number too large for a float: more than 40 digits",
        ),
        (
            ["remember", "--record", '{"type": "T", "fields": {"v": [1, 1e-400]}}'],
            "record.fields.v[1] is 1e-400, a number too small for a float",
        ),
        # It was told to send a JSON number, as it had.
        (
            ["recall", "x", "--where", '{"v": {">": 1e399}}'],
            "where.v.> is 1e399, a number too large to compare: a bound is a number of at most",
        ),
        (["forget", "obs_nope"], "id"),
        # It was remembered with the date dropped.
        (
            ["remember", "Undated.", "--valid-until", "2024-01-01"],
            "--valid-until belongs to a fact",
        ),
        (["remember", "Backed.", "--supports", "bel_x="], "give a weight after '='"),
    ],
)
def test_a_bad_input_exits_1_naming_the_field_and_writes_nothing(
    doxa: Doxa, args: list[str], named: str
) -> None:
    doxa.json("remember", "Already there.")
    code, out, err = doxa(*args)
    assert code == 1 and out == ""
    assert err.startswith(f"doxa {args[0]}: ") and named in err
    assert not re.search(r"\b(other_agent|known_at|valid_from|observed_at|topics\[)|=true", err)
    counts = doxa.counts()
    assert counts["Observation"] == 1 and counts["Recall"] == 0


def test_a_refusal_names_flags_where_it_names_arguments_not_in_its_prose() -> None:
    from doxa.server.cli import _parser
    from doxa.server.flag_names import flagged

    _parser()  # the commands' flags are learned as their parsers are built
    said = "agent: lists unsupported beliefs (with unsupported=true); leave agent out"
    assert flagged("evidence", said) == (
        "--agent: lists unsupported beliefs (with --unsupported); leave --agent out"
    )
    # What to leave out is an argument; "leave it out" is prose.
    said = "no agent 'x' believes anything (or leave agent out); limit: leave it out"
    assert flagged("recall", said) == (
        "no agent 'x' believes anything (or leave --agent out); --limit: leave it out"
    )
    said = "where must be an object; limit is 3 where 'as_of' is; memories[0].confidence"
    assert flagged("recall", said) == (
        "--where must be an object; --limit is 3 where 'as_of' is; memories[0].confidence"
    )
    assert flagged("remember", "supports[2].weight: x") == "the 3rd --supports WEIGHT: x"
    # One --memories FILE: its 3rd memory is no 3rd flag.
    said = "memories[2] must be an object, got 'oops'"
    assert flagged("remember", said) == said


@pytest.mark.parametrize(
    "args",
    [
        ["remember", "Too sure.", "--confidence", "1.5"],
        ["remember", "Backed.", "--supports", "bel_nope"],
        ["remember", "--record", '{"type": "T", "fields": {}}'],
    ],
)
def test_a_refused_remember_leaves_no_memory_where_there_was_none(
    doxa: Doxa, tmp_path: Path, args: list[str]
) -> None:
    # It wrote nothing, but left a new memory (graph, index, lock) at a mistyped path.
    code, _, err = doxa(*args, data_dir=tmp_path / "typo")
    assert code == 1 and err.startswith("doxa remember: ")
    assert not (tmp_path / "typo").exists()


def snapshot(data_dir: Path) -> dict[str, bytes]:
    """Every file under ``data_dir`` (its path inside it) with its bytes; the owner lock
    (which names the last process that held the directory) by its name only."""
    return {
        str(path.relative_to(data_dir)): b"" if path.name == "owner.lock" else path.read_bytes()
        for path in sorted(data_dir.rglob("*"))
        if path.is_file()
    }


def test_a_remember_refused_for_a_missing_graph_leaves_the_directory_as_it_was(
    doxa: Doxa,
) -> None:
    # The search index holds a memory, the graph file is gone: the remember is refused, and
    # it made no empty graph file (which `doxa check` then read as an empty graph).
    doxa.json("remember", "The harbour opens at six.")
    (doxa.data_dir / "graph").unlink()
    (doxa.data_dir / "graph.wal").unlink(missing_ok=True)
    before = snapshot(doxa.data_dir)
    checked = doxa("check")
    code, out, err = doxa("remember", "x")
    assert code == 1 and out == ""
    assert "graph holds no memories (it has no graph file) but its search index holds 1" in err
    assert "Nothing was changed" in err
    assert snapshot(doxa.data_dir) == before
    assert doxa("check") == checked


@pytest.mark.parametrize(
    "args",
    [
        ["stats"],
        ["recall", "x"],
        ["recall", "--all"],
        ["about", "x"],
        ["forget", "obs_x"],
        ["export", "out.jsonl"],
        ["backup", "copy"],
        ["prune"],
        ["prune", "--apply"],
        ["view", "--out", "page.html"],
        ["repair"],
    ],
)
def test_a_command_on_a_directory_without_a_memory_is_refused_and_creates_none(
    doxa: Doxa, tmp_path: Path, args: list[str]
) -> None:
    typo = tmp_path / "memroy"
    code, out, err = doxa(*args, data_dir=typo)
    assert code == 1 and out == ""
    fix = "check --data-dir (or DOXA_DATA_DIR), or remember something first"
    assert err == f"doxa {args[0]}: no memory in {typo}; {fix}\n"
    assert not typo.exists()


def test_judgements_that_cannot_be_written_exit_1_on_stderr_and_leave_no_file(
    doxa: Doxa, tmp_path: Path
) -> None:
    fill(doxa.data_dir)
    target = tmp_path / "no such folder" / "judged.jsonl"
    code, out, err = doxa("export", "--judgements", str(target))
    assert code == 1 and out == ""
    assert err == f"doxa export: cannot write {target}: there is no directory {target.parent}\n"
    assert not target.parent.exists()
    for flag in ([], ["--judgements"]):  # the whole memory too, and one file for both
        code, _, err = doxa("export", *flag, str(target))
        assert code == 1 and err.startswith(f"doxa export: cannot write {target}: ")
    both = tmp_path / "both.jsonl"
    code, _, err = doxa("export", str(both), "--judgements", str(both))
    assert code == 1 and "both name" in err and not both.exists()
    assert not target.parent.exists()


def test_an_export_of_nothing_to_write_names_every_way_to_give_one(doxa: Doxa) -> None:
    # It named FILE and --markdown, not --judgements, which alone is an export too.
    fill(doxa.data_dir)
    code, out, err = doxa("export")
    assert code == 1 and out == ""
    assert err == "doxa export: give the FILE to write, --markdown DIR or --judgements FILE\n"


@pytest.mark.parametrize("flag", [None, "--judgements"])
def test_an_export_to_a_directory_is_refused_and_leaves_nothing_beside_it(
    doxa: Doxa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str | None
) -> None:
    fill(doxa.data_dir)
    (tmp_path / "target").mkdir()
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.iterdir())
    code, out, err = doxa("export", *([flag] if flag else []), "target")
    assert code == 1 and out == ""
    assert err == f"doxa export: {flag or 'FILE'}: target is a directory; name a file to write\n"
    assert sorted(tmp_path.iterdir()) == before


def test_pages_that_cannot_be_written_after_the_export_file_say_the_file_was_written(
    doxa: Doxa, tmp_path: Path
) -> None:
    # A bare "[Errno 20] Not a directory: …" left unsaid that FILE was written.
    fill(doxa.data_dir)
    (tmp_path / "afile").write_text("mine")
    pages, file = tmp_path / "afile" / "pages", tmp_path / "out.jsonl"
    code, out, err = doxa("export", str(file), "--markdown", str(pages))
    assert code == 1 and out == ""
    assert err == (
        f"doxa export: wrote the export to {file}, but not the pages of --markdown {pages}"
        " (Not a directory)\n"
    )
    assert export_lines(file)[0]["doxa"] == "export"
    code, out, err = doxa("export", "-", "--markdown", str(pages))
    assert code == 1 and out == ""
    assert err == (
        f"doxa export: --markdown {pages}: the pages were not written (Not a directory);"
        " nothing was sent to standard output\n"
    )


def test_an_export_whose_pages_or_backup_target_is_a_file_is_refused_writing_nothing(
    doxa: Doxa, tmp_path: Path
) -> None:
    # The export file was written, then the pages failed ([Errno 17] File exists); a backup
    # to a file said [Errno 20].
    fill(doxa.data_dir)
    (tmp_path / "afile").write_text("mine")
    code, _, err = doxa(
        "export",
        str(tmp_path / "out.jsonl"),
        "--markdown",
        str(tmp_path / "afile"),
        "--judgements",
        str(tmp_path / "j.jsonl"),
    )
    assert code == 1 and "is a file; give a directory" in err
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "j.jsonl").exists()
    code, _, err = doxa("backup", str(tmp_path / "afile"))
    assert code == 1 and "is a file; give a new or empty directory" in err
    assert (tmp_path / "afile").read_text() == "mine"


@pytest.mark.parametrize(
    "args", [["export", ""], ["export", "--judgements", ""], ["export", "--markdown", ""]]
)
def test_an_empty_path_is_refused_not_read_as_the_working_directory(
    doxa: Doxa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    fill(doxa.data_dir)
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.iterdir())
    with pytest.raises(SystemExit) as refused:
        doxa(*args)
    assert refused.value.code == 2
    assert "give a path, not an empty string" in doxa.capsys.readouterr().err
    assert sorted(tmp_path.iterdir()) == before


def test_an_export_that_fails_to_write_leaves_no_part_of_it(tmp_path: Path) -> None:
    memory = Memory.open(hash_settings(tmp_path / "memory").store)
    memory.warm_up()
    (tmp_path / "taken").mkdir()  # the file cannot replace a directory
    try:
        with pytest.raises(OSError):
            write_export(memory.graph, tmp_path / "taken")
    finally:
        memory.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory", "taken"]


def test_check_on_a_directory_without_a_memory_says_so_and_creates_nothing(
    doxa: Doxa, tmp_path: Path
) -> None:
    typo = tmp_path / "memroy"
    code, out, _ = doxa("check", data_dir=typo)
    assert code == 1 and "problem: no graph: this directory holds no memory yet" in out
    assert not typo.exists()


@pytest.mark.parametrize("under", [False, True], ids=["a file", "under a file"])
@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["remember", "x", "--embedder", "hash"], 1),
        (["import", "empty.jsonl", "--embedder", "hash"], 1),
        (["check"], 1),
        (["token", "create", "--agent", "scout"], 2),
        (["token", "revoke", "tok_x"], 2),
        (["serve", "--transport", "http"], 2),
    ],
)
def test_a_data_dir_that_is_a_file_or_lies_under_one_is_refused_naming_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    code: int,
    under: bool,
) -> None:
    # Each command failed its own way: "[Errno 17] File exists", "cannot lock …tokens.lock:
    # [Errno 20] Not a directory", a NotADirectoryError traceback logged twice.
    monkeypatch.chdir(tmp_path)
    header = {"doxa": "export", "format": 2, "schema": 23, "exported_at": "2024-01-01T00:00:00Z"}
    (tmp_path / "empty.jsonl").write_text(json.dumps({**header, "counts": {}}) + "\n")
    afile = tmp_path / "afile"
    afile.write_text("mine\n", encoding="utf-8")
    data_dir = afile / "sub" if under else afile
    before = sorted(tmp_path.iterdir())
    capsys.readouterr()
    with socket.socket() as taken:  # were serve to go on, it would stop at the port
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = ["--port", str(taken.getsockname()[1])] if args[0] == "serve" else []
        assert main([*args, *port, "--data-dir", str(data_dir)]) == code
    out, err = capsys.readouterr()
    where = f"lies under {afile}, which is" if under else "is"
    assert out == ""
    named = f"the data directory {data_dir} {where} a file; name a directory"
    assert err == f"doxa {args[0]}: {named}\n"
    assert afile.read_text(encoding="utf-8") == "mine\n"
    assert sorted(tmp_path.iterdir()) == before


def test_an_empty_recall_without_a_filter_is_refused_saying_how_to_list(doxa: Doxa) -> None:
    doxa.json("remember", "Already there.")
    code, _, err = doxa("recall")
    assert code == 1 and "query must not be empty unless a filter" in err
    # A person typing `doxa recall` to see what is there was told of filters alone.
    assert err.rstrip().endswith("; --all lists every observation")
    code, _, err = doxa("recall", "  ", "--limit", "5")
    assert code == 1 and err.rstrip().endswith("; --all lists every observation")


def test_a_note_names_the_flags_typed_and_json_the_tools_arguments(doxa: Doxa) -> None:
    doxa.json("remember", "Alice works with Bob.", "--agent", "scout", "--topic", "Alice")
    code, out, _ = doxa("recall", "Bob", "--topic", "alcie")
    assert code == 0 and "--topic: no topic or fact names 'alcie'; did you mean 'Alice'?" in out
    code, out, _ = doxa("recall", "Bob", "--predicate", "works_with")
    assert code == 0 and "--predicate: no fact has the predicate 'works_with'" in out
    note = doxa.json("recall", "Bob", "--topic", "alcie")["note"]
    assert note.startswith("topics: no topic or fact names 'alcie'")


def test_a_note_of_an_unknown_agent_says_to_leave_the_flag_out(doxa: Doxa) -> None:
    # "(or leave agent out)" named the tool's argument to a person who typed --agent.
    doxa.json("remember", "Alice works with Bob.", "--agent", "scout")
    for args in (
        ["recall", "Bob", "--agent", "scuot"],
        ["evidence", "--unsupported", "--agent", "scuot"],
        ["conflicts", "--agent", "scuot"],
    ):
        code, out, _ = doxa(*args)
        assert code == 0 and "agents: scout (or leave --agent out)" in out, args
        assert doxa.json(*args)["note"].endswith("agents: scout (or leave agent out)"), args
    code, out, _ = doxa("conflicts", "--agent", "scout", "--other-agent", "scuot")
    assert code == 0 and "agents: scout (or leave --other-agent out)" in out


# ---- listing everything -----------------------------------------------------------------------


def test_recall_all_lists_every_observation_newest_first(doxa: Doxa) -> None:
    ids = fill(doxa.data_dir)
    listed = doxa.json("recall", "--all")
    assert listed["total"] == 5
    order = [r["observation_id"] for r in listed["results"]]
    # The sign and the open bridge were observed now, in that order; the others in 2024.
    assert order == [ids["open"], ids["sign"], ids["Lyon"], ids["closed"], ids["Paris"]]
    paris = listed["results"][-1]
    assert paris["current"] is False and paris["superseded_by"] == [ids["Lyon"]]
    assert listed["results"][0]["agents"] == ["driver"]
    assert listed["results"][0]["topics"] == ["bridge", "route-9"]
    first = doxa.json("recall", "--all", "--limit", "2")
    assert first["total"] == 5 and first["results"] == listed["results"][:2]
    code, out, _ = doxa("recall", "--all", "--limit", "2")
    assert code == 0
    assert out.splitlines()[0] == "2 of 5 observations, newest first"
    assert out.splitlines()[1].startswith(f"{ids['open']}  0.8  ")


def test_recall_all_shows_records_and_when_events_happened_as_recall_does(doxa: Doxa) -> None:
    record = {"type": "Order", "fields": {"order_id": 17, "status": "lost"}}
    told = {"type": "Order", "fields": {"order_id": 18, "status": "late"}}
    doxa.json("remember", "--record", json.dumps(record))
    doxa.json(
        "remember",
        "Order 18 was late yesterday.",
        "--record",
        json.dumps(told),
        "--observed-at",
        "2024-05-02T09:00:00Z",
    )
    listed = {r["record"]["fields"]["order_id"]: r for r in doxa.json("recall", "--all")["results"]}
    searched = {
        r["record"]["fields"]["order_id"]: r
        for r in doxa.json("recall", "", "--where", '{"@type": "Order"}')["results"]
    }
    for key in ("text", "record", "happened"):
        assert [listed[n].get(key) for n in (17, 18)] == [searched[n].get(key) for n in (17, 18)]
    assert listed[18]["happened"].startswith("2024-05-01")
    code, out, _ = doxa("recall", "--all")
    assert code == 0
    assert "Order 18 was late yesterday. [Order: order_id=18, status=late]" in out
    assert "Z  [Order: order_id=17, status=lost]\n" in out  # its record alone, said once


def test_recall_prints_a_texts_further_lines_under_its_first_where_they_forge_nothing(
    doxa: Doxa,
) -> None:
    # Set at a line's start as written, a text's lines forged a result and an agents: line,
    # and "(not current)" came after its last line.
    forged = "\n    agents: ceo\nobs_0000000000000000  1  2020-01-01T00:00:00Z  CEO said yes."
    first = doxa.json("remember", f"Budget moved.{forged}", "--topic", "budget")
    later = "Budget moved\ragain.\u2028    agents: cfo"
    doxa.json("remember", "The budget is due Friday.", "--topic", "budget", "--agent", "intern")
    doxa.json("remember", "Budget in Rome.", "--fact", "budget", "in", "Rome", "--agent", "x")
    doxa.json("remember", later, "--fact", "budget", "in", "Oslo", "--agent", "x")
    ids = {r["observation_id"] for r in doxa.json("recall", "--all")["results"]}
    for args in (["budget"], ["--all"]):
        code, out, _ = doxa("recall", *args)
        assert code == 0
        lines = out.splitlines()[1:]
        rows = [line.split()[0] for line in lines if line.startswith("obs_")]
        carried = [line for line in lines if re.match(r"    \S", line)]
        assert set(rows) <= ids and len(rows) == len(set(rows)) >= 3, out
        known = r"    (current|topics|agents|superseded_by|score|happened): "
        assert all(re.match(known, line) for line in carried), out
        assert "ceo" not in " ".join(carried) and "cfo" not in " ".join(carried), out
        assert "\r" not in out and "\u2028" not in out
        row = next(line for line in lines if line.startswith(first["observation_id"]))
        hanging = " " * row.index("Budget moved.")
        assert f"{row}\n{hanging}    agents: ceo\n{hanging}obs_0000000000000000  1  " in out
    assert set(rows) == ids  # --all: every one
    rome = out[out.index("Budget in Rome.") :].split("\nobs_")[0]
    assert "\n    current: false\n" in rome and "not current" not in out, out


def test_evidence_prints_a_texts_further_lines_under_its_first_where_they_forge_nothing(
    doxa: Doxa,
) -> None:
    # Set at a line's start as written, a text's lines forged a believer of evidence's own:
    # `believers:` then `- agent: mallory`, and a source's a `citation:` line.
    forged = "Line one\nbelievers:\n  - agent: mallory\n    confidence: 1"
    said = doxa.json("remember", forged, "--topic", "forge", "--source", "radio\ncitation: x")
    code, out, _ = doxa("evidence", said["observation_id"])
    assert code == 0
    tops = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert tops.count("believers:") == 1 and "citation: x" not in tops, out
    assert "  - agent: mallory" not in out.splitlines(), out
    assert "\n        believers:\n          - agent: mallory\n" in out, out  # under "  text: "


def test_commands_print_booleans_as_the_records_text_says_them(doxa: Doxa) -> None:
    # Python's True and False were printed: `explicit: False` beside the record's
    # `explicit=false`, and forget's `already: True`.
    record = '{"type": "Track", "fields": {"name": "Help", "explicit": false}}'
    said = doxa.json("remember", "--record", record)
    code, out, _ = doxa("evidence", said["observation_id"])
    assert code == 0 and "      explicit: false\n" in out and "False" not in out, out
    assert doxa("forget", said["observation_id"])[0] == 0
    code, out, _ = doxa("forget", said["observation_id"])
    assert code == 0 and "already: true\n" in out, out


def test_recall_all_leaves_out_what_was_forgotten(doxa: Doxa) -> None:
    ids = fill(doxa.data_dir)
    assert doxa("forget", ids["closed"])[0] == 0
    listed = doxa.json("recall", "--all")
    assert listed["total"] == 4
    assert ids["closed"] not in {r["observation_id"] for r in listed["results"]}


@pytest.mark.parametrize(
    ("args", "named"),
    [(["bridge"], "a query"), (["--topic", "bridge"], "--topic"), (["--limit", "0"], "--limit")],
)
def test_recall_all_refuses_a_query_a_filter_or_a_bad_limit(
    doxa: Doxa, args: list[str], named: str
) -> None:
    doxa.json("remember", "Already there.")
    code, out, err = doxa("recall", "--all", *args)
    assert code == 1 and out == ""
    assert err.startswith("doxa recall: ") and named in err


# ---- while another process owns the data directory -----------------------------------------


def test_the_commands_reach_the_memory_through_the_process_that_owns_it(
    doxa: Doxa, owner: SharedMemory
) -> None:
    done = doxa.json("remember", "Written by a command while a server runs.", "--topic", "x")
    assert owner.memory is not None
    assert done["observation_id"] in owner.memory.graph.live_observation_ids()
    found = doxa.json("recall", "", "--topic", "x")
    assert [r["observation_id"] for r in found["results"]] == [done["observation_id"]]
    judged = doxa.json("feedback", found["recall_id"], "--accepted", done["observation_id"])
    assert judged["accepted"] == [done["observation_id"]]
    assert doxa.json("recall", "--all")["total"] == 1
    assert doxa.json("about", "x")["counts"]["observations"] == 1
    assert doxa.json("evidence", done["observation_id"])["believers"][0]["agent"] == "default"
    assert doxa.json("conflicts")["count"] == 0
    assert doxa.counts()["Observation"] == 1
    forgotten = doxa.json("forget", done["observation_id"])
    assert forgotten["mode"] == "retract"
    assert done["observation_id"] not in owner.memory.graph.live_observation_ids()


def test_a_bad_input_relayed_to_the_owner_is_refused_naming_the_field(
    doxa: Doxa, owner: SharedMemory
) -> None:
    code, _, err = doxa("remember", "Too sure.", "--confidence", "7")
    assert code == 1 and "confidence" in err
    assert owner.tallies()["Observation"] == 0


def test_import_is_refused_while_a_server_owns_the_directory(
    doxa: Doxa, owner: SharedMemory, tmp_path: Path
) -> None:
    fill(tmp_path / "other")
    assert doxa("export", str(tmp_path / "other.jsonl"), data_dir=tmp_path / "other")[0] == 0
    code, _, err = doxa("import", str(tmp_path / "other.jsonl"))
    assert code == 1 and "a running doxa owns" in err and "stop it" in err
    assert owner.tallies()["Observation"] == 0


def test_backup_while_a_server_runs_opens_as_a_memory_with_the_same_counts(
    doxa: Doxa, owner: SharedMemory, tmp_path: Path
) -> None:
    for i in range(3):
        doxa.json("remember", f"Harbour note {i}.", "--topic", "harbour")
    code, out, _ = doxa("backup", str(tmp_path / "copy"))
    assert code == 0 and out.startswith(f"backed up to {tmp_path / 'copy'}: ")
    assert not (tmp_path / "copy" / "owner.lock").exists()
    assert doxa.counts(data_dir=tmp_path / "copy") == owner.tallies()
    assert doxa.json("recall", "--all", data_dir=tmp_path / "copy")["total"] == 3
    code, _, err = doxa("backup", str(tmp_path / "copy"))
    assert code == 1 and "not empty" in err


def test_a_backup_taken_while_writes_flow_holds_every_memory_in_its_index(
    doxa: Doxa, owner: SharedMemory, tmp_path: Path
) -> None:
    # Writes between the backup's wait for the index and its holding writers off were in
    # the copy's graph but not its index: the copy checked unhealthy.
    from doxa.store import MemoryDraft
    from doxa.store.health import check

    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set():
            owner.remember([MemoryDraft(text=f"Harbour note {i}.")])
            i += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        time.sleep(0.3)
        copies = [tmp_path / f"copy{i}" for i in range(3)]
        for copy in copies:
            assert doxa("backup", str(copy))[0] == 0
    finally:
        stop.set()
        writer.join()
    for copy in copies:
        assert check(hash_settings(copy).store).problems == []


def test_an_owner_of_another_doxa_version_is_refused_with_what_to_do(
    doxa: Doxa,
    owner: SharedMemory,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # An older server still owning the directory unpickled this version's records without
    # their new field: AttributeError: 'RecordField' object has no attribute 'listed'.
    answer = relay.RelayServer._answer

    def older(server: relay.RelayServer, method: str, *args: Any) -> object:
        return (
            ("ok", "another version's") if method == relay.WIRE else answer(server, method, *args)
        )

    monkeypatch.setattr(relay.RelayServer, "_answer", older)  # the owner's end only
    code, _, err = doxa("recall", "harbour")
    assert code == 1 and "runs another version of doxa" in err and "Traceback" not in err, err
    # Said once, by the command (the log said it twice before).
    assert not [r for r in caplog.records if "could not open or reach" in r.getMessage()]


def test_a_memory_refused_at_opening_is_said_once(
    doxa: Doxa, caplog: pytest.LogCaptureFixture
) -> None:
    # The refusal came twice on stderr: the warm-up's log line, then the command's error.
    assert doxa("remember", "The harbour opens at six.")[0] == 0
    connection = kuzu.Connection(kuzu.Database(str(doxa.data_dir / "graph")))
    connection.execute(f"CREATE (:{MIGRATION_TABLE} {{version: 99, name: 'later', checksum: 'x'}})")
    connection.close()
    code, _, err = doxa("recall", "harbour")
    assert code == 1 and "migration 99 ('later') was applied by a newer doxa" in err, err
    assert not [r for r in caplog.records if "warm-up failed" in r.getMessage()]


@pytest.mark.parametrize("command", ["check", "repair"])
def test_check_and_repair_refuse_beside_a_server_even_after_its_backup(
    doxa: Doxa, owner: SharedMemory, tmp_path: Path, command: str
) -> None:
    # The server's copy of the graph closed a descriptor of it, which dropped Kùzu's lock:
    # check then ran beside the server, and repair rebuilt the index under it.
    doxa.json("remember", "Harbour note.")
    assert doxa("backup", str(tmp_path / "copy"))[0] == 0
    code, _, err = doxa(command)
    assert code == 3 and "in use by another doxa process" in err, err


def test_a_backup_cut_off_midway_is_no_memory_and_the_next_backup_replaces_it(
    doxa: Doxa, tmp_path: Path
) -> None:
    # The owner killed while it copied: the retried backup was refused ("not empty"), and
    # the half copy (49 of 66 MB of graph, no index) was left to be opened as a memory.
    doxa.json("remember", "Harbour note.", "--topic", "harbour")
    assert doxa("backup", str(tmp_path / "copy"))[0] == 0
    (tmp_path / "copy" / UNFINISHED).touch()  # as a copy is while it is made
    code, _, err = doxa("recall", "harbour", data_dir=tmp_path / "copy")
    assert code == 1 and "a backup that stopped midway" in err, err
    # check says so too (it read the cut-off files: a damaged graph, an index never copied).
    code, out, _ = doxa("check", data_dir=tmp_path / "copy")
    assert code == 1 and "a backup that stopped midway" in out and "search index" not in out
    code, out, _ = doxa("backup", str(tmp_path / "copy"))
    assert code == 0, out
    assert not (tmp_path / "copy" / UNFINISHED).exists()
    assert doxa.json("recall", "--all", data_dir=tmp_path / "copy")["total"] == 1


# ---- export, import -------------------------------------------------------------------------


def test_export_then_import_into_an_empty_directory_compares_equal(
    doxa: Doxa, tmp_path: Path
) -> None:
    fill(doxa.data_dir)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    code, out, _ = doxa("export", str(first))
    assert code == 0 and out.startswith("exported ") and f" objects to {first} in " in out
    copy = tmp_path / "copy"
    code, out, err = doxa("import", str(first), data_dir=copy)
    assert code == 0 and out.startswith("imported ") and "(0 already there, skipped)" in out
    assert "Observation: 5/5" in err  # progress, on stderr
    header = doxa.json("export", str(second), data_dir=copy)
    assert doxa.counts(data_dir=copy) == doxa.counts()
    (head_a, lines_a), (head_b, lines_b) = export_lines(first), export_lines(second)
    assert lines_b == lines_a
    assert {k: v for k, v in head_b.items() if k != "exported_at"} == {
        k: v for k, v in head_a.items() if k != "exported_at"
    }
    assert header["counts"] == head_a["counts"] and header["bytes"] == second.stat().st_size
    found = doxa.json("recall", "Lyon", data_dir=copy)  # re-embedded: found by meaning too
    assert found["results"][0]["text"] == "Alice lives in Lyon."


def test_an_import_of_a_file_already_imported_says_only_that_it_skipped_everything(
    doxa: Doxa, tmp_path: Path
) -> None:
    # It said it was embedding the imported observations, then that it imported none.
    fill(doxa.data_dir)
    file = tmp_path / "a.jsonl"
    assert doxa("export", str(file))[0] == 0
    total = sum(export_lines(file)[0]["counts"].values())
    code, out, err = doxa("import", str(file))
    assert code == 0 and "embedding" not in err, err
    assert out.startswith(f"nothing imported: all {total} objects already there, skipped in ")


def test_import_of_a_compressed_export_or_a_judgements_file_says_what_it_is(
    doxa: Doxa, tmp_path: Path
) -> None:
    # Both were refused as "line 1 is not a doxa export header".
    fill(doxa.data_dir)
    file, judged = tmp_path / "a.jsonl", tmp_path / "j.jsonl"
    assert doxa("export", str(file), "--judgements", str(judged))[0] == 0
    packed = tmp_path / "a.jsonl.gz"
    packed.write_bytes(gzip.compress(file.read_bytes()))
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    for given, said in [
        (packed, "is compressed (gzip): gunzip it first"),
        (judged, "this is a judgements file (doxa export --judgements); import takes a doxa"),
        (empty, "is empty: a doxa export starts with its header line"),
    ]:
        code, out, err = doxa("import", str(given), data_dir=tmp_path / "copy")
        assert code == 1 and out == "" and f"{given}: {said}" in err
        assert not (tmp_path / "copy").exists()


def test_import_into_an_existing_memory_skips_what_it_holds(doxa: Doxa, tmp_path: Path) -> None:
    fill(doxa.data_dir)
    file = tmp_path / "a.jsonl"
    assert doxa("export", str(file))[0] == 0
    before = doxa.counts()
    again = doxa.json("import", str(file))
    assert again["created"] == {}
    assert again["skipped"]["Observation"] == 5
    assert doxa.counts() == before
    other = tmp_path / "other"
    own = doxa.json("remember", "A memory of its own.", data_dir=other)
    merged = doxa.json("import", str(file), data_dir=other)
    assert merged["created"]["Observation"] == 5 and merged["skipped"] == {"Agent": 1}
    listed = doxa.json("recall", "--all", data_dir=other)
    assert listed["total"] == 6
    assert own["observation_id"] in {r["observation_id"] for r in listed["results"]}


def test_import_and_remember_read_standard_input_from_a_dash(
    doxa: Doxa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def typed(data: bytes) -> None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))

    fill(doxa.data_dir)
    file = tmp_path / "a.jsonl"
    assert doxa("export", str(file))[0] == 0
    typed(file.read_bytes())
    copy = tmp_path / "copy"
    assert doxa.json("import", "-", data_dir=copy)["created"]["Observation"] == 5
    assert doxa.counts(data_dir=copy) == doxa.counts()
    typed(b'{"doxa": "export", "format": 2}\n{"table": "Nope"}\n')
    code, _, err = doxa("import", "-", data_dir=tmp_path / "none")
    assert code == 1 and "doxa import: stdin line 2: unknown table 'Nope'" in err
    assert not (tmp_path / "none").exists()
    typed(json.dumps([{"text": "Told on stdin."}, {"text": "So was this."}]).encode())
    told = doxa.json("remember", "--memories", "-", data_dir=copy)
    assert len(told["remembered"]) == 2
    typed(b"\xff[]")
    code, _, err = doxa("remember", "--memories", "-", data_dir=copy)
    assert code == 1 and "--memories: standard input is not UTF-8 text (byte 1)" in err


def test_an_export_failing_after_its_judgements_with_json_says_they_were_written(
    doxa: Doxa, tmp_path: Path
) -> None:
    # With --json the judgements are said in the export's one document: an export that then
    # failed said nothing of the file written.
    fill(doxa.data_dir)
    judged, pages = tmp_path / "j.jsonl", tmp_path / "pages"
    pages.mkdir()
    (pages / "index.md").mkdir()  # the pages cannot be written
    code, _, err = doxa("export", "--markdown", str(pages), "--judgements", str(judged), "--json")
    assert code == 1 and err.rstrip().endswith(f"; the judgements were written to {judged}")
    assert judged.exists()


def test_export_with_judgements_and_json_prints_one_json_document(
    doxa: Doxa, tmp_path: Path
) -> None:
    # `--json` printed the judgements' line in words, then the export's JSON (with --markdown
    # alone, two JSON documents): no JSON reader could parse what it said.
    fill(doxa.data_dir)
    file, judged, pages = tmp_path / "a.jsonl", tmp_path / "j.jsonl", tmp_path / "pages"
    for args in ([str(file)], ["--markdown", str(pages)], [str(file), "--markdown", str(pages)]):
        said = doxa.json("export", *args, "--judgements", str(judged))
        assert said["judgements"] == {"file": str(judged), "judged_results": 1, "recalls": 1}
        assert said["doxa"] == "export" and said["counts"]["Observation"] == 5
    code, out, _ = doxa("export", str(file), "--judgements", str(judged))
    assert code == 0 and out.startswith("wrote 1 judged result of 1 recall to "), out
    assert "\nexported " in out  # in words, both are said, as before


def test_counts_of_one_are_said_in_the_singular() -> None:
    # "exported 1 objects", "1 judged results", "search index: 1 rows".
    from doxa.server.tool_commands import counted

    assert counted(1, "object") == "1 object" and counted(0, "object") == "0 objects"
    assert counted(1, "judged result") == "1 judged result"
    assert counted(2, "judged result") == "2 judged results"


def test_export_and_judgements_to_a_dash_go_to_standard_output_said_on_stderr(
    doxa: Doxa, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `doxa export -` wrote a file named "-" ("exported 58 objects to - …"), though
    # `import -` reads standard input.
    fill(doxa.data_dir)
    monkeypatch.chdir(tmp_path)
    file = tmp_path / "a.jsonl"
    assert doxa("export", str(file))[0] == 0
    code, out, err = doxa("export", "-")
    assert code == 0
    header, lines = json.loads(out.splitlines()[0]), out.splitlines()[1:]
    assert header["doxa"] == "export" and lines == export_lines(file)[1]
    assert err.startswith("exported ") and " objects to standard output in " in err
    code, out, err = doxa("export", "--judgements", "-", "--json")
    assert code == 0
    [judged] = [json.loads(line) for line in out.splitlines()]
    assert judged["judgement"] == "accepted"
    assert json.loads(err) == {"file": "-", "judged_results": 1, "recalls": 1}
    code, out, err = doxa("export", "-", "--judgements", str(tmp_path / "j.jsonl"))
    assert code == 0 and out.splitlines()[1:] == lines
    assert "wrote 1 judged result of 1 recall to " in err and "standard output" in err
    code, out, err = doxa("export", "-", "--judgements", "-")
    assert code == 1 and out == "" and "both name -" in err
    for refused in (["export", "--markdown", "-"], ["backup", "-"]):
        with pytest.raises(SystemExit) as stopped:
            doxa(*refused)
        assert stopped.value.code == 2
        said = doxa.capsys.readouterr().err
        assert "- (standard output) holds one stream, not a folder of files" in said
    assert not (tmp_path / "-").exists()


@pytest.mark.slow
def test_export_to_a_dash_piped_into_import_from_a_dash_copies_the_memory(
    doxa: Doxa, tmp_path: Path, server_env: dict[str, str]
) -> None:
    fill(doxa.data_dir)
    copy = tmp_path / "copy"
    doxa_command = [sys.executable, "-m", "doxa.server"]
    export = subprocess.Popen(
        [*doxa_command, "export", "-", "--embedder", "hash", "--data-dir", str(doxa.data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env,
        cwd=tmp_path,
    )
    assert export.stdout is not None and export.stderr is not None
    imported = subprocess.run(
        [*doxa_command, "import", "-", "--embedder", "hash", "--data-dir", str(copy)],
        stdin=export.stdout,
        capture_output=True,
        text=True,
        env=server_env,
        timeout=120,
        check=False,
    )
    export.stdout.close()
    said = export.stderr.read().decode()
    assert export.wait(timeout=60) == 0, said
    assert said.startswith("exported ") and " objects to standard output in " in said
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.startswith("imported ") and "(0 already there" in imported.stdout
    assert doxa.counts(data_dir=copy) == doxa.counts()
    assert not (tmp_path / "-").exists()


def test_a_bad_export_file_is_refused_naming_the_line_and_writes_nothing(
    doxa: Doxa, tmp_path: Path
) -> None:
    fill(tmp_path / "source")
    file = tmp_path / "a.jsonl"
    assert doxa("export", str(file), data_dir=tmp_path / "source")[0] == 0
    lines = file.read_text(encoding="utf-8").splitlines()
    lines.append('{"table": "Observation", "id": "obs_bad", "confidence": 7}')
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    doxa.json("remember", "Already there.")
    code, out, err = doxa("import", str(file))
    assert code == 1 and out == ""
    assert f"line {len(lines)}" in err and "confidence" in err
    assert doxa.counts()["Observation"] == 1
    # A line of bytes that are no UTF-8 (here in the middle of a text) is named too.
    raw = file.read_bytes().splitlines(keepends=True)[:-1]
    at = next(i for i, line in enumerate(raw) if b'"text":"' in line)
    raw[at] = raw[at].replace(b'"text":"', b'"text":"\xff', 1)
    file.write_bytes(b"".join(raw))
    code, out, err = doxa("import", str(file))
    assert code == 1 and out == ""
    assert f"{file} line {at + 1}: not UTF-8 text (byte " in err
    assert doxa.counts()["Observation"] == 1


def test_recall_all_names_the_agents_a_withdrawn_belief_holds_for_now(doxa: Doxa) -> None:
    # As recall names them: driver's belief in the Paris it shares with scout, withdrawn by
    # its Berlin from 2999, holds now (recall --all left driver out); in the Lisbon it
    # shares, withdrawn by its Porto from 2999, its Rome from 2024-03 (told late) ended it.
    def lives(agent: str, subject: str, city: str, since: str) -> str:
        args = ["remember", f"{subject} lives in {city}.", "--fact", subject, "lives in", city]
        done = doxa.json(*args, "--valid-from", since, "--agent", agent)
        return str(done["observation_id"])

    paris = lives("scout", "Alice", "Paris", "2024-01-01T00:00:00Z")
    lives("driver", "Alice", "Paris", "2024-01-01T00:00:00Z")
    lives("driver", "Alice", "Berlin", "2999-01-01T00:00:00Z")
    lisbon = lives("scout", "Bob", "Lisbon", "2024-01-01T00:00:00Z")
    lives("driver", "Bob", "Lisbon", "2024-01-01T00:00:00Z")
    lives("driver", "Bob", "Porto", "2999-01-01T00:00:00Z")
    lives("driver", "Bob", "Rome", "2024-03-01T00:00:00Z")
    listed = {r["observation_id"]: r for r in doxa.json("recall", "--all")["results"]}
    recalled = {
        r["observation_id"]: r
        for subject in ("Alice", "Bob")
        for r in doxa.json("recall", "", "--subject", subject, "--explain")["results"]
    }
    assert [recalled[o]["agents"] for o in (paris, lisbon)] == [["scout", "driver"], ["scout"]]
    assert [listed[o]["agents"] for o in (paris, lisbon)] == [["driver", "scout"], ["scout"]]


def test_markdown_export_writes_one_file_per_entity_and_an_index(
    doxa: Doxa, tmp_path: Path
) -> None:
    ids = fill(doxa.data_dir)
    pages = tmp_path / "pages"
    code, out, _ = doxa("export", "--markdown", str(pages))
    assert code == 0 and f"{pages}/ (6 Markdown files)" in out
    names = sorted(p.name for p in pages.iterdir())
    # Topics (bridge, route-9), the fact's subject (Alice) and its objects (Paris, Lyon).
    assert names == ["alice.md", "bridge.md", "index.md", "lyon.md", "paris.md", "route-9.md"]
    alice = (pages / "alice.md").read_text(encoding="utf-8")
    assert alice.startswith("# Alice\n\n## Facts\n")
    assert (
        "- Alice lives in Paris (2024-01-01T00:00:00Z to 2024-06-01T00:00:00Z; " in alice
        and f"replaced by {ids['Lyon']}" in alice
    )
    index = (pages / "index.md").read_text(encoding="utf-8")
    assert "- [bridge](bridge.md) (3 observations)" in index


def test_markdown_index_says_how_many_observations_no_page_shows(
    doxa: Doxa, tmp_path: Path
) -> None:
    # Records and notes with no topic or fact name no entity: a memory of them exported an
    # index of nothing, and the pages of others left them out without a word.
    pages = tmp_path / "pages"
    doxa.json("remember", "--record", '{"type": "Track", "fields": {"name": "Help"}}')
    doxa.json("remember", "A note on nothing in particular.")
    assert doxa("export", "--markdown", str(pages))[0] == 0
    index = (pages / "index.md").read_text(encoding="utf-8")
    said = (
        "2 observations name no topic or fact, so no page shows them; doxa recall --all lists them"
    )
    assert index == f"# doxa memory\n\n{said}\n", index
    doxa.json("remember", "Bridge closed.", "--topic", "bridge")
    gone = doxa.json("remember", "A note soon retracted.")
    assert doxa("forget", gone["observation_id"])[0] == 0
    assert doxa("export", "--markdown", str(pages))[0] == 0
    index = (pages / "index.md").read_text(encoding="utf-8")
    assert index.endswith("(1 observation)\n\n" + said + "\n"), index  # not the retracted
    (pages / "bridge.md").unlink()
    assert doxa("export", "--markdown", str(pages))[0] == 0  # its index read back, as before
    assert (pages / "bridge.md").exists()


def test_markdown_pages_are_one_per_entity_in_any_case_and_none_outlives_a_purge(
    doxa: Doxa, tmp_path: Path
) -> None:
    assert doxa("remember", "Alice joined.", "--topic", "Alice")[0] == 0
    assert doxa("remember", "alice lives in Oslo.", "--fact", "alice", "lives in", "Oslo")[0] == 0
    hint = doxa.json("remember", "Eve's password hint is blue.", "--topic", "Eve")
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "notes.md").write_text("mine\n", encoding="utf-8")  # not the export's
    assert doxa("export", "--markdown", str(pages))[0] == 0
    # Alice and alice were a page each (alice-2.md), as about counts them together.
    assert sorted(p.name for p in pages.iterdir()) == [
        "alice.md", "eve.md", "index.md", "notes.md", "oslo.md"
    ]  # fmt: skip
    assert "- [Alice](alice.md) (2 observations)" in (pages / "index.md").read_text()
    assert "- [Eve](eve.md) (1 observation)" in (pages / "index.md").read_text()
    assert doxa("forget", hint["observation_id"], "--mode", "purge")[0] == 0
    assert doxa("export", "--markdown", str(pages))[0] == 0
    # The purged text's page was left behind by the second export.
    assert sorted(p.name for p in pages.iterdir()) == [
        "alice.md",
        "index.md",
        "notes.md",
        "oslo.md",
    ]
    assert "password" not in "".join(p.read_text() for p in pages.iterdir())


def test_a_markdown_page_of_a_long_name_gets_a_file_name_a_file_system_takes(
    doxa: Doxa, tmp_path: Path
) -> None:
    # A URL of 320 characters as a fact's object, or a topic of 150 CJK characters (450
    # bytes), made a file name over 255 bytes: the export failed, "File name too long".
    home, away = (f"https://example.com/{'a' * 300}{end}" for end in ("/home", "/away"))
    for url in (home, away):
        assert doxa("remember", "Dan's page.", "--fact", "Dan", "homepage", url)[0] == 0
    assert doxa("remember", "A long topic.", "--topic", "記" * 150)[0] == 0
    pages = tmp_path / "pages"
    code, out, err = doxa("export", "--markdown", str(pages))
    assert code == 0 and f"{pages}/ (5 Markdown files)" in out, err
    names = sorted(p.name for p in pages.iterdir())
    assert len(names) == 5 and all(len(n.encode()) <= 130 for n in names), names
    # Cut alike, the two URLs keep a page each (the hash of the whole name tells them apart).
    urls = [n for n in names if n.startswith("https-example.com-aaa")]
    titles = {(pages / n).read_text(encoding="utf-8").splitlines()[0] for n in urls}
    assert len(urls) == 2 and titles == {f"# {home}", f"# {away}"}
    index = (pages / "index.md").read_text(encoding="utf-8")
    assert all(f"]({n}) (1 observation)" in index for n in names if n not in ("dan.md", "index.md"))
    # Exported again, the earlier pages are found through the index and taken away.
    topic = doxa.json("recall", "--all")["results"][0]["observation_id"]
    assert doxa("forget", topic, "--mode", "purge")[0] == 0
    assert doxa("export", "--markdown", str(pages))[0] == 0
    assert len(list(pages.iterdir())) == 4


def test_a_markdown_timeline_is_in_the_order_observed_then_told_in_every_run(
    doxa: Doxa, tmp_path: Path
) -> None:
    # A batch (one time for all) came in a set's order, another in each run; and times
    # were compared as text: "00:00:00.500000Z" came before "00:00:00Z".
    told = [f"Note {n} about Kim." for n in range(8)]
    notes = [{"text": text, "topics": ["Kim"]} for text in told]
    notes += [
        {"text": text, "topics": ["Kim"], "observed_at": at}
        for text, at in (
            ("At the full second.", "2024-01-01T00:00:00Z"),
            ("Half a second later.", "2024-01-01T00:00:00.500Z"),
        )
    ]
    (tmp_path / "notes.json").write_text(json.dumps(notes), encoding="utf-8")
    assert doxa("remember", "--memories", str(tmp_path / "notes.json"))[0] == 0
    assert doxa("export", "--markdown", str(tmp_path / "pages"))[0] == 0
    page = (tmp_path / "pages" / "kim.md").read_text(encoding="utf-8")
    shown = [line.split("** ")[1].split(" (")[0] for line in page.splitlines() if "**" in line]
    assert shown == ["At the full second.", "Half a second later.", *told], shown


def test_an_export_never_writes_into_a_data_directory_named_with_a_tilde(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # DOXA_DATA_DIR="~/mem": the check compared the unexpanded path and let it through.
    monkeypatch.setenv("HOME", str(tmp_path))
    doxa = Doxa(Path("~/mem"), capsys)
    assert doxa("remember", "Alice joined.")[0] == 0
    graph = tmp_path / "mem" / "graph"
    before = graph.stat().st_size
    code, _, err = doxa("export", str(graph))
    assert code == 1 and "lies inside the data directory" in err, err
    assert graph.stat().st_size == before


def test_an_export_never_writes_into_the_data_directory(doxa: Doxa) -> None:
    # Exported over its own graph file, the memory was gone, and the command said it worked.
    assert doxa("remember", "Alice joined.")[0] == 0
    graph = doxa.data_dir / "graph"
    before = graph.stat().st_size
    for args in (
        [str(graph)],
        ["--judgements", str(graph)],
        ["--markdown", str(doxa.data_dir / "index")],
        [str(doxa.data_dir / "memory.jsonl")],
    ):
        code, _, err = doxa("export", *args)
        assert code == 1, args
        assert "lies inside the data directory" in err and "choose another" in err, err
    assert graph.stat().st_size == before
    assert not (doxa.data_dir / "memory.jsonl").exists()
    assert doxa.counts()["Observation"] == 1


def test_a_page_is_never_written_into_the_data_directory(doxa: Doxa) -> None:
    # doxa view --out DIR/graph wrote its HTML over the graph: the memory was gone.
    assert doxa("remember", "Alice joined.")[0] == 0
    graph = doxa.data_dir / "graph"
    before = graph.read_bytes()
    for out in (graph, doxa.data_dir / "page.html"):
        code, _, err = doxa("view", "--out", str(out))
        assert code == 1 and "--out" in err and "lies inside the data directory" in err, err
    assert graph.read_bytes() == before and not (doxa.data_dir / "page.html").exists()
    assert doxa.counts()["Observation"] == 1


def test_recall_all_and_the_markdown_tell_what_is_current_as_recall_does(
    doxa: Doxa, tmp_path: Path
) -> None:
    # Both called any fact with a SUPERSEDES link replaced: by a retracted superseder, by
    # one beginning in a later year, and a fact that ended on its own date was "current".
    def lives(city: str, since: str, *until: str) -> str:
        extra = ["--valid-until", *until] if until else []
        args = ["remember", f"Jo: {city}.", "--fact", "Jo", "lives in", city]
        done = doxa.json(*args, "--valid-from", since, *extra)
        return str(done["observation_id"])

    athens = lives("Athens", "2024-01-01T00:00:00Z")
    bonn = lives("Bonn", "2024-03-01T00:00:00Z")
    cork = lives("Cork", "2024-06-01T00:00:00Z")
    tokyo = lives("Tokyo", f"{LATER}-01-01T00:00:00Z")
    rome = lives("Rome", "2019-01-01T00:00:00Z", "2019-06-01T00:00:00Z")
    # Never held: told now, with only an end already past (its start was after its end).
    boat = ["Jo sold the boat.", "--fact", "Jo", "owns", "boat"]
    doxa.json("remember", *boat, "--valid-until", "2020-01-01T00:00:00Z")
    assert doxa("forget", bonn)[0] == 0
    listed = {r["observation_id"]: r for r in doxa.json("recall", "--all")["results"]}
    assert {oid: listed[oid]["current"] for oid in (athens, cork, tokyo, rome)} == {
        athens: False,
        cork: True,  # until Tokyo begins
        tokyo: False,
        rome: False,
    }
    assert listed[athens]["superseded_by"] == [cork] and "superseded_by" not in listed[rome]
    assert doxa("export", "--markdown", str(tmp_path / "pages"))[0] == 0
    page = (tmp_path / "pages" / "jo.md").read_text(encoding="utf-8")
    assert (
        f"Jo lives in Athens (2024-01-01T00:00:00Z to 2024-06-01T00:00:00Z; replaced by {cork})"
        in page
    )
    assert "Jo lives in Bonn (2024-03-01T00:00:00Z to 2024-06-01T00:00:00Z; retracted)" in page
    assert f"Jo lives in Cork (2024-06-01T00:00:00Z to {LATER}-01-01T00:00:00Z; current)" in page
    assert f"Jo lives in Tokyo (from {LATER}-01-01T00:00:00Z; begins later)" in page
    assert "Jo lives in Rome (2019-01-01T00:00:00Z to 2019-06-01T00:00:00Z; ended)" in page
    assert "Jo owns boat (until 2020-01-01T00:00:00Z; ended)" in page


def test_recall_all_and_the_markdown_name_what_replaced_a_plan_as_recall_does(
    doxa: Doxa, tmp_path: Path
) -> None:
    # Berlin, then Tokyo from 2025, then Rome from 2025 instead (Tokyo never held): recall
    # says Rome ended Berlin, and both named Tokyo.
    def lives(city: str, since: str) -> str:
        args = ["remember", f"Jo: {city}.", "--fact", "Jo", "lives in", city]
        return str(doxa.json(*args, "--valid-from", since)["observation_id"])

    berlin = lives("Berlin", "2024-01-01T00:00:00Z")
    tokyo = lives("Tokyo", "2025-01-01T00:00:00Z")
    rome = lives("Rome", "2025-01-01T00:00:00Z")
    [recalled] = [
        r
        for r in doxa.json("recall", "Jo", "--subject", "Jo", "--include-superseded")["results"]
        if r["observation_id"] == berlin
    ]
    listed = {r["observation_id"]: r for r in doxa.json("recall", "--all")["results"]}
    assert recalled["superseded_by"] == listed[berlin]["superseded_by"] == [rome]
    assert listed[tokyo]["superseded_by"] == [rome]
    assert doxa("export", "--markdown", str(tmp_path / "pages"))[0] == 0
    page = (tmp_path / "pages" / "jo.md").read_text(encoding="utf-8")
    assert (
        f"Jo lives in Berlin (2024-01-01T00:00:00Z to 2025-01-01T00:00:00Z; replaced by {rome})"
        in page
    )


def test_the_markdown_names_only_the_agents_that_hold_an_observation_now(tmp_path: Path) -> None:
    memory = Memory.open(hash_settings(tmp_path / "m").store)
    memory.warm_up()
    try:
        gulls = {"text": "Gulls nest on the pier.", "topics": ["pier"]}
        [told] = memory.remember([MemoryDraft(**gulls, agent="alice")])
        memory.remember([MemoryDraft(**gulls, agent="bob")])
        memory.forget(told.observation_id, agent="bob")  # bob's belief only
        memory.export(str(tmp_path / "out.jsonl"))
    finally:
        memory.close()
    write_markdown(tmp_path / "out.jsonl", tmp_path / "pages")
    page = (tmp_path / "pages" / "pier.md").read_text(encoding="utf-8")
    assert "believed by alice)" in page and "bob" not in page.split("believed by")[1]


def test_pages_and_the_listing_show_the_confidence_of_the_first_believer_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # bob told it at 0.3, alice shared it at 0.9, bob forgot it: the page and `recall --all`
    # showed bob's 0.3, as recall no longer does.
    data_dir = tmp_path / "m"
    memory = Memory.open(hash_settings(data_dir).store)
    memory.warm_up()
    try:
        gulls = {"text": "Gulls nest on the pier.", "topics": ["pier"]}
        [told] = memory.remember([MemoryDraft(**gulls, agent="bob", confidence="0.3")])
        memory.remember([MemoryDraft(**gulls, agent="alice", confidence="0.9")])
        memory.forget(told.observation_id, agent="bob")
        [found] = memory.recall("gulls").results
        memory.export(str(tmp_path / "out.jsonl"))
    finally:
        memory.close()
    assert found.confidence == Decimal("0.9")
    write_markdown(tmp_path / "out.jsonl", tmp_path / "pages")
    page = (tmp_path / "pages" / "pier.md").read_text(encoding="utf-8")
    assert "(confidence 0.9; believed by alice)" in page
    [listed] = Doxa(data_dir, capsys).json("recall", "--all")["results"]
    assert (listed["confidence"], listed["agents"]) == ("0.9", ["alice"])


def test_pages_show_an_observations_own_confidence_while_no_believer_withdrew(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # scout (0.4) and driver (0.8) told it in one batch: recall shows 0.4, the page showed
    # driver's 0.8 (the export lists driver's belief first).
    data_dir = tmp_path / "m"
    memory = Memory.open(hash_settings(data_dir).store)
    memory.warm_up()
    try:
        told = [
            MemoryDraft("Gulls nest on the pier.", topics=["pier"], agent=a, confidence=c)
            for a, c in (("scout", "0.4"), ("driver", "0.8"))
        ]
        memory.remember(told, batch=True)
        [found] = memory.recall("gulls").results
        memory.export(str(tmp_path / "out.jsonl"))
    finally:
        memory.close()
    assert found.confidence == Decimal("0.4")
    write_markdown(tmp_path / "out.jsonl", tmp_path / "pages")
    page = (tmp_path / "pages" / "pier.md").read_text(encoding="utf-8")
    assert "(confidence 0.4; believed by " in page
    [listed] = Doxa(data_dir, capsys).json("recall", "--all")["results"]
    assert listed["confidence"] == "0.4"


def test_the_markdown_names_an_agent_whose_belief_holds_until_a_fact_not_begun(
    tmp_path: Path,
) -> None:
    # driver shares scout's Paris and told Berlin from 2999: Paris is driver's now, as recall
    # says, but the page left driver out.
    memory = Memory.open(hash_settings(tmp_path / "m").store)
    memory.warm_up()
    try:
        told = [("scout", "Paris", None), ("driver", "Paris", None)]
        for agent, city, since in [*told, ("driver", "Berlin", "2999-01-01T00:00:00Z")]:
            fact = FactDraft("Alice", "lives in", city, valid_from=since)
            memory.remember([MemoryDraft(text=f"Alice lives in {city}.", agent=agent, fact=fact)])
        now = memory.recall("", subject="Alice", agent="driver").results
        memory.export(str(tmp_path / "out.jsonl"))
    finally:
        memory.close()
    assert [r.agents for r in now if r.current] == [["scout", "driver"]]
    write_markdown(tmp_path / "out.jsonl", tmp_path / "pages")
    page = (tmp_path / "pages" / "paris.md").read_text(encoding="utf-8")
    assert "Alice lives in Paris. (confidence 1; believed by driver, scout)" in page


def test_the_markdown_names_an_agent_while_its_facts_now_hold_a_withdrawn_belief(
    tmp_path: Path,
) -> None:
    # driver shared scout's Paris and told Berlin from 2999, then Rome from 2024-03 (told
    # late): Paris is not driver's now, as recall says, but the page named driver (until
    # 2999). driver shared scout's Lisbon, told Porto from 2024-06 and Faro from 2999, and
    # forgot Porto: Lisbon is driver's until 2999, and the page left driver out. driver
    # shared scout's Lima, told Quito from 2024-06 and forgot it: Lima is driver's again.
    memory = Memory.open(hash_settings(tmp_path / "m").store)
    memory.warm_up()
    told: dict[str, str] = {}
    try:
        for agent, subject, city, since in [
            ("scout", "Alice", "Paris", "2024-01-01"),
            ("driver", "Alice", "Paris", "2024-01-01"),
            ("driver", "Alice", "Berlin", "2999-01-01"),
            ("driver", "Alice", "Rome", "2024-03-01"),
            ("scout", "Bob", "Lisbon", "2024-01-01"),
            ("driver", "Bob", "Lisbon", "2024-01-01"),
            ("driver", "Bob", "Porto", "2024-06-01"),
            ("driver", "Bob", "Faro", "2999-01-01"),
            ("scout", "Carl", "Lima", "2024-01-01"),
            ("driver", "Carl", "Lima", "2024-01-01"),
            ("driver", "Carl", "Quito", "2024-06-01"),
        ]:
            fact = FactDraft(subject, "lives in", city, valid_from=since)
            text = f"{subject} lives in {city}."
            [done] = memory.remember([MemoryDraft(text=text, agent=agent, fact=fact)])
            told[city] = done.observation_id
        memory.forget(told["Porto"], agent="driver")
        memory.forget(told["Quito"], agent="driver")
        now = {
            subject: [r.agents for r in memory.recall("", subject=subject).results if r.current]
            for subject in ("Alice", "Bob", "Carl")
        }
        memory.export(str(tmp_path / "out.jsonl"))
    finally:
        memory.close()
    assert now == {
        "Alice": [["driver"], ["scout"]],
        "Bob": [["scout", "driver"]],
        "Carl": [["scout", "driver"]],
    }
    write_markdown(tmp_path / "out.jsonl", tmp_path / "pages")
    pages = {
        city: (tmp_path / "pages" / f"{city.lower()}.md").read_text(encoding="utf-8")
        for city in ("Paris", "Lisbon", "Lima")
    }
    assert "Alice lives in Paris. (confidence 1; believed by scout)" in pages["Paris"]
    assert "Bob lives in Lisbon. (confidence 1; believed by driver, scout)" in pages["Lisbon"]
    assert "Carl lives in Lima. (confidence 1; believed by driver, scout)" in pages["Lima"]


def test_the_markdown_shows_names_and_texts_as_written_not_as_markdown(tmp_path: Path) -> None:
    # "*Bob*" was emphasis, "[x](y)" a link, "C#" fine but "# x" a heading, and a text's
    # second line a paragraph outside its list item ("- milk" a list of its own).
    memory = Memory.open(hash_settings(tmp_path / "m").store)
    memory.warm_up()
    try:
        memory.remember(
            [
                MemoryDraft(text="Totals\n===\n    indented", topics=["[x](y)"]),
                MemoryDraft(
                    text="Shopping for *Bob*:\n- milk\n2. eggs <b>fresh</b>",
                    topics=["[x](y)"],
                    source="list|fridge",
                    agent="a_b",
                    fact=FactDraft("*Bob*", "likes", "C#"),
                ),
            ]
        )
        memory.export(str(tmp_path / "out.jsonl"))
    finally:
        memory.close()
    write_markdown(tmp_path / "out.jsonl", tmp_path / "pages")
    index = (tmp_path / "pages" / "index.md").read_text(encoding="utf-8")
    assert "- [\\[x\\](y)](x-y.md) (2 observations)" in index
    topic = (tmp_path / "pages" / "x-y.md").read_text(encoding="utf-8")
    # "===" made "Totals" a heading, and four spaces a code block swallowing the item's notes.
    assert "Totals\n  \\===\n  \u00a0\u00a0\u00a0\u00a0indented (confidence 1;" in topic
    bob = (tmp_path / "pages" / "bob.md").read_text(encoding="utf-8")
    assert bob.startswith("# \\*Bob\\*\n\n## Facts\n\n- \\*Bob\\* likes C\\# (")
    assert (
        "Shopping for \\*Bob\\*:\n  \\- milk\n  2\\. eggs \\<b\\>fresh\\</b\\>"
        " (confidence 1; believed by a\\_b; source list\\|fridge)"
    ) in bob


def test_the_markdown_escapes_lines_broken_by_any_line_break_as_by_a_newline(
    tmp_path: Path,
) -> None:
    # Lines broken by CR, VT, FF, U+0085, U+2028 or U+2029 went unescaped: "- milk" after a
    # CR was a list item, four spaces after U+2028 a code block swallowing the item's notes.
    memory = Memory.open(hash_settings(tmp_path / "m").store)
    memory.warm_up()
    breaks = ["\r", "\r\n", "\v", "\f", "\x1c", "\x85", "\u2028", "\u2029"]
    try:
        memory.remember(
            [
                MemoryDraft(text=f"List {n}{br}- milk{br}{br}    rm -rf /tmp/x", topics=["shop"])
                for n, br in enumerate(breaks)
            ]
        )
        memory.export(str(tmp_path / "out.jsonl"))
    finally:
        memory.close()
    write_markdown(tmp_path / "out.jsonl", tmp_path / "pages")
    page = (tmp_path / "pages" / "shop.md").read_text(encoding="utf-8")
    for n in range(len(breaks)):
        assert (
            f"List {n}\n  \\- milk\n  \n  \u00a0\u00a0\u00a0\u00a0rm -rf /tmp/x (confidence 1;"
        ) in page, page
    assert not any(br in page for br in breaks if br != "\r\n")


# ---- a real server as owner -----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_commands_work_beside_a_running_doxa_serve(
    doxa: Doxa, tmp_path: Path, stdio_params: Callable[..., StdioServerParameters]
) -> None:
    params = stdio_params(doxa.data_dir)
    with (tmp_path / "serve.err").open("w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            served = await ok(client, "remember", text="Told to the server.", topics=["served"])
            lock = (doxa.data_dir / "owner.lock").read_text().split()
            assert lock, "the server owns the directory"

            def commands() -> dict[str, Any]:
                added = doxa.json("remember", "Told to the command.", "--topic", "served")
                found = doxa.json("recall", "", "--topic", "served")
                listed = doxa.json("recall", "--all")
                code, _, err = doxa("backup", str(tmp_path / "copy"))
                assert code == 0, err
                code, _, err = doxa("export", str(tmp_path / "live.jsonl"))
                assert code == 0, err
                refused = doxa("import", str(tmp_path / "live.jsonl"))
                return {"added": added, "found": found, "listed": listed, "refused": refused}

            seen = await anyio.to_thread.run_sync(commands)
            told = await ok(client, "recall", query="", topics=["served"])
            live = await anyio.to_thread.run_sync(doxa.counts)
    both = {served["observation_id"], seen["added"]["observation_id"]}
    assert {r["observation_id"] for r in seen["found"]["results"]} == both
    assert {r["observation_id"] for r in told["results"]} == both
    assert seen["listed"]["total"] == 2
    copy = await anyio.to_thread.run_sync(doxa.counts, tmp_path / "copy")
    assert copy["Observation"] == live["Observation"] == 2
    # Recalls made after the backup are the only difference.
    assert {k: n for k, n in copy.items() if "ecall" not in k and k != "RETURNED"} == {
        k: n for k, n in live.items() if "ecall" not in k and k != "RETURNED"
    }
    assert seen["refused"][0] == 1 and "a running doxa owns" in seen["refused"][2]
    header, _ = export_lines(tmp_path / "live.jsonl")
    assert header["counts"]["Observation"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("command", [["recall", "--all"], ["export", "-"]])
def test_a_reader_that_stops_reading_early_is_no_error(
    doxa: Doxa, server_env: dict[str, str], command: list[str]
) -> None:
    """``doxa recall --all | head -1``, ``doxa export - | head -1``: the pipe closes before
    the command has written (export said "[Errno 32] Broken pipe" and exited 1)."""
    doxa.json("remember", "Something to list.")
    where = ["--embedder", "hash", "--data-dir", str(doxa.data_dir)]
    process = subprocess.Popen(
        [sys.executable, "-m", "doxa.server", *command, *where],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    said = process.stderr.read().decode()
    assert process.wait(timeout=60) == 0, said
    assert "Error" not in said and "Broken pipe" not in said, said
