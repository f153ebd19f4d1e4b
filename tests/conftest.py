"""Shared fixtures: a real memory (real Kùzu, real LanceDB) in a temporary directory, with the
deterministic hash embedder, and an in-memory MCP client connected to a real doxa server."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings, load_settings
from doxa.store import Memory
from doxa.store.embedder import HashEmbedder, Vectors


class OtherEmbedder(HashEmbedder):
    """Another model of the same size: its vectors are not the hash embedder's."""

    @property
    def fingerprint(self) -> str:
        return "other-v1:384"

    def embed(self, texts: list[str]) -> Vectors:
        return super().embed([" ".join(f"{word}~" for word in text.split()) for text in texts])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# The suite reads times in UTC wherever it runs: a memory's default time zone is the
# machine's (``timezone = "local"``), and the servers it starts inherit this.
os.environ["TZ"] = "UTC"
time.tzset()


def hash_settings(data_dir: Path, **store: object) -> Settings:
    """Settings for a memory in ``data_dir`` using the hash embedder."""
    overrides: dict[tuple[str, ...], object] = {
        ("store", "data_dir"): str(data_dir),
        ("store", "embedding", "kind"): "hash",
    }
    for key, value in store.items():
        overrides[("store", key)] = value
    return load_settings(environ={}, overrides=overrides)


@pytest.fixture
def bundled_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx_cache: Path) -> Settings:
    """Settings of a memory in ``tmp_path`` embedding with the bundled model, on ONNX, with
    the model hub out of reach."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return load_settings(
        environ={},
        overrides={
            ("store", "data_dir"): str(tmp_path),
            ("store", "embedding", "onnx_cache"): str(onnx_cache),
        },
    )


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ONNX export cache for the session: the model is written as ONNX once (about 3 s), as a
    user's first start does, and not into the user's own cache."""
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return hash_settings(tmp_path / "memory")


@pytest.fixture(scope="session")
def new_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory as a new memory's first start and close leave it, with the hash
    embedder: made once per test process. Migrating a new graph takes about half a second,
    a copy of this a few milliseconds (``fresh``)."""
    data_dir = tmp_path_factory.mktemp("new-store") / "memory"
    made = Memory.open(hash_settings(data_dir).store)
    made.warm_up()
    made.close()
    return data_dir


def fresh(settings: Settings, new_store: Path) -> Settings:
    """``settings`` with a copy of ``new_store`` in its data directory, unless a test made
    one there already: the memory the fixtures serve starts as a new one, without each test
    running every schema migration again (``test_schema`` runs them on a new graph)."""
    data_dir = Path(settings.store.data_dir)
    if not data_dir.exists():
        shutil.copytree(new_store, data_dir)
    return settings


@pytest.fixture
def memory(settings: Settings, new_store: Path) -> Iterator[Memory]:
    opened = Memory.open(fresh(settings, new_store).store)
    opened.warm_up()
    yield opened
    opened.close()


@pytest.fixture
async def client(settings: Settings, new_store: Path) -> AsyncIterator[Client]:
    server = create_server(fresh(settings, new_store))
    async with Client(server) as connected:
        yield connected


@pytest.fixture
async def memory_client(settings: Settings, memory: Memory) -> AsyncIterator[Client]:
    """A client of a server that serves the ``memory`` fixture, so a test can look at the
    store (``memory.stats()``) while it drives the tools."""
    server = create_server(settings, memory=memory)
    async with Client(server) as connected:
        yield connected
