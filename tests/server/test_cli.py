"""The ``doxa`` command: client configurations, settings and their precedence, errors, and a
handshake that does not wait for the embedding model."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import hash_settings
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from doxa.server.app import create_server
from doxa.server.cli import main, serve_command
from doxa.server.settings import SettingsError, default_data_dir, load_settings
from doxa.store import Memory, MemoryDraft
from doxa.store.settings import BUNDLED_MODEL

pytestmark = pytest.mark.anyio

#: The ``doxa`` entry point installed beside the interpreter running the tests.
INSTALLED_DOXA = Path(sys.executable).parent / "doxa"


@pytest.fixture(autouse=True)
def no_doxa_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI reads ``os.environ``: start every test without ``DOXA_*`` variables."""
    for name in list(os.environ):
        if name.startswith("DOXA_"):
            monkeypatch.delenv(name)


def _config(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["config", *argv]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def _json_part(output: str) -> Any:
    return json.loads(output[output.index("{") :])


def _check_entry(entry: dict[str, Any], data_dir: Path, agent: str) -> None:
    command = Path(entry["command"])
    assert command.is_absolute()
    assert command == INSTALLED_DOXA
    assert command.is_file() and os.access(command, os.X_OK)
    assert entry["args"] == ["serve"]
    assert entry["env"] == {"DOXA_DATA_DIR": str(data_dir), "DOXA_AGENT": agent}


# ---- client configurations ------------------------------------------------------------------


@pytest.mark.parametrize("client", ["claude-desktop", "cursor"])
def test_config_prints_json_that_starts_the_installed_doxa_serve(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, client: str
) -> None:
    output = _config(capsys, client, "--data-dir", str(tmp_path / "memory"))

    config = json.loads(output)
    assert list(config["mcpServers"]) == ["doxa"]
    _check_entry(config["mcpServers"]["doxa"], tmp_path / "memory", client)


def test_config_for_claude_code_prints_an_mcp_add_line_and_an_mcp_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data_dir = tmp_path / "memory"
    output = _config(capsys, "claude-code", "--data-dir", str(data_dir))

    add = next(line for line in output.splitlines() if line.startswith("claude mcp add"))
    words = shlex.split(add)
    assert words[:4] == ["claude", "mcp", "add", "doxa"]
    assert words[words.index("--env") + 1] == f"DOXA_DATA_DIR={data_dir}"
    assert "DOXA_AGENT=claude-code" in words
    assert words[words.index("--") + 1 :] == [str(INSTALLED_DOXA), "serve"]
    _check_entry(_json_part(output)["mcpServers"]["doxa"], data_dir, "claude-code")


def test_config_names_the_agent_after_the_client_unless_told(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cursor = json.loads(_config(capsys, "cursor", "--data-dir", str(tmp_path)))
    assert cursor["mcpServers"]["doxa"]["env"]["DOXA_AGENT"] == "cursor"
    told = _config(capsys, "claude-desktop", "--data-dir", str(tmp_path), "--agent", "alice")
    assert json.loads(told)["mcpServers"]["doxa"]["env"]["DOXA_AGENT"] == "alice"


def test_an_install_run_by_uvx_is_configured_as_a_uvx_command() -> None:
    cached = str(Path.home() / ".cache" / "uv" / "archive-v0" / "Xy12ab")
    command, args = serve_command(cached)
    # uv's cache environment may be removed at any time: the command names where doxa came from.
    assert command == "uvx"
    assert args[0] == "--from" and args[1].startswith("git+")
    assert args[2:] == ["doxa", "serve"]


def test_uvx_is_recognised_with_its_cache_anywhere(tmp_path: Path) -> None:
    cached = tmp_path / "my-cache" / "archive-v0" / "Xy12ab"
    cached.mkdir(parents=True)
    (cached / "pyvenv.cfg").write_text("home = /usr/bin\nuv = 0.13.9\n", encoding="utf-8")
    assert serve_command(str(cached))[0] == "uvx"
    (cached / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    assert serve_command(str(cached))[0] != "uvx"


def test_a_pip_or_pipx_install_is_configured_by_its_own_doxa(tmp_path: Path) -> None:
    venv = tmp_path / "pipx" / "venvs" / "doxa"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "doxa").write_text("#!/bin/sh\n")
    assert serve_command(str(venv)) == (str(venv / "bin" / "doxa"), ["serve"])


def test_config_resolves_a_relative_data_dir_against_the_working_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    output = _config(capsys, "cursor", "--data-dir", "relative/memory")

    entry = json.loads(output)["mcpServers"]["doxa"]
    assert entry["env"]["DOXA_DATA_DIR"] == str(tmp_path.resolve() / "relative" / "memory")


def test_config_without_a_data_dir_names_the_user_data_directory(
    capsys: pytest.CaptureFixture[str],
) -> None:
    entry = json.loads(_config(capsys, "claude-desktop"))["mcpServers"]["doxa"]
    assert entry["env"]["DOXA_DATA_DIR"] == str(default_data_dir().resolve())


def test_the_claude_code_line_survives_a_data_dir_with_spaces(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data_dir = tmp_path / "Application Support" / "doxa"
    output = _config(capsys, "claude-code", "--data-dir", str(data_dir))

    add = next(line for line in output.splitlines() if line.startswith("claude mcp add"))
    words = shlex.split(add)
    assert words[words.index("--env") + 1] == f"DOXA_DATA_DIR={data_dir}"
    assert words[words.index("--") + 1 :] == [str(INSTALLED_DOXA), "serve"]


@pytest.mark.slow
def test_the_installed_doxa_command_prints_a_client_config(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOXA_")}
    done = subprocess.run(
        [str(INSTALLED_DOXA), "config", "claude-desktop", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    _check_entry(json.loads(done.stdout)["mcpServers"]["doxa"], tmp_path, "claude-desktop")


#: Runs the commands in one fresh interpreter and prints the modules they imported.
_IMPORTS_OF_COMMANDS = """
import json, sys
from doxa.server.cli import main
for args in json.loads(sys.argv[1]):
    assert main(args) == 0, args
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in ("mcp", "lancedb"))))
"""


@pytest.mark.slow
def test_commands_that_serve_no_tool_do_not_import_the_mcp_sdk(tmp_path: Path) -> None:
    # Importing it is about a second of each such command (and of nothing they do).
    memory = Memory.open(hash_settings(tmp_path / "memory").store)
    try:
        memory.remember([MemoryDraft(text="The ferry leaves at nine.")])
    finally:
        memory.close()
    where = ["--data-dir", str(tmp_path / "memory"), "--embedder", "hash"]
    commands = [
        ["stats", *where],
        ["export", str(tmp_path / "memory.jsonl"), *where],
        ["check", *where],
        ["backup", str(tmp_path / "copy"), *where],
    ]
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTS_OF_COMMANDS, json.dumps(commands)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    imported = json.loads(done.stdout.splitlines()[-1])
    assert "lancedb" in imported  # they did open the memory
    assert not [name for name in imported if name.split(".")[0] == "mcp"]


# ---- settings -------------------------------------------------------------------------------


def test_settings_default_to_configs_default_toml() -> None:
    settings = load_settings(environ={})

    assert settings.server.transport == "stdio"
    assert settings.server.host == "127.0.0.1"
    assert settings.server.port == 8765
    assert settings.server.log_level == "INFO"
    assert settings.store.agent == "default"
    assert settings.store.embedding.kind == "sentence-transformers"
    assert settings.store.embedding.model == BUNDLED_MODEL
    assert settings.store.data_dir == default_data_dir()


def test_each_settings_layer_overrides_the_one_below(tmp_path: Path) -> None:
    """default.toml < config file < DOXA_* environment < command-line flags."""
    config = tmp_path / "doxa.toml"
    config.write_text(
        '[store]\nagent = "from-file"\n[server]\nport = 9001\nhost = "127.0.0.2"\n'
        'log_level = "WARNING"\n',
        encoding="utf-8",
    )
    environ = {"DOXA_PORT": "9002", "DOXA_HOST": "127.0.0.3", "DOXA_EMBEDDER": "hash"}
    flags: dict[tuple[str, ...], object] = {("server", "port"): 9003}

    file_only = load_settings(config, {})
    with_env = load_settings(config, environ)
    with_flags = load_settings(config, environ, flags)

    assert (file_only.server.port, file_only.server.host) == (9001, "127.0.0.2")
    assert file_only.server.transport == "stdio"  # untouched: the default
    assert (with_env.server.port, with_env.server.host) == (9002, "127.0.0.3")
    assert with_env.store.agent == "from-file"  # the file still counts where env is silent
    assert with_env.store.embedding.kind == "hash"
    assert with_flags.server.port == 9003
    assert with_flags.server.host == "127.0.0.3"
    assert with_flags.server.log_level == "WARNING"


def test_a_config_file_merges_nested_tables_key_by_key(tmp_path: Path) -> None:
    config = tmp_path / "doxa.toml"
    config.write_text("[store.embedding]\nbatch_size = 8\n", encoding="utf-8")

    settings = load_settings(config, {})

    assert settings.store.embedding.batch_size == 8
    assert settings.store.embedding.model == BUNDLED_MODEL  # the rest of the table stays


def test_doxa_config_names_the_config_file_and_an_explicit_file_wins(tmp_path: Path) -> None:
    from_env = tmp_path / "env.toml"
    from_env.write_text('[store]\nagent = "env-file"\n', encoding="utf-8")
    explicit = tmp_path / "explicit.toml"
    explicit.write_text('[store]\nagent = "explicit-file"\n', encoding="utf-8")

    assert load_settings(None, {"DOXA_CONFIG": str(from_env)}).store.agent == "env-file"
    assert load_settings(explicit, {"DOXA_CONFIG": str(from_env)}).store.agent == "explicit-file"


def test_an_empty_environment_variable_is_ignored() -> None:
    assert load_settings(environ={"DOXA_PORT": ""}).server.port == 8765


def test_the_cli_applies_config_file_then_environment_then_flags(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "doxa.toml"
    config.write_text(f'[store]\ndata_dir = "{tmp_path / "from-file"}"\n', encoding="utf-8")
    monkeypatch.setenv("DOXA_CONFIG", str(config))

    def data_dir(*flags: str) -> str:
        output = _config(capsys, "cursor", *flags)
        return str(json.loads(output)["mcpServers"]["doxa"]["env"]["DOXA_DATA_DIR"])

    assert data_dir() == str(tmp_path / "from-file")
    monkeypatch.setenv("DOXA_DATA_DIR", str(tmp_path / "from-env"))
    assert data_dir() == str(tmp_path / "from-env")
    assert data_dir("--data-dir", str(tmp_path / "from-flag")) == str(tmp_path / "from-flag")


def test_a_bad_environment_value_is_a_settings_error_naming_the_setting() -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={"DOXA_PORT": "abc"})

    message = str(raised.value)
    assert "server.port" in message
    assert "integer" in message


def test_a_bad_environment_value_is_reported_with_the_variable_it_came_from() -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={"DOXA_PORT": "abc"})

    assert "DOXA_PORT" in str(raised.value)


@pytest.mark.parametrize(
    ("environ", "setting"),
    [
        ({"DOXA_PORT": "70000"}, "server.port"),
        ({"DOXA_TRANSPORT": "carrier-pigeon"}, "server.transport"),
        ({"DOXA_EMBEDDER": "word2vec"}, "store.embedding.kind"),
        ({"DOXA_LOG_LEVEL": "LOUD"}, "server.log_level"),
        # It failed in the model's loader with a traceback about hub names.
        ({"DOXA_MODEL": "/nonexistent/model"}, "store.embedding.model"),
    ],
)
def test_each_bad_value_names_its_setting(environ: dict[str, str], setting: str) -> None:
    with pytest.raises(SettingsError, match=r"invalid settings: .*" + re.escape(setting)):
        load_settings(environ=environ)


def test_the_torch_runtime_without_the_torch_extra_is_refused_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # It failed at the first call: "No module named 'sentence_transformers'", and a traceback.
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "sentence_transformers" else real(name, *a),
    )
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={"DOXA_MODEL_RUNTIME": "torch"})
    said = str(raised.value)
    assert "store.embedding.runtime" in said and "DOXA_MODEL_RUNTIME" in said
    assert "pip install 'doxa[torch]'" in said
    assert load_settings(environ={"DOXA_MODEL_RUNTIME": "onnx"}).store.embedding.runtime == "onnx"
    # The hash embedder runs no model: any runtime will do.
    hashed = load_settings(environ={"DOXA_MODEL_RUNTIME": "torch", "DOXA_EMBEDDER": "hash"})
    assert hashed.store.embedding.runtime == "torch"


def test_an_agent_of_only_spaces_is_refused_and_a_named_one_stripped() -> None:
    # "  " was stored as an agent's name (a tool's agent argument is stripped, this was not).
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={"DOXA_AGENT": "  "})
    said = str(raised.value)
    assert "store.agent = '  ' (from environment variable DOXA_AGENT): must name an agent" in said
    assert load_settings(environ={"DOXA_AGENT": " scout "}).store.agent == "scout"


def test_an_unknown_key_in_a_config_file_is_rejected_by_name(tmp_path: Path) -> None:
    config = tmp_path / "doxa.toml"
    config.write_text("[server]\nprot = 9000\n", encoding="utf-8")

    with pytest.raises(SettingsError, match=r"server\.prot"):
        load_settings(config, {})


def test_a_negative_ranking_weight_is_refused_by_name(tmp_path: Path) -> None:
    # A negative `field` still put the records holding a named field first (only 0 turned
    # that off); no component means anything below 0.
    config = tmp_path / "doxa.toml"
    config.write_text("[store.ranking]\nfield = -1.0\n", encoding="utf-8")

    with pytest.raises(SettingsError) as raised:
        load_settings(config, {})
    said = str(raised.value)
    assert f"store.ranking.field = -1.0 (from config file {config}): Input should be" in said
    assert "greater than or equal to 0" in said


def test_an_unknown_section_in_a_config_file_is_said_to_come_from_it(tmp_path: Path) -> None:
    config = tmp_path / "doxa.toml"
    config.write_text("[store.prun]\nmin_age_days = 0\n", encoding="utf-8")

    with pytest.raises(SettingsError) as raised:
        load_settings(config, {})
    assert f"store.prun = {{'min_age_days': 0}} (from config file {config})" in str(raised.value)


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("[store.prune]\nmerge_similarity = true", "store.prune.merge_similarity = true"),
        ("[store.prune]\nmin_impressions = true", "store.prune.min_impressions = true"),
        ("[store.learning]\nretrain_every = false", "store.learning.retrain_every = false"),
        ('[store.prune]\nmerge = "no"', 'store.prune.merge = "no"'),
        ("[store.prune]\nmerge = 0", "store.prune.merge = 0"),
        ('[store.prune]\nmin_impressions = "2"', 'store.prune.min_impressions = "2"'),
    ],
)
def test_a_config_value_of_another_type_than_its_default_is_refused(
    tmp_path: Path, line: str, said: str
) -> None:
    config = tmp_path / "doxa.toml"
    config.write_text(line + "\n", encoding="utf-8")

    with pytest.raises(SettingsError) as raised:
        load_settings(config, {})
    assert str(raised.value).startswith(f"invalid settings: {said} (from config file {config})")


