"""The sentence-transformers model run by ONNX Runtime, without torch in the process.

The model is written once as ONNX next to its tokenizer, in the user cache, and from then on
run here with ``onnxruntime``: the same vectors as sentence-transformers
(within 1e-5; about 3e-7 measured) in a fraction of the memory and time. A BERT model (the
bundled all-MiniLM-L6-v2) is written straight from its weights by ``doxa.store.onnx_bert``
in about 3 s, with numpy alone: no torch, no network. Any other sentence-transformers model
is exported by torch (``doxa.store.onnx_export``, in a child process that alone imports
torch) when the ``torch`` extra is installed.

A BERT model's text is tokenized by ``doxa.store.wordpiece`` (pure Python, the same ids as
Hugging Face ``tokenizers``, which would bring about 38 MB of hub packages into the install);
any other tokenizer by ``tokenizers``, which the ``torch`` extra installs.

If the model cannot be exported (not a local directory, a layer this runtime does not know,
a missing package), the embedder says why in the log and runs the model with
sentence-transformers in process instead: slower, never wrong.

An export keeps the vector of a probe text (``PROBE``) in its ``meta.json``; every load
embeds it again. A cached export that fails to load or gives another vector (cut short by a
full disk, overwritten) is deleted and written again, once. A cache directory that cannot be
written gets the export in a temporary directory of this process instead.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from doxa.store import native_memory
from doxa.store.embedder import (
    SentenceTransformerEmbedder,
    Vectors,
    bundled_model_path,
    files_key,
    model_fingerprint,
)
from doxa.store.onnx_bert import UnsupportedModel, write_export
from doxa.store.settings import BUNDLED_MODEL
from doxa.store.wordpiece import UnsupportedTokenizer, WordPieceTokenizer

log = logging.getLogger(__name__)

#: Bumped when the export or its files change, so older exports are not reused.
EXPORT_FORMAT = 1
#: Largest difference from sentence-transformers' vectors an export may show.
TOLERANCE = 1e-4
#: How long a torch export may take before it is given up (about 15 s on 2 cores).
EXPORT_TIMEOUT_S = 900
POOLINGS = ("mean", "cls", "max")
#: Tokens (rows x width) per forward pass: 64 texts of 32 tokens, or 8 of the full 256.
MAX_BATCH_TOKENS = 2048
#: Embedded when an export is written and at every load: a damaged export gives another
#: vector (or none at all).
PROBE = "doxa checks its embedding model: the bridge on Route 9 is closed since Tuesday."


class ExportError(RuntimeError):
    """The model could not be exported to ONNX, or the export did not match."""


class TextTokenizer(Protocol):
    """Token ids of texts, special tokens added and truncated to the model's length."""

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """The ids of each text."""
        ...


class HubTokenizer:
    """Any ``tokenizer.json`` run by Hugging Face ``tokenizers`` (the ``torch`` extra)."""

    def __init__(self, path: Path, max_length: int) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(path))
        # Padding is done per batch by OnnxModel; truncation as sentence-transformers does it.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_length)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """The ids of each text."""
        return [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]


def load_tokenizer(path: Path, max_length: int) -> TextTokenizer:
    """The tokenizer of ``path`` (a ``tokenizer.json``): WordPiece in pure Python for a BERT
    model, else ``tokenizers``.

    Raises:
        ImportError: the model is not BERT's and ``tokenizers`` is not installed.
    """
    try:
        return WordPieceTokenizer.from_file(path, max_length)
    except UnsupportedTokenizer as refused:
        log.info("tokenizing with tokenizers: %s", refused)
        return HubTokenizer(path, max_length)


def default_cache_dir() -> Path:
    """Where exported models live unless settings name a place: the user cache directory."""
    from platformdirs import user_cache_path

    return user_cache_path("doxa") / "onnx"


def model_source(model: str) -> Path | None:
    """The local directory of ``model``, or None when it is not one (a hub model name)."""
    if model == BUNDLED_MODEL:
        return bundled_model_path()
    path = Path(model).expanduser()
    return path if path.is_dir() else None


