"""The memory itself: the typed graph (Kùzu), the search index (LanceDB), the embedder and
the one ``Memory`` service that keeps them consistent. Knows nothing of MCP.

Errors, drafts and settings import nothing heavy; ``Memory`` and its results pull in numpy and
the database drivers, so they load on first use (a server answers its handshake without them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from doxa.store.drafts import FactDraft, MemoryDraft, SupportDraft
from doxa.store.errors import InvalidInput, MemoryStoreError, NotFound, SchemaMismatch
from doxa.store.settings import EmbeddingSettings, RankingWeights, StoreSettings

if TYPE_CHECKING:
    from doxa.store.memory import Memory, RecallOutcome, Recollection, Remembered

_HEAVY = {"Memory", "RecallOutcome", "Recollection", "Remembered"}


def __getattr__(name: str) -> Any:
    if name in _HEAVY:
        from doxa.store import memory

        return getattr(memory, name)
    raise AttributeError(f"module 'doxa.store' has no attribute {name!r}")


__all__ = [
    "EmbeddingSettings",
    "FactDraft",
    "InvalidInput",
    "Memory",
    "MemoryDraft",
    "MemoryStoreError",
    "NotFound",
    "RankingWeights",
    "RecallOutcome",
    "Recollection",
    "Remembered",
    "SchemaMismatch",
    "StoreSettings",
    "SupportDraft",
]
