"""The model on ONNX Runtime: written once from its weights (no torch), the same vectors as
sentence-transformers, and a fallback to torch that keeps the vectors right when the export
cannot be had."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from doxa.store import onnx_bert, onnx_embedder
from doxa.store.embedder import HashEmbedder, SentenceTransformerEmbedder, make_embedder
from doxa.store.onnx_embedder import (
    ExportError,
    OnnxEmbedder,
    OnnxModel,
    exported_model,
    model_source,
)
from doxa.store.packed_weights import PACKED_WEIGHTS, PackError, pack_weights, unpack_weights
from doxa.store.settings import BUNDLED_MODEL, EmbeddingSettings

TEXTS = [
    "The quarterly budget meeting moved to Thursday afternoon.",
    "ok",
    "Ünïcödé, émojis 🙂 and 中文 in one memory",
    # Longer than the model's 256 tokens: truncated the way sentence-transformers does it.
    " ".join(f"item {i} of the long incident report about the storage cluster" for i in range(90)),
    "Maria adopted a grey kitten named Pixel.",
]


@pytest.fixture(scope="module")
def torch_vectors() -> Any:
    return SentenceTransformerEmbedder().embed(TEXTS)


def test_loading_the_model_gives_the_heap_it_freed_back(
    onnx_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Building the session reads the 90 MB model into buffers it frees again; glibc kept
    # about 28 MB of them in the process's RSS (a 100k memory's server, peak 700 MB).
    embedder = OnnxEmbedder(cache_dir=onnx_cache)
    loaded: list[bool] = []
    monkeypatch.setattr(
        onnx_embedder.native_memory, "give_back", lambda: loaded.append(embedder.runtime == "onnx")
    )
    embedder.load()
    embedder.embed(["a second call loads nothing"])
    assert loaded == [True]


@pytest.mark.slow
def test_onnx_vectors_match_sentence_transformers(onnx_cache: Path, torch_vectors: Any) -> None:
    embedder = OnnxEmbedder(cache_dir=onnx_cache)
    vectors = embedder.embed(TEXTS)
    assert embedder.runtime == "onnx"
    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), 384)
    assert np.abs(vectors - torch_vectors).max() < 1e-5
    # Batches are formed by length; every vector still comes back in its text's row.
    small = OnnxEmbedder(cache_dir=onnx_cache, batch_size=2).embed(TEXTS)
    assert np.abs(small - torch_vectors).max() < 1e-5
    one = embedder.embed([TEXTS[3]])
    assert np.abs(one[0] - torch_vectors[3]).max() < 1e-5
    assert embedder.embed([]).shape == (0, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_the_export_is_made_once_and_reused(
    onnx_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = model_source(BUNDLED_MODEL)
    assert source is not None
    # Other tests' servers may be exporting into the same cache right now.
    scratch_before = {p for p in onnx_cache.iterdir() if p.name.startswith(".export-")}
    first = exported_model(source, onnx_cache)
    assert {p.name for p in first.iterdir()} >= {"model.onnx", "tokenizer.json", "meta.json"}

    def no_export(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("exported again")

    monkeypatch.setattr(subprocess, "run", no_export)
    assert exported_model(source, onnx_cache) == first
    # Nothing half-written is left next to it.
    assert {p for p in onnx_cache.iterdir() if p.name.startswith(".export-")} <= scratch_before


def test_the_scratch_of_an_abandoned_export_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    abandoned = tmp_path / ".export-killed"
    recent = tmp_path / ".export-running"
    for scratch in (abandoned, recent):
        scratch.mkdir()
        (scratch / "model.onnx").write_bytes(b"partial")
    long_ago = time.time() - 7 * 24 * 3600
    os.utime(abandoned, (long_ago, long_ago))

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise subprocess.TimeoutExpired("export", 1)

    monkeypatch.setattr(subprocess, "run", fail)
    with pytest.raises(ExportError):
        exported_model(tmp_path / "model-source", tmp_path)
    assert not abandoned.exists()
    assert recent.exists()  # perhaps another server's export in progress


@pytest.mark.slow
def test_a_directory_that_is_no_model_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    not_a_model = tmp_path / "not-a-model"
    not_a_model.mkdir()
    (not_a_model / "README.md").write_text("no weights here")
    cache = tmp_path / "cache"
    with pytest.raises(ExportError, match="the export failed"):
        exported_model(not_a_model, cache)
    assert list(cache.iterdir()) == []


@pytest.mark.slow
def test_without_an_export_the_model_runs_on_torch_with_the_same_vectors(
    onnx_cache: Path, torch_vectors: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(source: Path, cache_dir: Path) -> Path:
        raise ExportError("refused for the test")

    monkeypatch.setattr(onnx_embedder, "exported_model", refuse)
    embedder = OnnxEmbedder(cache_dir=onnx_cache)
    vectors = embedder.embed(TEXTS)
    assert embedder.runtime.startswith("torch") and "refused for the test" in embedder.runtime
    assert np.abs(vectors - torch_vectors).max() < 1e-6


def test_a_model_name_that_is_no_local_directory_has_no_source() -> None:
    assert model_source("sentence-transformers/some-hub-model") is None
    assert model_source(BUNDLED_MODEL) is not None


def test_settings_choose_the_embedder(tmp_path: Path) -> None:
    assert isinstance(make_embedder(EmbeddingSettings(kind="hash", dim=64)), HashEmbedder)
    torch = make_embedder(EmbeddingSettings(runtime="torch"))
    assert isinstance(torch, SentenceTransformerEmbedder)
    onnx = make_embedder(EmbeddingSettings(onnx_cache=str(tmp_path)))
    assert isinstance(onnx, OnnxEmbedder)
    # Same model, same vectors: either runtime opens the other's search index as it is.
    assert onnx.fingerprint == SentenceTransformerEmbedder().fingerprint


#: Run in a child whose imports of torch, sentence-transformers and tokenizers fail, as in an
#: install without the torch extra: the first start writes the model and embeds the texts.
WITHOUT_TORCH = """
import json, sys
blocked = ["torch", "sentence_transformers", "transformers", "onnx"]
for name in [*blocked, "tokenizers", "huggingface_hub"]:
    sys.modules[name] = None  # an import of it raises ImportError
