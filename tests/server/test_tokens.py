"""Bearer tokens without a server: the token file, ``doxa token create|list|revoke``, the access
settings, and the checks ``doxa serve`` makes before it listens."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from doxa.server.access import Access, is_loopback, transport_security
from doxa.server.cli import main
from doxa.server.settings import SettingsError, load_settings
from doxa.server.tokens import TokenFileError, TokenStore, digest


@pytest.fixture(autouse=True)
def no_doxa_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI reads ``os.environ``: start every test without ``DOXA_*`` variables."""
    for name in list(os.environ):
        if name.startswith("DOXA_"):
            monkeypatch.delenv(name)


def _token(capsys: pytest.CaptureFixture[str], data_dir: Path, *flags: str) -> tuple[str, str]:
    """``doxa token create``: (the secret printed on stdout, the explanation on stderr)."""
    assert main(["token", "create", "--data-dir", str(data_dir), *flags]) == 0
    out, err = capsys.readouterr()
    return out.strip(), err


def _listed(capsys: pytest.CaptureFixture[str], data_dir: Path) -> list[dict[str, object]]:
    assert main(["token", "list", "--data-dir", str(data_dir), "--json"]) == 0
    out, _ = capsys.readouterr()
    listed: list[dict[str, object]] = json.loads(out)
    return listed


# ---- doxa token --------------------------------------------------------------------------------


def test_create_prints_the_token_once_and_stores_only_its_hash_in_a_0600_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "memory"  # created by the command
    secret, explanation = _token(capsys, data_dir, "--agent", "scout")

    assert secret.startswith("doxa_") and len(secret) >= 40 and "\n" not in secret
    assert "scout" in explanation and "shown only now" in explanation
    # Made before a first start, or for a mistyped --data-dir: it says there is no memory yet.
    assert f"note: {data_dir} holds no memory yet; the token is for a server" in explanation
    path = data_dir / "tokens.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text(encoding="utf-8")
    assert secret not in text
    assert secret[5:] not in text  # not even without its prefix
    stored = json.loads(text)["tokens"]
    assert [t["sha256"] for t in stored] == [digest(secret)]
    assert stored[0]["agent"] == "scout"
    # No temporary file left behind.
    assert sorted(p.name for p in data_dir.iterdir()) == ["tokens.json", "tokens.lock"]


def test_list_shows_id_agent_flags_and_times_but_never_a_secret_or_hash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = _token(capsys, tmp_path, "--agent", "scout")
    second, _ = _token(capsys, tmp_path, "--agent", "driver", "--read-only")
    third, _ = _token(capsys, tmp_path, "--agent", "boss", "--admin")

    listed = _listed(capsys, tmp_path)
    assert [(t["agent"], t["read_only"], t["admin"]) for t in listed] == [
        ("scout", False, False),
        ("driver", True, False),
        ("boss", False, True),
    ]
    for entry in listed:
        assert str(entry["id"]).startswith("tok_")
        assert entry["created"] and entry["last_used"] is None
        assert "sha256" not in entry and "token" not in entry
    assert main(["token", "list", "--data-dir", str(tmp_path)]) == 0
    table, _ = capsys.readouterr()
    assert "read-only" in table and "admin" in table and "read-write" in table
    assert "never" in table
    for secret in (first, second, third):
        assert secret not in table and digest(secret) not in table


def test_revoke_deletes_the_token_and_an_unknown_id_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kept, _ = _token(capsys, tmp_path, "--agent", "scout")
    gone, _ = _token(capsys, tmp_path, "--agent", "driver")
    store = TokenStore(tmp_path)
    gone_id = next(r.id for r in store.records() if r.agent == "driver")

    assert main(["token", "revoke", gone_id, "--data-dir", str(tmp_path)]) == 0
    assert gone_id in capsys.readouterr().out
    assert [t["agent"] for t in _listed(capsys, tmp_path)] == ["scout"]
    assert store.verify(gone) is None
    assert store.verify(kept) is not None
    assert stat.S_IMODE((tmp_path / "tokens.json").stat().st_mode) == 0o600

    assert main(["token", "revoke", gone_id, "--data-dir", str(tmp_path)]) == 1
    assert "no token with id" in capsys.readouterr().err


