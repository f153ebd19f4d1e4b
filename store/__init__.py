"""The memory itself: the typed graph (Kùzu), the search index (LanceDB), the embedder and
the one ``Memory`` service that keeps them consistent. Knows nothing of MCP."""

from doxa.store.drafts import FactDraft, MemoryDraft, SupportDraft
from doxa.store.errors import InvalidInput, MemoryStoreError, NotFound, SchemaMismatch
from doxa.store.memory import Memory, RecallOutcome, Recollection, Remembered
from doxa.store.settings import EmbeddingSettings, StoreSettings

__all__ = [
    "EmbeddingSettings",
    "FactDraft",
    "InvalidInput",
    "Memory",
    "MemoryDraft",
    "MemoryStoreError",
    "NotFound",
    "RecallOutcome",
    "Recollection",
    "Remembered",
    "SchemaMismatch",
    "StoreSettings",
    "SupportDraft",
]