from pathlib import Path
from doxa.store.onnx_embedder import OnnxEmbedder
embedder = OnnxEmbedder(cache_dir=Path(sys.argv[1]))
vectors = embedder.embed(json.loads(sys.argv[2]))
print(json.dumps({"runtime": embedder.runtime, "vectors": vectors.tolist(),
                  "torch": [m for m in ("torch", "sentence_transformers") if sys.modules[m]]}))
"""


@pytest.mark.slow
def test_a_first_start_without_torch_writes_the_model_and_gives_its_vectors(
    tmp_path: Path, torch_vectors: Any
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_TORCH, str(tmp_path / "cache"), json.dumps(TEXTS)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["runtime"] == "onnx" and answer["torch"] == []
    vectors = np.array(answer["vectors"], dtype=np.float32)
    assert np.abs(vectors - torch_vectors).max() < 1e-5
    (export,) = (tmp_path / "cache").iterdir()
    assert json.loads((export / "meta.json").read_text())["writer"] == "doxa"


@pytest.mark.slow
def test_the_packed_weights_a_wheel_ships_give_the_same_vectors(
    tmp_path: Path, torch_vectors: Any
) -> None:
    # What setup.py builds into doxa/store/model/: the model's files, its weights packed.
    source = model_source(BUNDLED_MODEL)
    assert source is not None
    packed = tmp_path / "model"
    for name in onnx_bert.MODEL_FILES:
        if (source / name).is_file():
            (packed / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / name, packed / name)
    raw = (source / "model.safetensors").read_bytes()
    (packed / PACKED_WEIGHTS).write_bytes(pack_weights(raw))
    assert (packed / PACKED_WEIGHTS).stat().st_size < 0.85 * len(raw)

    export = exported_model(packed, tmp_path / "cache")
    vectors = OnnxModel(export).encode(TEXTS, batch_size=4)
    assert np.abs(vectors - torch_vectors).max() < 1e-5


def test_packed_weights_unpack_to_the_same_bytes() -> None:
    floats = np.linspace(-3, 3, 1001, dtype=np.float32).tobytes() + b"odd"
    packed = pack_weights(floats)
    assert unpack_weights(packed) == floats
    with pytest.raises(PackError, match="unknown header"):
        unpack_weights(b"not packed")
    for damaged in (packed[:-3], packed + b"x"):
        with pytest.raises(PackError, match="damaged"):
            unpack_weights(damaged)


def test_a_model_that_is_not_bert_is_left_to_torch(tmp_path: Path) -> None:
    source = model_source(BUNDLED_MODEL)
    assert source is not None
    other = tmp_path / "roberta"
    shutil.copytree(source, other, ignore=shutil.ignore_patterns("*.safetensors"))
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "model_type": "roberta"}))
    with pytest.raises(onnx_bert.UnsupportedModel, match="model_type 'roberta'"):
        onnx_bert.bert_onnx(other)


def _damaged_cache(onnx_cache: Path, tmp_path: Path, damage: Any) -> tuple[Path, Path]:
    """A copy of the shared cache's export, damaged by ``damage(export directory)``."""
    source = model_source(BUNDLED_MODEL)
    assert source is not None
    good = exported_model(source, onnx_cache)
    cache = tmp_path / "cache"
    shutil.copytree(good, cache / good.name)
    damage(cache / good.name)
    return cache, cache / good.name


