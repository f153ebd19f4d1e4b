"""A long text is found by the meaning of any of its parts: its passages have vectors
(``passage_vectors``), kept in the working memory and the search index's ``passages`` table,
loaded at start-up, embedded there when missing, and gone with a forget or a purge."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import lancedb
import numpy as np
import pytest
from calls import ok
from conftest import hash_settings
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings
from doxa.store import Memory, MemoryDraft, startup
from doxa.store.embedder import HashEmbedder, Vectors
from doxa.store.health import check
from doxa.store.importing import import_file
from doxa.store.passage_vectors import embeddings_of, extra_passages
from doxa.store.text_index import passages

#: Words the embedder below takes for one another: a query in these words matches a text in
#: the others by meaning only (the full-text index finds none of them).
SYNONYMS = {"boat": "ferry", "schedule": "timetable", "port": "harbour"}


class ReadsTheStart(HashEmbedder):
    """The hash embedder reading a text's first 100 words only (as the model reads its
    first 256 tokens), with a few synonyms; it counts the texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    @property
    def fingerprint(self) -> str:
        return "hash-start-v1:384"

    def embed(self, texts: list[str]) -> Vectors:
        self.embedded += texts
        read = [
            " ".join(SYNONYMS.get(w, w) for w in re.findall(r"\w+", t.casefold())[:100])
            for t in texts
        ]
        return super().embed(read)


#: 200 words of other matters, then 100 of the ferry timetable: the text's own vector (its
#: first 100 words) is all filler; its last passage is mostly about the ferry.
LONG = " ".join(["alpha beta gamma delta"] * 50 + ["ferry timetable harbour"] * 33 + ["end"])
QUERY = "boat schedule port"
OTHERS = ["A boat club meets on Mondays.", "The port authority has new offices."]


def opened(settings: Settings, embedder: ReadsTheStart | None = None) -> Memory:
    memory = Memory.open(settings.store, embedder=embedder or ReadsTheStart())
    memory.warm_up()
    return memory


def passage_rows(settings: Settings) -> list[tuple[str, int]]:
    """The index's passages table, read behind the memory's back: (id, number) per row."""
    table = lancedb.connect(str(Path(settings.store.data_dir) / "index")).open_table("passages")
    rows = table.to_arrow()
    return sorted(
        zip(
            (str(i) for i in rows.column("id").to_pylist()),
            (int(n) for n in rows.column("passage").to_pylist()),
            strict=True,
        )
    )


def remember_long(memory: Memory) -> str:
    done = memory.remember([MemoryDraft(text=t) for t in [*OTHERS, LONG]], batch=True)
    assert memory.settle(timeout=10)
    return done[-1].observation_id


def first(memory: Memory) -> str:
    return memory.recall(QUERY, limit=3).results[0].observation_id


def test_a_long_text_is_found_by_the_meaning_of_its_later_part(settings: Settings) -> None:
    assert len(LONG.split()) == 300 and len(passages(LONG)) == 3
    memory = opened(settings)
    try:
        long_id = remember_long(memory)
        found = first(memory)
    finally:
        memory.close()
    assert found == long_id
    assert passage_rows(settings) == [(long_id, 0), (long_id, 1), (long_id, 2)]


def test_a_short_text_has_no_passages(settings: Settings) -> None:
    memory = opened(settings)
    try:
        memory.remember([MemoryDraft(text=" ".join(["word"] * 150))])
        assert memory.settle(timeout=10)
        held = len(memory._wm.passages)
    finally:
        memory.close()
    assert held == 0
    assert passage_rows(settings) == []


def test_passages_are_loaded_at_start_not_embedded_again(settings: Settings) -> None:
    memory = opened(settings)
    try:
        long_id = remember_long(memory)
    finally:
        memory.close()
    embedder = ReadsTheStart()
    memory = opened(settings, embedder)
    try:
        held = memory._wm.passages.count(memory._wm.row_of[long_id])
        found = first(memory)
    finally:
        memory.close()
    assert embedder.embedded == [QUERY]
    assert held == 3
    assert found == long_id
    assert passage_rows(settings) == [(long_id, 0), (long_id, 1), (long_id, 2)]