@pytest.mark.parametrize("content", [None, "[server\nport = 1\n"])
def test_a_missing_or_malformed_config_file_is_a_settings_error_naming_the_file(
    tmp_path: Path, content: str | None
) -> None:
    config = tmp_path / "doxa.toml"
    if content is not None:
        config.write_text(content, encoding="utf-8")

    with pytest.raises(SettingsError, match=r"config file .*doxa\.toml"):
        load_settings(config, {})


def test_the_cli_exits_2_with_the_message_on_stderr_for_a_bad_setting(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOXA_PORT", "abc")

    assert main(["serve"]) == 2

    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("doxa: invalid settings: server.port")
    assert err.count("\n") == 1  # one line, no traceback


@pytest.mark.parametrize(
    ("argv", "command", "unknown"),
    [
        (["export", "--bogus", "x.jsonl"], "doxa export", "--bogus"),
        (["recall", "q", "--limt", "3"], "doxa recall", "--limt 3"),
        (["token", "create", "--agent", "a", "--zz"], "doxa token create", "--zz"),
    ],
)
def test_a_flag_a_command_does_not_take_is_refused_with_that_commands_usage(
    capsys: pytest.CaptureFixture[str], argv: list[str], command: str, unknown: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)

    assert exited.value.code == 2
    _, err = capsys.readouterr()
    assert err.startswith(f"usage: {command} ")  # not doxa's own list of commands
    assert err.endswith(f"{command}: error: unrecognized arguments: {unknown}\n")


def test_a_flag_overrides_a_valid_environment_value_and_is_validated_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOXA_PORT", "9000")

    assert main(["serve", "--transport", "http", "--port", "0"]) == 2

    assert (
        "server.port = 0 (from command-line flag --port):"
        " Input should be greater than or equal to 1" in capsys.readouterr().err
    )


def test_the_cli_reports_a_missing_config_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["serve", "--config", str(tmp_path / "nowhere.toml")]) == 2
    assert "nowhere.toml" in capsys.readouterr().err
    latin = tmp_path / "latin-1.toml"
    latin.write_bytes('[store]\nagent = "café"\n'.encode("latin-1"))
    assert main(["serve", "--config", str(latin)]) == 2
    assert f"config file {latin}: not UTF-8 text (byte 21); TOML is UTF-8" in (
        capsys.readouterr().err
    )