def export_key(source: Path) -> str:
    """Identifies the weights in ``source`` (``files_key``): a changed or reinstalled model
    gets a new export."""
    return files_key(source, f"doxa-onnx-{EXPORT_FORMAT}")


def exported_model(source: Path, cache_dir: Path) -> Path:
    """The directory holding the ONNX export of ``source``, exporting it first if needed.

    A BERT model is written from its weights here; any other is exported by torch in a child
    process (this process never imports torch). Either writes into a temporary directory
    that is renamed into place when complete, so a crash leaves nothing half-written and two
    servers exporting at once both end with one good copy.

    Raises:
        ExportError: the export failed, timed out, or did not match the model.
    """
    target = cache_dir / f"{source.name}-{export_key(source)}"
    if (target / "meta.json").is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    _remove_abandoned_exports(cache_dir)
    if target.exists():
        # Renamed into place complete, so one without its meta.json lost it since: the
        # rename below would fail on it at every start.
        log.warning("the ONNX export in %s is incomplete: writing it again", target)
        shutil.rmtree(target, ignore_errors=True)
    scratch = Path(tempfile.mkdtemp(prefix=".export-", dir=cache_dir))
    try:
        try:
            _write_without_torch(source, scratch)
        except UnsupportedModel as refused:
            log.info("model %s needs torch to export (%s)", source, refused)
            _export_with_torch(source, scratch)
        _keep_probe(scratch)
        try:
            scratch.rename(target)
        except OSError:
            if not (target / "meta.json").is_file():
                raise
            # Another process finished the same export first; its copy is as good.
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def _write_without_torch(source: Path, scratch: Path) -> None:
    """Write a BERT model as ONNX from its weights, in this process (numpy only)."""
    started = time.perf_counter()
    try:
        write_export(source, scratch, EXPORT_FORMAT)
    except (OSError, ValueError, KeyError) as error:
        if isinstance(error, UnsupportedModel):
            raise
        raise UnsupportedModel(f"its files could not be read: {error}") from error
    log.info(
        "wrote embedding model %s as ONNX in %.1f s (once)", source, time.perf_counter() - started
    )


def _export_with_torch(source: Path, scratch: Path) -> None:
    """Export any sentence-transformers model with torch, in a child process."""
    log.info("exporting embedding model %s to ONNX with torch (once; about 15 s)", source)
    environment = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "doxa.store.onnx_export", str(source), str(scratch)],
            env=environment,
            capture_output=True,
            text=True,
            timeout=EXPORT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise ExportError(f"the export took over {EXPORT_TIMEOUT_S} s") from error
    if completed.returncode != 0 or not (scratch / "meta.json").is_file():
        last = (completed.stderr or completed.stdout).strip().splitlines()[-3:]
        raise ExportError(f"the export failed: {' / '.join(last) or 'no output'}")


def _keep_probe(directory: Path) -> None:
    """Embed ``PROBE`` with the export in ``directory`` and keep its vector in meta.json."""
    meta_path = directory / "meta.json"
    try:
        vector = OnnxModel(directory, threads=1).encode([PROBE], 1)[0]
    except Exception as error:  # onnxruntime raises kinds of its own
        raise ExportError(f"the export does not run: {error}") from error
    meta = json.loads(meta_path.read_text())
    meta["probe"] = [float(x) for x in vector]
    meta_path.write_text(json.dumps(meta))


def checked(model: OnnxModel) -> OnnxModel:
    """``model``, once its vector of ``PROBE`` is a unit vector and the one its export
    kept (an export written before it kept one: only a unit vector).

    Raises:
        ExportError: the export gives another vector, or none of unit length.
    """
    vector = model.encode([PROBE], 1)[0]
    if not np.all(np.isfinite(vector)) or abs(float(np.linalg.norm(vector)) - 1.0) > 1e-3:
        raise ExportError("it gives no unit vector")
    kept = model.meta.get("probe")
    if kept is not None:
        gap = float(np.max(np.abs(np.asarray(kept, dtype=np.float32) - vector)))
        if len(kept) != len(vector) or gap > TOLERANCE:
            raise ExportError(f"it gives another vector than when it was written ({gap:.2g})")
    return model