@pytest.mark.parametrize("lost", ["table", "rows", "one"])
def test_a_memory_without_its_passages_gets_them_at_the_next_start(
    settings: Settings, lost: str
) -> None:
    """A memory made before passages were kept has no table; a write cut short may leave
    some of a text's passages."""
    memory = opened(settings)
    try:
        long_id = remember_long(memory)
    finally:
        memory.close()
    db = lancedb.connect(str(Path(settings.store.data_dir) / "index"))
    if lost == "table":
        db.drop_table("passages")
    else:
        db.open_table("passages").delete("true" if lost == "rows" else "passage = 1")
    embedder = ReadsTheStart()
    memory = opened(settings, embedder)
    try:
        found = first(memory)
    finally:
        memory.close()
    assert embedder.embedded == [*passages(LONG), QUERY]
    assert found == long_id
    assert passage_rows(settings) == [(long_id, 0), (long_id, 1), (long_id, 2)]


def vector_bytes(settings: Settings) -> bytes:
    """The stored bytes of the long text's last passage's vector."""
    vector = ReadsTheStart().embed([passages(LONG)[-1]])[0]
    return np.asarray(vector, dtype="<f4").tobytes()


def files_holding(settings: Settings, content: bytes) -> list[Path]:
    index = Path(settings.store.data_dir) / "index"
    return [p for p in index.rglob("*") if p.is_file() and content in p.read_bytes()]


@pytest.mark.parametrize("mode", ["retract", "purge"])
def test_a_forgotten_text_takes_its_passages_along(settings: Settings, mode: str) -> None:
    memory = opened(settings)
    try:
        long_id = remember_long(memory)
        row = memory._wm.row_of[long_id]
        assert files_holding(settings, vector_bytes(settings))
        memory.forget(long_id, mode=mode)
        assert memory.settle(timeout=10)
        held = memory._wm.passages.count(row)
        results = [r.observation_id for r in memory.recall(QUERY, limit=3).results]
    finally:
        memory.close()
    assert held == 0
    assert long_id not in results
    assert passage_rows(settings) == []
    if mode == "purge":  # the vectors leave the files and the table's earlier versions
        assert files_holding(settings, vector_bytes(settings)) == []
        table = lancedb.connect(str(Path(settings.store.data_dir) / "index"))
        assert len(table.open_table("passages").list_versions()) == 1
    memory = opened(settings)
    try:
        after = len(memory._wm.passages)
    finally:
        memory.close()
    assert after == 0


@pytest.mark.anyio
async def test_a_long_text_remembered_over_mcp_is_recalled_by_its_later_part(
    settings: Settings,
) -> None:
    memory = opened(settings)
    try:
        with anyio.fail_after(30):
            async with Client(create_server(settings, memory=memory)) as client:
                await ok(client, "remember", memories=[{"text": t} for t in OTHERS])
                told = await ok(client, "remember", text=LONG)
                found: dict[str, Any] = await ok(client, "recall", query=QUERY, limit=3)
    finally:
        memory.close()
    assert found["results"][0]["observation_id"] == told["observation_id"]


def test_an_imported_long_text_gets_its_passages(tmp_path: Path) -> None:
    """An export keeps no vectors: the import's start embeds the texts, and passages too."""
    source = hash_settings(tmp_path / "a")
    memory = Memory.open(source.store)
    memory.warm_up()
    try:
        long_id = remember_long(memory)
        memory.export(str(tmp_path / "a.jsonl"))
    finally:
        memory.close()
    target = hash_settings(tmp_path / "b")
    import_file(target.store, tmp_path / "a.jsonl")
    assert passage_rows(target) == [(long_id, 0), (long_id, 1), (long_id, 2)]


def test_a_row_scores_as_the_best_of_its_own_vector_and_its_passages() -> None:
    from doxa.store.passage_vectors import PassageVectors

    unit = np.eye(4, dtype=np.float32)
    vectors = PassageVectors(4)
    vectors.put([1, 1, 2], unit[[0, 3, 2]], [0, 1, 0])
    query = unit[3]
    own = np.array([0.5, 0.1, 0.2], dtype=np.float32)  # rows 0..2 by their own vectors
    scanned = own.copy()
    vectors.widen(scanned, query)
    refined = vectors.refined(query, np.array([2, 1]), own[[2, 1]])
    vectors.clear(1)
    cleared = own.copy()
    vectors.widen(cleared, query)
    assert scanned == pytest.approx([0.5, 1.0, 0.2], abs=0.01)
    assert refined == pytest.approx([0.2, 1.0], abs=0.01)
    assert cleared == pytest.approx(own)
    assert len(vectors) == 1


