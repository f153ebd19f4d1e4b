"""Settings, built once at the entry point: ``configs/default.toml``, then an optional user
file, then ``DOXA_*`` environment variables, then command-line flags. Nothing reads the
environment at import time."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from doxa.store import StoreSettings

Transport = Literal["stdio", "sse", "http"]
#: When HTTP and SSE requests need a bearer token (see ``doxa.server.access``).
Auth = Literal["auto", "tokens", "none"]

#: Environment variables and the setting each one sets.
ENVIRONMENT = {
    "DOXA_DATA_DIR": ("store", "data_dir"),
    "DOXA_AGENT": ("store", "agent"),
    "DOXA_TIMEZONE": ("store", "timezone"),
    "DOXA_EMBEDDER": ("store", "embedding", "kind"),
    "DOXA_MODEL": ("store", "embedding", "model"),
    "DOXA_MODEL_RUNTIME": ("store", "embedding", "runtime"),
    "DOXA_ONNX_CACHE": ("store", "embedding", "onnx_cache"),
    "DOXA_TRANSPORT": ("server", "transport"),
    "DOXA_HOST": ("server", "host"),
    "DOXA_PORT": ("server", "port"),
    "DOXA_WORKERS": ("server", "workers"),
    "DOXA_LOG_LEVEL": ("server", "log_level"),
    "DOXA_AUTH": ("server", "auth"),
    "DOXA_ALLOWED_HOSTS": ("server", "allowed_hosts"),
    "DOXA_ALLOWED_ORIGINS": ("server", "allowed_origins"),
}

#: Settings that hold a list: an environment variable or a flag gives it comma-separated.
LISTS = frozenset({("server", "allowed_hosts"), ("server", "allowed_origins")})


class ServerSettings(BaseModel):
    """How the server talks to clients."""

    model_config = ConfigDict(extra="forbid")

    transport: Transport = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1, le=65535)
    workers: int = Field(1, ge=1, le=64)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    auth: Auth = "auto"
    allowed_hosts: list[str] = Field(default_factory=list)
    allowed_origins: list[str] = Field(default_factory=list)


class Settings(BaseModel):
    """Everything doxa can be told."""

    model_config = ConfigDict(extra="forbid")

    store: StoreSettings
    server: ServerSettings = ServerSettings()


class SettingsError(ValueError):
    """A setting has a wrong value; the message names it and where it came from."""


def default_data_dir() -> Path:
    """The user data directory for doxa (platformdirs)."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("doxa", appauthor=False))


def _defaults() -> dict[str, Any]:
    text = resources.files("doxa.configs").joinpath("default.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _set(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


def load_settings(
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[tuple[str, ...], Any] | None = None,
) -> Settings:
    """Build the settings.

    Args:
        config_file: an optional TOML file with the same sections as ``default.toml``.
        environ: environment variables to read (``DOXA_*``); pass ``os.environ``.
        overrides: values from command-line flags, keyed by path (``("server", "port")``).

    Raises:
        SettingsError: a file is unreadable or a value is wrong.
    """
    tree = _defaults()
    # Where each value came from, so an error can point at the file, variable or flag.
    origin: dict[tuple[str, ...], str] = {}
    env = dict(environ or {})
    config = config_file or (Path(env["DOXA_CONFIG"]) if env.get("DOXA_CONFIG") else None)
    if config is not None:
        try:
            extra = tomllib.loads(Path(config).read_text(encoding="utf-8"))
        except UnicodeDecodeError as error:
            raise SettingsError(
                f"config file {config}: not UTF-8 text (byte {error.start + 1}); TOML is UTF-8"
            ) from None
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise SettingsError(f"config file {config}: {error}") from None
        _typed_as_defaults(extra, tree, f"config file {config}")
        tree = _merge(tree, extra)
        for path in _leaves(extra):
            origin[path] = f"config file {config}"
    for variable, path in ENVIRONMENT.items():
        if env.get(variable):
            _set(tree, path, split_list(env[variable]) if path in LISTS else env[variable])
            origin[path] = f"environment variable {variable}"
    for path, value in (overrides or {}).items():
        if value is not None:
            _set(tree, path, value)
            origin[path] = f"command-line flag --{path[-1].replace('_', '-')}"
    if not tree.get("store", {}).get("data_dir"):
        _set(tree, ("store", "data_dir"), str(default_data_dir()))
    try:
        return Settings.model_validate(tree)
    except ValidationError as error:
        problems = []
        for e in error.errors():
            path = tuple(str(p) for p in e["loc"])
            # An unknown section ([store.prun]) is named by its path, its values by theirs.
            source = origin.get(path) or next(
                (o for p, o in origin.items() if p[: len(path)] == path), "configs/default.toml"
            )
            said = e["msg"].removeprefix("Value error, ")  # pydantic's, of our own checks
            problems.append(f"{'.'.join(path)} = {e.get('input')!r} (from {source}): {said}")
        raise SettingsError("invalid settings: " + "; ".join(problems)) from None


def _typed_as_defaults(given: Mapping[str, Any], defaults: Mapping[str, Any], source: str) -> None:
    """Refuse a TOML value whose type is not its default's: ``true`` for a number (read as
    1), a string or number for a switch (``"no"`` read as false), text for a number.

    Raises:
        SettingsError: naming the setting, the value and the file.
    """
    for path in _leaves(given):
        default: Any = defaults
        value: Any = given
        for part in path:
            default = default.get(part) if isinstance(default, Mapping) else None
            value = value[part]
        if default is None or isinstance(default, list | str | Mapping):
            continue  # no default to go by, any text will do, or a table: validation judges
        wanted = "true or false" if isinstance(default, bool) else "a number"
        text_for_number = isinstance(value, str) and not isinstance(default, bool)
        if isinstance(value, bool) != isinstance(default, bool) or text_for_number:
            raise SettingsError(
                f"invalid settings: {'.'.join(path)} = {json.dumps(value, default=str)}"
                f" (from {source}):"
                f" must be {wanted}, as in configs/default.toml ({json.dumps(default)})"
            )


def split_list(text: str) -> list[str]:
    """A comma-separated list (``"a.example, b.example"``), its items stripped, empty ones
    dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


def _leaves(tree: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for key, value in tree.items():
        if isinstance(value, Mapping):
            out.extend(_leaves(value, (*prefix, key)))
        else:
            out.append((*prefix, key))
    return out