def _overwrite(export: Path) -> None:
    with (export / "model.onnx").open("r+b") as model:
        model.seek(model.seek(0, os.SEEK_END) // 2)
        model.write(b"\x7f" * 4096)


@pytest.mark.parametrize(
    "damage",
    [
        # Cut short (a full disk, a killed copy): onnxruntime refuses it (InvalidProtobuf).
        lambda export: os.truncate(export / "model.onnx", 40_000_000),
        # Bytes overwritten, the size kept: it loads, and gives other vectors (NaN, here).
        _overwrite,
        # Its meta.json lost: the export was written twice per start, and the rename failed.
        lambda export: (export / "meta.json").unlink(),
    ],
    ids=["cut short", "overwritten", "no meta.json"],
)
def test_a_damaged_export_in_the_cache_is_written_again(
    onnx_cache: Path,
    tmp_path: Path,
    damage: Any,
    torch_vectors: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A damaged export stopped the memory from loading at every start (or fell back to
    # torch at every start, and failed without it).
    cache, export = _damaged_cache(onnx_cache, tmp_path, damage)
    embedder = OnnxEmbedder(cache_dir=cache)
    vectors = embedder.embed(TEXTS)
    assert embedder.runtime == "onnx"
    assert np.abs(vectors - torch_vectors).max() < 1e-5
    assert json.loads((export / "meta.json").read_text())["probe"]
    assert OnnxEmbedder(cache_dir=cache).embed(TEXTS[:1]).shape == (1, 384)


def test_a_cache_that_cannot_be_written_gets_an_export_of_this_process(
    tmp_path: Path, torch_vectors: Any
) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    embedder = OnnxEmbedder(cache_dir=blocked / "onnx")
    vectors = embedder.embed(TEXTS)
    assert embedder.runtime == "onnx"
    assert np.abs(vectors - torch_vectors).max() < 1e-5


def test_without_an_export_nor_torch_the_error_says_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(source: Path, cache_dir: Path) -> Path:
        raise ExportError("the export failed: disk full")

    def no_torch(self: Any) -> None:
        raise ImportError("No module named 'sentence_transformers'")

    monkeypatch.setattr(onnx_embedder, "exported_model", refuse)
    monkeypatch.setattr(SentenceTransformerEmbedder, "load", no_torch)
    with pytest.raises(ExportError) as caught:
        OnnxEmbedder(cache_dir=tmp_path).embed(["x"])
    assert "cannot run on ONNX Runtime (the export failed: disk full)" in str(caught.value)
    assert "sentence-transformers, which would run it instead, is not installed" in str(
        caught.value
    )


def test_a_model_directory_is_named_by_its_real_path_and_its_files(tmp_path: Path) -> None:
    # A model replaced in place kept its fingerprint (the index was not rebuilt, and recall
    # compared the new model's queries with the old one's vectors); the same directory
    # spelled with a trailing slash was "another model" and rebuilt the index.
    from doxa.store.embedder import model_fingerprint

    slot = tmp_path / "slot"
    slot.mkdir()
    (slot / "weights.bin").write_bytes(b"one model")
    first = model_fingerprint(str(slot))
    assert first == model_fingerprint(f"{slot}/") == model_fingerprint(str(tmp_path / "." / "slot"))
    assert first.startswith(f"st:{slot.resolve()}#")
    model_fingerprint.cache_clear()  # read once per process: a new process sees the new files
    (slot / "weights.bin").write_bytes(b"another model, retrained")
    assert model_fingerprint(str(slot)) != first
    assert model_fingerprint(BUNDLED_MODEL) == "st:" + BUNDLED_MODEL
    assert model_fingerprint("some/hub-name") == "st:some/hub-name"
