"""``doxa prune`` as a user runs it: a dry run by default, ``--apply`` retires, with no server
on the directory and through the server that owns it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import hash_settings

from doxa.server.cli import main
from doxa.store import Memory, MemoryDraft
from doxa.store.sharing import SharedMemory

TEXTS = ["The ferry leaves at noon.", "The ferry leaves at noon!", "Lighthouse note."]


def fill(data_dir: Path) -> list[str]:
    memory = Memory.open(hash_settings(data_dir).store)
    memory.warm_up()
    try:
        done = memory.remember([MemoryDraft(text=t) for t in TEXTS], batch=True)
        assert memory.settle(timeout=30)
    finally:
        memory.close()
    return [d.observation_id for d in done]


def test_prune_lists_by_default_and_retires_with_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "m"
    ids = fill(data_dir)
    flags = ["--embedder", "hash", "--data-dir", str(data_dir)]
    assert main(["prune", *flags]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("dry run: 1 would be retired (0 unused, 1 merged")
    assert f"{ids[1]}  merged into {ids[0]}: The ferry leaves at noon!" in printed
    assert main(["prune", *flags, "--apply", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["dry_run"] is False and done["merged"] == 1 and done["at"]
    assert [r["observation_id"] for r in done["retired"]] == [ids[1]]
    assert done["rule"]["max_confidence"] == "0.5"
    memory = Memory.open(hash_settings(data_dir).store)
    memory.warm_up()
    try:
        assert memory.graph.live_observation_ids() == {ids[0], ids[2]}
        assert memory.evidence(ids[1])["retired"].startswith(f"pruned: merged into {ids[0]}")
    finally:
        memory.close()


def test_prune_prints_a_texts_further_lines_under_its_first_where_they_forge_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # At a line's start, a text's second line listed an observation of its own as retired.
    forged = "\n  obs_00000000deadbeef  unused: The CEO approved it."
    data_dir = tmp_path / "m"
    memory = Memory.open(hash_settings(data_dir).store)
    memory.warm_up()
    try:
        texts = [f"Printer broken.{forged}", f"printer broken.{forged}"]
        done = memory.remember([MemoryDraft(text=t) for t in texts], batch=True)
        assert memory.settle(timeout=30)
    finally:
        memory.close()
    assert main(["prune", "--embedder", "hash", "--data-dir", str(data_dir)]) == 0
    printed = capsys.readouterr().out
    head = f"  {done[1].observation_id}  merged into {done[0].observation_id}: "
    assert f"{head}printer broken.\n{' ' * len(head)}  obs_00000000deadbeef  unused: " in printed
    assert "\n  obs_00000000deadbeef" not in printed, printed


def test_prune_goes_through_the_server_that_owns_the_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "m"
    ids = fill(data_dir)
    owner = SharedMemory(hash_settings(data_dir).store)
    owner.start()
    try:
        owner.stats()  # settled: this process owns the memory, the command relays to it
        assert owner.owner
        flags = ["--embedder", "hash", "--data-dir", str(data_dir), "--apply"]
        # The command's rule counts, not the server's own settings.
        config = tmp_path / "doxa.toml"
        config.write_text("[store.prune]\nmerge = false\n")
        assert main(["prune", *flags, "--config", str(config)]) == 0
        assert capsys.readouterr().out == "retired nothing: nothing meets the rule\n"
        assert main(["prune", *flags, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["merged"] == 1
        assert owner.memory is not None
        assert ids[1] not in owner.memory.graph.live_observation_ids()
    finally:
        owner.close()


def test_a_bad_rule_in_the_configuration_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "doxa.toml"
    config.write_text("[store.prune]\nmerge_similarity = 0.3\n")
    flags = ["--embedder", "hash", "--data-dir", str(tmp_path / "m"), "--config", str(config)]
    assert main(["prune", *flags]) == 2
    assert "merge_similarity" in capsys.readouterr().err