@pytest.mark.slow
def test_the_installed_doxa_exits_2_for_a_bad_environment_value(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOXA_")}
    env["DOXA_PORT"] = "abc"
    done = subprocess.run(
        [str(INSTALLED_DOXA), "serve", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )

    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("doxa: invalid settings: server.port")
    assert "Traceback" not in done.stderr


# ---- handshake --------------------------------------------------------------------------------


def test_the_modules_a_handshake_needs_leave_the_stores_libraries_to_the_memory_thread() -> None:
    # numpy, Kùzu, LanceDB and the model's runtime take about 1.5 s to import; the thread that
    # opens the memory imports them, so initialize and tools/list need not wait for them.
    heavy = ("numpy", "kuzu", "lancedb", "pyarrow", "onnxruntime", "torch")
    # doxa's own that a handshake need not run: the tools load at their first call, and
    # reading times in words (compiling its patterns: about 6 ms) at the first remember or
    # in the memory's thread.
    first_use = (
        *(f"doxa.tools.{tool}" for tool in ("remember", "recall", "cite_evidence", "feedback")),
        *("doxa.tools.forget", "doxa.tools.prune", "doxa.store.event_time", "doxa.store.timewords"),
    )
    probe = (
        "import sys, doxa.server.cli, doxa.server.app, doxa.server.stdio, doxa.server.http_server"
        f"; print(sorted(set({heavy + first_use!r}) & set(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"


def test_the_server_tells_its_version_read_from_the_metadata_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib import metadata

    installed = metadata.version("doxa")

    def parsed(_: object) -> None:
        raise AssertionError("the whole metadata parsed, README and all")

    # importlib's version() parses the whole METADATA file, the README as its description
    # included: about 3 ms of every start.
    monkeypatch.setattr(metadata.PathDistribution, "metadata", property(parsed))
    server = create_server(load_settings(None, {}, {("store", "data_dir"): str(tmp_path)}))
    assert server.version == installed


@pytest.mark.slow
async def test_the_handshake_answers_without_waiting_for_the_embedding_model(
    tmp_path: Path, onnx_cache: Path, server_env: dict[str, str]
) -> None:
    """initialize and tools/list in a fresh process with the real embedder kind; the model
    loads on a thread. The exact timing belongs to bench/speed.py; this only bounds it."""
    params = StdioServerParameters(
        command=str(INSTALLED_DOXA),
        args=["serve", "--embedder", "sentence-transformers", "--data-dir", str(tmp_path)],
        env={**server_env, "DOXA_ONNX_CACHE": str(onnx_cache)},
    )
    with (tmp_path / "stderr.txt").open("w", encoding="utf-8") as errlog, anyio.fail_after(120):
        started = anyio.current_time()
        async with Client(stdio_client(params, errlog=errlog)) as client:
            tools = await client.list_tools()
            elapsed = anyio.current_time() - started

    assert len(tools.tools) == 8
    assert elapsed < 20, f"initialize + tools/list took {elapsed:.1f} s"


def test_a_model_name_nothing_holds_exits_2_naming_the_setting(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # It failed deep in the model's loader, exit 1, with a traceback about connecting to the
    # hub (doxa loads models offline).
    code = main(["recall", "x", "--model", "nosuchmodel", "--data-dir", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert code == 2
    assert "store.embedding.model" in err and "nor a model of that name" in err
    assert "Traceback" not in err


def test_ctrl_c_in_a_command_says_interrupted_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import doxa.server.tool_commands as tool_commands

    def interrupted(*_: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(tool_commands, "tool_command", interrupted)
    code = main(["recall", "x", "--embedder", "hash", "--data-dir", str(tmp_path / "m")])
    assert code == 130
    assert capsys.readouterr().err == "doxa recall: interrupted\n"


def test_a_reader_gone_before_config_is_printed_is_no_traceback(tmp_path: Path) -> None:
    # `doxa config claude-code | head -1` ended in a BrokenPipeError traceback now and then.
    read, write = os.pipe()
    os.close(read)  # the reader is gone before a byte is written
    try:
        done = subprocess.run(
            [str(INSTALLED_DOXA), "config", "claude-code", "--data-dir", str(tmp_path)],
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, b"")


def test_ctrl_c_while_the_memory_loads_on_its_own_thread_is_ctrl_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It became "the memory failed to load: " (no reason) and a traceback.
    from doxa.store.memory import Memory

    def interrupted(self: Memory) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Memory, "_load_everything", interrupted)
    store = load_settings(environ={"DOXA_EMBEDDER": "hash", "DOXA_DATA_DIR": str(tmp_path)})
    memory = Memory.open(store.store)
    try:
        with pytest.raises(KeyboardInterrupt):
            memory.warm_up()
    finally:
        memory.close()


def test_a_data_dir_that_is_a_file_is_named_without_a_traceback(tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("mine\n", encoding="utf-8")
    done = subprocess.run(
        [str(INSTALLED_DOXA), "remember", "x", "--embedder", "hash", "--data-dir", str(file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.endswith(
        f"doxa remember: the data directory {file} is a file; name a directory\n"
    )
    assert "Traceback" not in done.stderr
    assert file.read_text(encoding="utf-8") == "mine\n"


def test_every_flag_and_argument_of_every_command_says_what_it_is() -> None:
    import argparse

    from doxa.server.cli import _parser

    def bare(parser: argparse.ArgumentParser, path: str) -> list[str]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += bare(sub, f"{path} {name}")
            elif not action.help and not isinstance(action, argparse._HelpAction):
                found.append(f"{path} {(action.option_strings or [action.dest])[0]}")
        return found

    assert bare(_parser(), "doxa") == []


def test_a_serve_command_line_is_parsed_without_the_other_commands_parsers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    from doxa.server import cli, tool_commands

    def built(*_: Any) -> None:
        raise AssertionError("the other commands' parsers were built")

    # Building the twenty other commands' parsers took about 5 ms of every server start.
    monkeypatch.setattr(tool_commands, "add_parsers", built)
    args = cli._parsed(["serve", "--port", "9000", "--data-dir", "/tmp/d"])
    assert (args.command, args.port, args.data_dir, args.transport) == (
        "serve",
        9000,
        "/tmp/d",
        None,
    )
    with pytest.raises(SystemExit):
        cli._parsed(["serve", "--prot", "9000"])
    refused = capsys.readouterr().err
    assert "doxa serve: error: unrecognized arguments: --prot 9000" in refused
    monkeypatch.undo()

    def serve_help(parser: argparse.ArgumentParser) -> str:
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return commands.choices["serve"].format_help()

    assert serve_help(cli._parser(serve_only=True)) == serve_help(cli._parser())
