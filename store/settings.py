"""Settings the memory store needs (the server nests these in its own settings)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from doxa.store.embedder import BUNDLED_MODEL
from doxa.store.ranking import RankingWeights
from pydantic import BaseModel, ConfigDict, Field


class EmbeddingSettings(BaseModel):
    """Which embedder turns text into vectors."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["sentence-transformers", "hash"] = "sentence-transformers"
    model: str = BUNDLED_MODEL
    dim: int = Field(384, ge=8, le=8192, description="vector size of the hash embedder")
    batch_size: int = Field(64, ge=1, le=4096)


class StoreSettings(BaseModel):
    """Where the memory lives and how it ranks."""

    model_config = ConfigDict(extra="forbid")

    data_dir: Path
    agent: str = Field("default", min_length=1, max_length=200)
    buffer_pool_mb: int = Field(256, ge=16, le=65536)
    maintenance_every: int = Field(2000, ge=1)
    embedding: EmbeddingSettings = EmbeddingSettings()
    ranking: RankingWeights = RankingWeights()