@pytest.mark.parametrize("words", [1, 150, 151, 250, 251, 252, 350, 351, 5000])
@pytest.mark.parametrize("word", ["a", "word"])
def test_the_embeddings_of_a_text_are_counted_as_they_are_made(words: int, word: str) -> None:
    text = " ".join([word] * words)
    assert embeddings_of(text) == 1 + len(extra_passages(text))


@pytest.mark.parametrize("damage", ["unreadable", "not_unit"])
def test_check_reports_passages_the_next_start_embeds_again(
    settings: Settings, damage: str
) -> None:
    memory = Memory.open(settings.store)  # the configured embedder, as `doxa check` reads
    memory.warm_up()
    try:
        remember_long(memory)
    finally:
        memory.close()
    table = Path(settings.store.data_dir) / "index" / "passages.lance"
    if damage == "unreadable":
        for fragment in (table / "data").iterdir():
            fragment.unlink()
    else:
        db = lancedb.connect(str(table.parent))
        db.open_table("passages").update(where="passage = 1", values={"vector": [0.5] * 384})
    health = check(settings.store)
    assert len(health.problems) == 1
    assert "passages" in health.problems[0] and "next start" in health.problems[0]


class Counting(ReadsTheStart):
    """Records how many texts each call embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def embed(self, texts: list[str]) -> Vectors:
        self.calls.append(len(texts))
        return super().embed(texts)


@pytest.mark.parametrize("lost", ["index", "passages"])
def test_the_start_embeds_long_texts_a_bounded_number_of_embeddings_at_a_time(
    settings: Settings, lost: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An import of long documents is all embedded at its first start: 1,024 texts of
    # 5,000 words at once were ~55,000 embeddings in one call (~260 MB).
    monkeypatch.setattr(startup, "_REPAIR_EMBEDDINGS", 8, raising=False)
    memory = opened(settings)
    try:
        memory.remember([MemoryDraft(text=f"{LONG} note {k}") for k in range(5)], batch=True)
        assert memory.settle(timeout=10)
    finally:
        memory.close()
    db = lancedb.connect(str(Path(settings.store.data_dir) / "index"))
    for table in ["observations", "passages"] if lost == "index" else ["passages"]:
        db.drop_table(table)
    embedder = Counting()
    memory = opened(settings, embedder)
    try:
        held = len(memory._wm.passages)
    finally:
        memory.close()
    assert held == 5 * 3
    assert sum(embedder.calls) == 5 * (4 if lost == "index" else 3)
    assert max(embedder.calls) <= 8


def test_a_passage_span_is_where_the_passage_lies() -> None:
    from doxa.store.text_index import passage_span

    for lines in (51, 84, 200):  # 153, 252 and 600 words
        text = "  " + "\n".join(f"word{i}\u2003and  more" for i in range(lines)) + " \t"
        found = passages(text)
        spans = [passage_span(text, k, len(found)) or (0, 0) for k in range(len(found))]
        assert [" ".join(text[a:b].split()) for a, b in spans] == found
        assert passage_span(text, len(found), len(found)) is None
    assert passage_span("a short note", 0, 1) is None


def test_a_recall_names_the_passage_of_a_long_text_that_matched_also_after_a_restart(
    settings: Settings,
) -> None:
    """The passage that matched is named by its words and by its vector, from a fresh start
    too (the passages' vectors then come from the index, in whatever order it holds them)."""
    sections = [f"Section {i}: the harbour crane number {i} is painted grey." for i in range(80)]
    sections[60] = "Section 60: the lighthouse keeper feeds seventeen cats at noon."
    document = " ".join(sections)
    for attempt in range(2):
        memory = Memory.open(settings.store)
        try:
            if attempt == 0:
                memory.remember([MemoryDraft(text=document)])
            [found] = memory.recall("lighthouse keeper cats").results
            assert found.passage is not None
            start, end = found.passage
            assert "lighthouse keeper feeds seventeen cats" in document[start:end]
            # A query of the start's words: no passage is named, the start is shown.
            assert memory.recall("Section 0: the harbour crane").results[0].passage is None
        finally:
            memory.close()
