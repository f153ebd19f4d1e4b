"""``doxa check`` and ``doxa repair`` as a user runs them: on a healthy directory, on a
damaged index, and on a directory a running server holds."""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from calls import ok
from conftest import hash_settings
from mcp.client import Client

from doxa.server.cli import main
from doxa.store import Memory, MemoryDraft


def fill(data_dir: Path, n: int = 5) -> None:
    memory = Memory.open(hash_settings(data_dir).store)
    memory.warm_up()
    try:
        memory.remember([MemoryDraft(text=f"Lighthouse note {i}.") for i in range(n)], batch=True)
        assert memory.settle(timeout=30)
    finally:
        memory.close()


def judge(data_dir: Path) -> None:
    """Recall the notes and judge three of the results: two accepted, one rejected."""
    memory = Memory.open(hash_settings(data_dir).store)
    memory.warm_up()
    try:
        found = memory.recall("lighthouse note")
        ids = [r.observation_id for r in found.results]
        memory.feedback(found.recall_id, accepted=ids[:2], rejected=ids[2:3])
        assert memory.settle(timeout=30)
    finally:
        memory.close()


def test_check_says_healthy_and_prints_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(tmp_path / "m")
    judge(tmp_path / "m")
    assert main(["check", "--embedder", "hash", "--data-dir", str(tmp_path / "m")]) == 0
    printed = capsys.readouterr().out
    assert "observations 5" in printed and "search index: 5 rows" in printed
    # Five results shown, three judged: only those count towards a ranker.
    assert (
        "ranker: none yet; 3 results judged of the 200 the first needs; it is trained at the"
        " next start that has them, or while serving at each 500 newly judged" in printed
    )
    assert printed.rstrip().endswith("healthy")
    # Enough judged: the next start trains it (none while serving with retrain_every 0).
    config = tmp_path / "doxa.toml"
    config.write_text("[store.learning]\nmin_judgements = 10\nretrain_every = 0\n")
    flags = ["--embedder", "hash", "--data-dir", str(tmp_path / "m"), "--config", str(config)]
    for _ in range(3):
        judge(tmp_path / "m")  # opened with 200 needed: none trained at those starts
    assert main(["check", *flags]) == 0
    assert (
        "ranker: none yet; 12 results judged (the first needs 10, accepted and rejected ones);"
        " it is trained at the next start that has them, and used only if"
    ) in capsys.readouterr().out


def test_every_link_is_seen_from_both_ends_in_a_healthy_graph(tmp_path: Path) -> None:
    from doxa.store.graph import Graph

    data_dir = tmp_path / "m"
    fill(data_dir)
    judge(data_dir)
    graph = Graph(data_dir / "graph", read_only=True)
    try:
        assert graph.one_sided_links() == {}  # OF, HOLDS, MENTIONS, RETURNED among them
    finally:
        graph.close()


def test_check_reports_links_seen_from_one_end_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a 20,000-loop soak left in a relationship updated in place (Kùzu 0.11.3): check
    # names the table and what to do.
    from doxa.store.graph import Graph

    fill(tmp_path / "m")
    monkeypatch.setattr(Graph, "one_sided_links", lambda self: {"RETURNED": 3})
    flags = ["--embedder", "hash", "--data-dir", str(tmp_path / "m"), "--json"]
    assert main(["check", *flags]) == 1
    found = json.loads(capsys.readouterr().out)
    assert found["graph"]["one_sided_links"] == 3
    assert found["problems"] == [
        "3 nodes' RETURNED links read differently from their two ends: Kùzu's storage of"
        " that table is damaged, and writes reaching them fail; restore the graph from a"
        " backup (`doxa backup`), or `doxa export` and import the file into a new directory"
    ]