def _remove_abandoned_exports(cache_dir: Path) -> None:
    """Delete scratch directories of exports whose process was killed (older than any
    export may take): each holds up to a model's worth of disk."""
    deadline = time.time() - 2 * EXPORT_TIMEOUT_S
    for scratch in cache_dir.glob(".export-*"):
        with contextlib.suppress(OSError):
            if scratch.stat().st_mtime < deadline:
                shutil.rmtree(scratch, ignore_errors=True)


class OnnxModel:
    """An exported model loaded into an ONNX Runtime session, with its tokenizer.

    Args:
        directory: an export made by ``doxa.store.onnx_export`` (model.onnx, tokenizer.json,
            meta.json).
        threads: ONNX Runtime intra-op threads; 0 lets it choose (one per physical core).
    """

    def __init__(self, directory: Path, threads: int = 0) -> None:
        import onnxruntime

        self.meta: dict[str, Any] = json.loads((directory / "meta.json").read_text())
        if self.meta.get("format") != EXPORT_FORMAT:
            raise ExportError(f"{directory} is an export of another format")
        if self.meta["pooling"] not in POOLINGS:
            raise ExportError(f"pooling {self.meta['pooling']!r} is not one of {POOLINGS}")
        self.tokenizer = load_tokenizer(
            directory / "tokenizer.json", int(self.meta["max_seq_length"])
        )
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Worker threads spin briefly for the next piece of work (ONNX Runtime's default).
        # Measured at 100k memories on 2 cores, turning that off made a query's embedding
        # 2.6 ms instead of 1.9 and the whole recall 10.4 ms instead of 8.5.
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = onnxruntime.InferenceSession(
            str(directory / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.dim = int(self.meta["dim"])

    def encode(self, texts: list[str], batch_size: int) -> Vectors:
        """Unit vectors of ``texts``, batched by length so little of each batch is padding."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i]))
        rows: list[int] = []
        for i in order:
            # Shortest first, so a batch's width is its last text's length. Attention needs
            # memory per row in the square of the width, and ONNX Runtime keeps its largest
            # allocation: 64 texts of 256 tokens held 1 GB, 8 of them 190 MB.
            width = len(encodings[i])
            if rows and (len(rows) >= batch_size or (len(rows) + 1) * width > MAX_BATCH_TOKENS):
                out[rows] = self._forward([encodings[r] for r in rows])
                rows = []
            rows.append(i)
        if rows:
            out[rows] = self._forward([encodings[r] for r in rows])
        return out

    def _forward(self, encodings: list[list[int]]) -> Vectors:
        width = max(len(e) for e in encodings)
        ids = np.full((len(encodings), width), int(self.meta["pad_id"]), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        # One text is one sequence: every token type is 0 (1 marks a pair's second text).
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding)
            ids[row, :n] = encoding
            mask[row, :n] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        hidden = self.session.run(None, {name: feed[name] for name in self.inputs})[0]
        pooling = self.meta["pooling"]
        if pooling == "cls":
            pooled = hidden[:, 0]
        elif pooling == "max":
            pooled = np.where(mask[..., None] > 0, hidden, -np.inf).max(axis=1)
        else:
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: Vectors = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return result


class OnnxEmbedder:
    """The sentence-transformers model run by ONNX Runtime (see the module docstring).

    It reports the same fingerprint as ``SentenceTransformerEmbedder`` for the same model: the
    vectors are the same, so switching runtimes does not rebuild the search index.

    Args:
        model: ``BUNDLED_MODEL`` or a local sentence-transformers model directory.
        batch_size: texts per forward pass when embedding many.
        cache_dir: where exports are kept; None = the user cache directory.
        threads: ONNX Runtime intra-op threads; 0 = one per physical core.
    """

    def __init__(
        self,
        model: str = BUNDLED_MODEL,
        batch_size: int = 64,
        cache_dir: Path | None = None,
        threads: int = 0,
    ) -> None:
        self._model_setting = model
        self._batch_size = batch_size
        self._cache_dir = cache_dir
        self._threads = threads
        self._model: OnnxModel | None = None
        self._fallback: SentenceTransformerEmbedder | None = None
        self._directory: Path | None = None
        self._lock = threading.Lock()
        self.runtime = "not loaded"
        self._onnx_error = ""

    @property
    def fingerprint(self) -> str:
        return model_fingerprint(self._model_setting)

    @property
    def dim(self) -> int:
        """The vector size, from the export's metadata if the model is not loaded yet."""
        with self._lock:
            if self._model is not None:
                return self._model.dim
            if self._fallback is None:
                try:
                    meta = json.loads((self._export() / "meta.json").read_text())
                    return int(meta["dim"])
                except (OSError, ExportError, ValueError, KeyError):
                    pass  # load() says why and falls back
        self.load()
        if self._fallback is not None:
            return self._fallback.dim
        assert self._model is not None
        return self._model.dim

    def load(self) -> None:
        with self._lock:
            if self._model is not None or self._fallback is not None:
                return
            try:
                self._model = self._load_onnx()
                self.runtime = "onnx"
                log.info("embedding model %s runs on ONNX Runtime", self._model_setting)
                # Building the session read the model into buffers it freed again: glibc
                # kept ~28 MB of them in the process's RSS.
                native_memory.give_back()
            except (ImportError, OSError, ExportError, ValueError, RuntimeError) as error:
                log.warning(
                    "embedding model %s runs with sentence-transformers (torch) instead of "
                    "ONNX Runtime: %s",
                    self._model_setting,
                    error,
                )
                self.runtime = f"torch (onnx unavailable: {error})"
                self._onnx_error = str(error)
                self._fallback = SentenceTransformerEmbedder(
                    self._model_setting, batch_size=self._batch_size
                )
        if self._fallback is not None:
            try:
                self._fallback.load()
            except ImportError as missing:
                raise ExportError(
                    f"the embedding model {self._model_setting} cannot run on ONNX Runtime"
                    f" ({self._onnx_error}),"
                    f" and sentence-transformers, which would run it instead, is not installed"
                    f" ({missing}): install doxa's torch extra, or fix what stops the export"
                ) from missing

    def _export(self) -> Path:
        """The export's directory (exporting first if needed); cached after the first call."""
        if self._directory is None:
            source = model_source(self._model_setting)
            if source is None:
                raise ExportError(f"{self._model_setting!r} is not a local model directory")
            cache = self._cache_dir or default_cache_dir()
            try:
                self._directory = exported_model(source, cache)
            except OSError as error:
                # A cache that cannot be written (read-only, full): this process's own copy.
                scratch = Path(tempfile.mkdtemp(prefix="doxa-onnx-"))
                atexit.register(shutil.rmtree, scratch, ignore_errors=True)
                log.warning(
                    "the ONNX cache %s cannot be written (%s): the model is written to %s for"
                    " this process",
                    cache,
                    error,
                    scratch,
                )
                self._directory = exported_model(source, scratch)
        return self._directory

    def _load_onnx(self) -> OnnxModel:
        directory = self._export()
        try:
            return checked(OnnxModel(directory, self._threads))
        except Exception as error:  # onnxruntime raises kinds of its own (InvalidProtobuf)
            log.warning("the ONNX export in %s is damaged (%s): writing it again", directory, error)
            shutil.rmtree(directory, ignore_errors=True)
            self._directory = None
        try:
            return checked(OnnxModel(self._export(), self._threads))
        except Exception as error:
            raise ExportError(f"the export written again does not run: {error}") from error

    def embed(self, texts: list[str]) -> Vectors:
        self.load()
        if self._fallback is not None:
            return self._fallback.embed(texts)
        assert self._model is not None
        return self._model.encode(texts, self._batch_size)