def test_list_and_revoke_where_there_is_no_memory_nor_token_exit_1_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A mistyped --data-dir listed "no tokens in typo/tokens.json" and exited 0.
    typo = tmp_path / "typo"
    for args in (["list"], ["list", "--json"], ["revoke", "tok_x"]):
        assert main(["token", *args, "--data-dir", str(typo)]) == 1
        out, err = capsys.readouterr()
        assert out == "" and f"no memory and no tokens in {typo}; check --data-dir" in err
    assert not typo.exists()
    # A memory without tokens lists none; tokens made before a first start are listed.
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "graph").touch()  # what a memory's directory holds
    assert main(["token", "list", "--data-dir", str(tmp_path / "memory")]) == 0
    assert "no tokens in" in capsys.readouterr().err
    _token(capsys, tmp_path / "early", "--agent", "scout")
    assert [t["agent"] for t in _listed(capsys, tmp_path / "early")] == ["scout"]


def test_a_token_is_read_only_or_admin_not_both_and_needs_an_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as both:
        main(["token", "create", "--agent", "x", "--read-only", "--admin", "--data-dir", "d"])
    assert both.value.code == 2
    assert main(["token", "create", "--agent", "  ", "--data-dir", str(tmp_path)]) == 2
    assert "--agent must not be empty" in capsys.readouterr().err
    assert not (tmp_path / "tokens.json").exists()


def test_the_help_names_what_read_only_and_admin_tokens_may_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # --admin said only "may also forget other agents' observations": admin tokens prune too.
    with pytest.raises(SystemExit) as shown:
        main(["token", "create", "--help"])
    assert shown.value.code == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "--read-only may only read" in said
    assert "--admin may also forget other agents' observations and prune" in said


def test_create_with_json_prints_the_token_and_its_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["token", "create", "--agent", " scout ", "--data-dir", str(tmp_path), "--json"]
    assert main(argv) == 0
    out, _ = capsys.readouterr()
    created = json.loads(out)
    assert created["agent"] == "scout"  # stripped, as the store strips agent names
    assert TokenStore(tmp_path).verify(created["token"]) is not None


def test_the_data_dir_comes_from_the_environment_like_every_other_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOXA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("DOXA_AGENT", "not-the-token-agent")
    assert main(["token", "create", "--agent", "scout"]) == 0
    capsys.readouterr()
    assert [r.agent for r in TokenStore(tmp_path).records()] == ["scout"]