@pytest.mark.parametrize("damage", ["its data files gone", "no index at all"])
def test_check_finds_a_damaged_or_missing_index_and_repair_rebuilds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    import shutil

    data_dir = tmp_path / "m"
    fill(data_dir)
    judge(data_dir)
    if damage == "its data files gone":
        for path in glob.glob(str(data_dir / "index/observations.lance/data/*.lance")):
            os.remove(path)
    else:
        shutil.rmtree(data_dir / "index")
    flags = ["--embedder", "hash", "--data-dir", str(data_dir), "--json"]
    assert main(["check", *flags]) == 1
    found = json.loads(capsys.readouterr().out)
    assert found["graph"]["judged_results"] == 3
    if damage == "its data files gone":
        assert not found["healthy"] and "cannot be read" in found["problems"][0]
    else:
        assert found["problems"] == [
            "there is no search index; the next start rebuilds it from the graph, or run"
            " `doxa repair`"
        ]
        assert not (data_dir / "index").exists()  # a check changes nothing
    assert main(["repair", *flags]) == 0
    repaired = json.loads(capsys.readouterr().out)
    assert repaired["healthy"] and repaired["index"]["rows"] == 5


def test_check_calls_a_ranker_of_wrong_signs_unused_as_a_start_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from doxa.store.learning import FEATURES, RankerModel, save_model

    data_dir = tmp_path / "m"
    fill(data_dir)
    n = len(FEATURES)
    # Every weight negative: the least relevant first, which a start refuses to use.
    wrong = RankerModel(1, FEATURES, (0.0,) * n, (1.0,) * n, (-2.0,) * n, 0.0, True, 353, "")
    save_model(data_dir, wrong)
    flags = ["--embedder", "hash", "--data-dir", str(data_dir), "--json"]
    assert main(["check", *flags]) == 1
    found = json.loads(capsys.readouterr().out)
    assert found["ranker"]["active"] == 0
    assert any("has weights of the wrong sign" in p for p in found["problems"])


def test_check_calls_a_ranker_its_settings_no_longer_pass_unused_as_a_start_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from doxa.store.learning import FEATURES, WEIGHT_SIGNS, RankerModel, save_model

    data_dir = tmp_path / "m"
    fill(data_dir)
    n = len(FEATURES)
    # 8 held-out recalls better, 4 worse: no sign at the default significance (0.01).
    held_out = {"better": 8.0, "worse": 4.0, "blend": 0.7, "base": 0.6, "recalls": 12.0}
    kept = RankerModel(
        1, FEATURES, (0.0,) * n, (1.0,) * n, WEIGHT_SIGNS, 0.0, True, 353, "", held_out
    )
    save_model(data_dir, kept)
    flags = ["--embedder", "hash", "--data-dir", str(data_dir)]
    assert main(["check", *flags]) == 0
    out = capsys.readouterr().out
    assert "ranker: v1 trained on 353 judged results, unused: its held-out check does not" in out
    assert "ordered 8 better than the base ranking and 4 worse" in out


def test_check_names_a_damaged_ranker_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "m"
    fill(data_dir)
    (data_dir / "ranker.json").write_bytes(b"\xff\xfe not a model")
    flags = ["--embedder", "hash", "--data-dir", str(data_dir)]
    assert main(["check", *flags]) == 1
    printed = capsys.readouterr().out
    assert "ranker: its file is damaged (see below); recall uses the base ranking" in printed
    assert "problem: the ranker's file ranker.json is damaged: recall uses the base" in printed
    assert main(["check", *flags, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["ranker"] == {"damaged": 1}


@pytest.mark.slow
@pytest.mark.anyio
async def test_check_on_a_directory_a_server_holds_exits_3(
    tmp_path: Path,
    start_server: Callable[..., Awaitable[Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    data_dir = tmp_path / "m"
    server = await start_server("http", data_dir)
    async with Client(server.url) as client:
        await ok(client, "remember", text="Held by the server.")
    assert main(["check", "--embedder", "hash", "--data-dir", str(data_dir)]) == 3
    said = capsys.readouterr().err
    assert said == (
        f"doxa check: the memory in {data_dir} is in use by another doxa process (a server, or"
        " a command such as an import): check opens the graph itself, so let it finish or stop"
        " it, and run doxa check again\n"
    )