@pytest.mark.parametrize("damage", ["cut short", "no UTF-8"])
def test_a_malformed_token_file_is_an_error_naming_it_and_accepts_nobody(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    secret, _ = _token(capsys, tmp_path, "--agent", "scout")
    path = tmp_path / "tokens.json"
    kept = path.read_bytes()
    path.write_bytes(kept[:-20] if damage == "cut short" else b"\xff\xfe" + kept)

    assert main(["token", "list", "--data-dir", str(tmp_path)]) == 2
    assert str(path) in capsys.readouterr().err
    assert main(["token", "create", "--agent", "x", "--data-dir", str(tmp_path)]) == 2
    capsys.readouterr()
    store = TokenStore(tmp_path)
    assert store.verify(secret) is None
    assert store.in_use()  # a damaged file requires tokens rather than dropping the requirement
    with pytest.raises(TokenFileError):
        store.records()


# ---- the token store ---------------------------------------------------------------------------


def test_a_running_store_sees_tokens_created_and_revoked_by_another_process(
    tmp_path: Path,
) -> None:
    serving = TokenStore(tmp_path)  # as a server holds it
    assert not serving.in_use()
    record, secret = TokenStore(tmp_path).create("scout")  # as `doxa token create` does
    assert serving.in_use()
    found = serving.verify(secret)
    assert found is not None and found.agent == "scout"

    assert TokenStore(tmp_path).revoke(record.id) == record
    assert serving.verify(secret) is None
    # Revoking the last token left a loopback server open to anyone (auth = "auto").
    assert serving.in_use() and serving.records() == []


def test_verify_refuses_wrong_empty_and_overlong_tokens(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    _, secret = store.create("scout")
    assert store.verify(secret) is not None
    assert store.verify(secret + "x") is None
    assert store.verify(secret[:-1]) is None
    assert store.verify("") is None
    assert store.verify(digest(secret)) is None  # the stored hash is not a token
    assert store.verify("x" * 100_000) is None


def test_last_use_is_recorded_at_most_once_a_minute_per_token(tmp_path: Path) -> None:
    store = TokenStore(tmp_path)
    record, _ = store.create("scout")
    assert store.due_for_use_note(record)
    store.note_used(record.id)
    assert not store.due_for_use_note(record)
    (listed,) = TokenStore(tmp_path).records()
    assert listed.last_used is not None
    assert listed.sha256 == record.sha256


# ---- settings and the checks before serving ----------------------------------------------------


def test_access_settings_come_from_file_environment_and_flags(tmp_path: Path) -> None:
    defaults = load_settings(environ={})
    assert defaults.server.auth == "auto"
    assert defaults.server.allowed_hosts == [] and defaults.server.allowed_origins == []

    config = tmp_path / "doxa.toml"
    config.write_text('[server]\nallowed_hosts = ["file.example"]\n', encoding="utf-8")
    environ = {"DOXA_AUTH": "tokens", "DOXA_ALLOWED_ORIGINS": "https://a.example, https://b.x"}
    settings = load_settings(config, environ)
    assert settings.server.auth == "tokens"
    assert settings.server.allowed_hosts == ["file.example"]
    assert settings.server.allowed_origins == ["https://a.example", "https://b.x"]

    with pytest.raises(SettingsError, match="DOXA_AUTH"):
        load_settings(environ={"DOXA_AUTH": "maybe"})


def test_serve_flags_set_auth_and_the_allow_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []
    monkeypatch.setattr("doxa.server.cli.serve", lambda settings: seen.append(settings) or 0)
    argv = ["serve", "--data-dir", str(tmp_path), "--auth", "none"]
    argv += ["--allowed-hosts", "a.example,b.example:8443", "--allowed-origins", "https://a.x"]
    assert main(argv) == 0
    (settings,) = seen
    assert settings.server.auth == "none"
    assert settings.server.allowed_hosts == ["a.example", "b.example:8443"]
    assert settings.server.allowed_origins == ["https://a.x"]


def test_host_and_origin_allow_lists_hold_loopback_the_bind_address_and_the_configured_names(
    tmp_path: Path,
) -> None:
    loopback = load_settings(environ={}).server
    security = transport_security(loopback)
    assert security.enable_dns_rebinding_protection
    # Bare too: a local proxy's Host $host names no port.
    assert security.allowed_hosts == [
        *("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")
    ]

    exposed = load_settings(
        environ={
            "DOXA_HOST": "192.0.2.7",
            "DOXA_ALLOWED_HOSTS": "doxa.example,doxa.example:8443",
            "DOXA_ALLOWED_ORIGINS": "https://app.example",
        }
    ).server
    security = transport_security(exposed)
    assert "192.0.2.7:*" in security.allowed_hosts
    # A name without a port allows it bare (through a proxy) and on any port.
    assert {"doxa.example", "doxa.example:*", "doxa.example:8443"} <= set(security.allowed_hosts)
    assert "doxa.example:8443:*" not in security.allowed_hosts
    assert {"https://app.example", "https://app.example:*"} <= set(security.allowed_origins)
    wildcard = load_settings(environ={"DOXA_HOST": "0.0.0.0"}).server
    assert not any(h.startswith("0.0.0.0") for h in transport_security(wildcard).allowed_hosts)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.0.2.7", False),
        ("doxa.example", False),
    ],
)
def test_which_bind_addresses_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def _access(data_dir: Path, **server: object) -> Access:
    overrides: dict[tuple[str, ...], object] = {("store", "data_dir"): str(data_dir)}
    for key, value in server.items():
        overrides[("server", key)] = value
    return Access(load_settings(environ={}, overrides=overrides))


def test_serving_off_loopback_without_a_token_or_with_auth_none_is_refused(
    tmp_path: Path,
) -> None:
    refused = r"refusing to serve on 192\.0\.2\.7.*doxa token create"
    with pytest.raises(SettingsError, match=refused):
        _access(tmp_path, host="192.0.2.7").check()
    TokenStore(tmp_path).create("scout")
    _access(tmp_path, host="192.0.2.7").check()  # a token exists: allowed
    with pytest.raises(SettingsError, match='auth = "none"'):
        _access(tmp_path, host="192.0.2.7", auth="none").check()


def test_a_wildcard_bind_needs_allowed_hosts(tmp_path: Path) -> None:
    TokenStore(tmp_path).create("scout")
    with pytest.raises(SettingsError, match="allowed_hosts"):
        _access(tmp_path, host="0.0.0.0").check()
    _access(tmp_path, host="0.0.0.0", allowed_hosts=["doxa.example"]).check()


def test_tokens_are_required_once_one_was_created_or_off_loopback_or_always_or_never(
    tmp_path: Path,
) -> None:
    assert not _access(tmp_path).required()
    assert _access(tmp_path, auth="tokens").required()
    assert _access(tmp_path, host="192.0.2.7").required()
    record, _ = TokenStore(tmp_path).create("scout")
    assert _access(tmp_path).required()
    assert not _access(tmp_path, auth="none").required()
    TokenStore(tmp_path).revoke(record.id)
    assert _access(tmp_path).required()  # revoking the last token opens nothing
    (tmp_path / "tokens.json").unlink()  # how to stop using tokens, or auth = "none"
    assert not _access(tmp_path).required()
