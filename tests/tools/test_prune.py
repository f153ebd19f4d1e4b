"""The ``prune`` tool through a real MCP client: a dry run writes nothing and a real run
retires exactly what it listed; nothing spared is retired; the audit says why; near-duplicates
merge within one agent and one fact only; a bad rule value names its field."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from calls import error, ok
from conftest import hash_settings
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings
from doxa.store import Memory
from doxa.store.embedder import make_embedder
from doxa.store.errors import InvalidInput
from doxa.store.exporting import ImportRefused
from doxa.store.importing import import_file
from doxa.store.pruning import AUDIT_FILE, rule_of
from doxa.store.settings import PruneSettings

pytestmark = pytest.mark.anyio

#: The rule the tests use: anything shown once and never accepted counts, at any age.
RULE: dict[str, Any] = {"min_impressions": 1, "min_age_days": 0}


async def seed(client: Client) -> dict[str, str]:
    """scout's memories, each to be spared or retired for one reason, and driver's."""
    ids: dict[str, str] = {}

    async def put(key: str, **args: Any) -> dict[str, Any]:
        done = await ok(client, "remember", **{"agent": "scout", **args})
        ids[key] = done["observation_id"]
        return done

    await put("unused", text="The canteen serves soup on Mondays.", confidence="0.3")
    await put("hit", text="Parking lot B is closed for painting.", confidence="0.3")
    await put(
        "fact",
        text="Alice lives in Berlin.",
        confidence="0.3",
        fact={"subject": "Alice", "predicate": "lives_in", "object": "Berlin"},
    )
    kept = await put("believed", text="The library opens at nine.", confidence="0.9")
    await put(
        "evidence",
        text="A poster says the library opens at nine.",
        confidence="0.3",
        supports=[{"belief_id": kept["belief_id"], "weight": "0.5"}],
    )
    await put("original", text="The printer on floor 2 is broken.")
    await put("copy", text="The printer on floor 2 is broken!")
    await put(
        "tea", text="Bob likes tea.", fact={"subject": "Bob", "predicate": "likes", "object": "tea"}
    )
    await put(
        "green_tea",
        text="Bob likes tea!",
        fact={"subject": "Bob", "predicate": "likes", "object": "green tea"},
    )
    await put("other", text="The printer on floor 2 is broken?", agent="driver")
    # One judged recall shows every scout memory once; only "hit" is accepted.
    shown = await ok(client, "recall", query="", agent="scout", limit=100)
    await ok(client, "feedback", recall_id=shown["recall_id"], accepted=[ids["hit"]])
    return ids


def listed(answer: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [
        (r["observation_id"], r["reason"], r.get("merged_into")) for r in answer.get("retired", [])
    ]


async def test_a_dry_run_writes_nothing_and_the_real_run_retires_what_it_listed(
    memory_client: Client, memory: Memory, settings: Settings
) -> None:
    ids = await seed(memory_client)
    counts = memory.stats()
    dry = await ok(memory_client, "prune", **RULE)
    assert dry["dry_run"] is True
    expected = [(ids["copy"], "merged", ids["original"]), (ids["unused"], "unused", None)]
    assert listed(dry) == expected
    assert (dry["unused"], dry["merged"]) == (1, 1)
    # Nothing written: every memory still recalled, no reasons kept, the graph unchanged.
    found = await ok(memory_client, "recall", query="", agent="scout", limit=100)
    assert {r["observation_id"] for r in found["results"]} >= {ids["unused"], ids["copy"]}
    assert not (Path(settings.store.data_dir) / AUDIT_FILE).exists()
    assert memory.graph.live_observation_ids() >= set(ids.values())
    assert memory.stats()["Observation"] == counts["Observation"]

    done = await ok(memory_client, "prune", dry_run=False, **RULE)
    assert done["dry_run"] is False
    assert listed(done) == expected
    live = memory.graph.live_observation_ids()
    assert ids["unused"] not in live and ids["copy"] not in live
    # Spared, each for its own reason: a hit, a current fact, evidence, another agent's
    # copy, a fact whose object differs, and the kept original.
    spared = ("hit", "fact", "evidence", "believed", "original", "tea", "green_tea", "other")
    assert {ids[k] for k in spared} <= live
    again = await ok(memory_client, "prune", **RULE)
    assert listed(again) == []


async def test_a_retired_observation_stays_for_audit_and_says_why(
    memory_client: Client,
) -> None:
    ids = await seed(memory_client)
    before = datetime.now(UTC).isoformat()
    await ok(memory_client, "prune", dry_run=False, **RULE)
    now = await ok(memory_client, "recall", query="soup on Mondays")
    assert ids["unused"] not in {r["observation_id"] for r in now["results"]}
    # As a retraction by forget: found as the memory held it before, and cited with why.
    held = await ok(memory_client, "recall", query="soup on Mondays", known_at=before)
    assert ids["unused"] in {r["observation_id"] for r in held["results"]}
    cited = (await ok(memory_client, "cite_evidence", id=ids["unused"]))["observation"]
    assert cited["retracted_at"]
    assert cited["retired"].startswith("pruned: unused (confidence <= 0.5, impressions >= 1")
    copy = (await ok(memory_client, "cite_evidence", id=ids["copy"]))["observation"]
    assert copy["retired"].startswith(f"pruned: merged into {ids['original']}")
    # A retraction by forget says no such thing.
    await ok(memory_client, "forget", id=ids["hit"])
    forgotten = (await ok(memory_client, "cite_evidence", id=ids["hit"]))["observation"]
    assert forgotten["retracted_at"] and "retired" not in forgotten


async def test_judging_a_result_retired_since_the_recall_counts_no_hit(
    memory_client: Client,
) -> None:
    # Accepting it gave the retired observation a hit beside its reason, "no hits".
    await seed(memory_client)
    shown = await ok(memory_client, "recall", query="soup on Mondays", agent="scout")
    soup = shown["results"][0]["observation_id"]
    await ok(memory_client, "prune", dry_run=False, **RULE)
    await ok(memory_client, "feedback", recall_id=shown["recall_id"], accepted=[soup])
    cited = (await ok(memory_client, "cite_evidence", id=soup))["observation"]
    assert cited["retired"].startswith("pruned: unused")
    assert (cited.get("hits", 0), cited.get("impressions", 0)) == (0, 1)


async def test_a_damaged_audit_line_loses_only_its_own_reason(settings: Settings) -> None:
    with anyio.fail_after(60):
        async with Client(create_server(settings)) as client:
            ids = await seed(client)
            await ok(client, "prune", dry_run=False, **RULE)
        audit = Path(settings.store.data_dir) / AUDIT_FILE
        lines = {json.loads(line)["id"]: line for line in audit.read_bytes().splitlines(True)}
        copy = lines[ids["copy"]]
        # The merged copy's line damaged (bytes that are no UTF-8), and a line cut short.
        audit.write_bytes(b'{"id": "\xff\xfe' + copy[9:] + lines[ids["unused"]] + b'{"id": "o')
        async with Client(create_server(settings)) as client:
            kept = (await ok(client, "cite_evidence", id=ids["unused"]))["observation"]
            lost = (await ok(client, "cite_evidence", id=ids["copy"]))["observation"]
    assert kept["retired"].startswith("pruned: unused")
    assert lost["retracted_at"] and "retired" not in lost


async def test_the_configured_rule_spares_young_memories_and_merge_can_be_off(
    client: Client,
) -> None:
    ids = await seed(client)
    # The shipped rule: 5 impressions and 30 days; only the near-duplicate qualifies.
    assert listed(await ok(client, "prune")) == [(ids["copy"], "merged", ids["original"])]
    assert listed(await ok(client, "prune", merge=False)) == []
    assert listed(await ok(client, "prune", max_confidence="0.29", **RULE)) == [
        (ids["copy"], "merged", ids["original"])
    ]


async def test_a_second_prune_retires_nothing_the_first_left(client: Client) -> None:
    # The unused twin is retired as unused, not kept in its sure copy's place: kept, the
    # next prune retired it, and the copy merged into it had gone with the first.
    unsure = await ok(client, "remember", text="The gate code is 4512.", confidence="0.3")
    sure = await ok(client, "remember", text="The gate code is 4512!", confidence="0.9")
    shown = await ok(client, "recall", query="gate code", limit=10)
    await ok(client, "feedback", recall_id=shown["recall_id"])  # one impression each
    first = await ok(client, "prune", dry_run=False, **RULE)
    second = await ok(client, "prune", dry_run=False, **RULE)
    left = await ok(client, "recall", query="gate code")
    assert listed(first) == [(unsure["observation_id"], "unused", None)]
    assert listed(second) == []
    assert [r["observation_id"] for r in left["results"]] == [sure["observation_id"]]


async def test_merging_spares_what_says_more_and_what_is_argued_about(client: Client) -> None:
    async def put(text: str | None = None, **args: Any) -> str:
        done = await ok(client, "remember", **({"text": text} if text else {}), **args)
        return str(done["observation_id"])

    order = {"type": "Order", "fields": {"id": 17}}
    shipped = await put("Order 17 for Smith has shipped.", record=order)
    not_shipped = await put("Order 17 for Smith has not shipped.", record=order)
    fields = {"name": "Balls to the Wall", "id": 176}
    track = await put(record={"type": "Track", "fields": fields})
    album = await put(record={"type": "Album", "fields": fields})
    twin = {"type": "Order", "fields": {"id": 18}}
    kept = await put("Order 18 for Jones has shipped.", record=twin)
    copy = await put("Order 18 for Jones has shipped!", record=twin)
    # Twins of which the second is contradicted, and twins of which the second is supported.
    await put("The lift in block C is out of order.")
    contradicted = await put("The lift in block C is out of order!")
    await put("The lift in block C works fine now.", contradicts=[contradicted])
    await put("The gate code is 4512.")
    supported = await ok(client, "remember", text="The gate code is 4512!")
    await put("A note on the gate: code 4512.", supports=[{"belief_id": supported["belief_id"]}])
    dry = await ok(client, "prune", merge_similarity=0.8)
    conflicts = await ok(client, "find_conflicts")
    merged = {r["observation_id"]: r.get("merged_into") for r in dry.get("retired", [])}
    assert merged.get(copy) == kept  # a control: the same fields, texts that agree
    for spared in (shipped, not_shipped, track, album, contradicted, supported["observation_id"]):
        assert spared not in merged
    assert conflicts["count"] == 1


async def test_the_same_fact_over_another_time_is_never_merged(client: Client) -> None:
    # On leave in January, and again in July: merged into January's, July's leave was gone
    # from every view of July.
    leave = {"subject": "Bob", "predicate": "status", "object": "on_leave"}
    told = []
    for start, end in (("2024-01-01", "2024-01-15"), ("2024-07-01", "2024-07-15")):
        fact = {**leave, "valid_from": f"{start}T00:00:00Z", "valid_until": f"{end}T00:00:00Z"}
        told.append(await ok(client, "remember", text="Bob is on leave.", fact=fact))
    twin = {**leave, "valid_from": "2024-01-01T00:00:00Z", "valid_until": "2024-01-15T00:00:00Z"}
    again = await ok(client, "remember", text="Bob is on leave!", fact=twin)
    done = await ok(client, "prune", dry_run=False, merge_similarity=0.8)
    merged = {r["observation_id"]: r.get("merged_into") for r in done.get("retired", [])}
    assert merged == {again["observation_id"]: told[0]["observation_id"]}  # the same time
    july = await ok(
        client, "recall", query="", subject="Bob", as_of="2024-07-05T00:00:00Z", limit=5
    )
    # July's holds; January's, over by then, comes after it, not current.
    assert [(r["observation_id"], r.get("current", True)) for r in july["results"]] == [
        (told[1]["observation_id"], True),
        (told[0]["observation_id"], False),
    ]


async def test_a_shared_memory_one_agent_holds_surely_is_not_unused(client: Client) -> None:
    # scout's 0.3 was read as the observation's: driver's belief at 1 was retired with it,
    # and the audit said "confidence <= 0.5".
    gate = "The east gate code changed."
    unsure = await ok(client, "remember", text=gate, agent="scout", confidence="0.3")
    await ok(client, "remember", text=gate, agent="driver", confidence="1")
    lone = await ok(client, "remember", text="The west gate is painted.", confidence="0.3")
    shown = await ok(client, "recall", query="gate", limit=10)
    await ok(client, "feedback", recall_id=shown["recall_id"])
    done = await ok(client, "prune", dry_run=False, **RULE)
    assert listed(done) == [(lone["observation_id"], "unused", None)]
    driver = await ok(client, "recall", query="east gate", agent="driver")
    assert [r["observation_id"] for r in driver["results"]] == [unsure["observation_id"]]


async def test_the_same_words_about_another_day_are_never_merged(client: Client) -> None:
    # "Yesterday" said in May and in June tells of two days: June's repair was merged into
    # May's, and gone from what the memory knew of June.
    roof = [
        await ok(client, "remember", text=f"I fixed the roof yesterday{mark}", observed_at=at)
        for mark, at in ((".", "2024-05-08T12:00:00Z"), ("!", "2024-06-10T12:00:00Z"))
    ]
    again = await ok(
        client, "remember", text="I fixed the roof yesterday!!", observed_at="2024-05-08T15:00:00Z"
    )
    # "Since 2019" places the same time whenever it is said: twins, as a repeat would be.
    lyon = [
        await ok(client, "remember", text=f"I have lived in Lyon since 2019{mark}", observed_at=at)
        for mark, at in ((".", "2024-05-08T12:00:00Z"), ("!", "2024-06-10T12:00:00Z"))
    ]
    done = await ok(client, "prune", dry_run=False, merge_similarity=0.8)
    merged = {r["observation_id"]: r.get("merged_into") for r in done.get("retired", [])}
    assert merged == {
        again["observation_id"]: roof[0]["observation_id"],  # the same day
        lyon[1]["observation_id"]: lyon[0]["observation_id"],
    }
    june = await ok(client, "recall", query="roof", as_of="2024-06-12T00:00:00Z")
    assert roof[1]["observation_id"] in [r["observation_id"] for r in june["results"]]


async def test_records_whose_lists_differ_in_order_or_repeats_are_never_merged(
    client: Client,
) -> None:
    lists = (
        ("Playlist", "order", ["intro", "verse", "chorus"]),
        ("Playlist", "order", ["chorus", "verse", "intro"]),
        ("Bag", "items", ["apple", "apple", "pear"]),
        ("Bag", "items", ["apple", "pear", "pear"]),
    )
    for kind, name, values in lists:
        await ok(client, "remember", record={"type": kind, "fields": {name: values}})
    done = await ok(client, "prune", dry_run=False, merge_similarity=0.8)
    assert listed(done) == []


async def test_a_copy_found_by_more_than_its_twin_is_never_merged(client: Client) -> None:
    # Merged, the copy's episode, topics and source were gone: recall by them found nothing.
    rack = "Server rack 4 overheats."
    first = await ok(client, "remember", text=rack, episode="ep1", topics=["dc"])
    told = [
        await ok(client, "remember", text=rack[:-1] + mark, **more)
        for mark, more in (
            ("!", {"episode": "ep2"}),
            ("!!", {"topics": ["dc", "cooling"]}),
            ("!!!", {"source": "email"}),
            ("!!!!", {"episode": "ep1", "topics": ["DC"]}),
        )
    ]
    done = await ok(client, "prune", dry_run=False, merge_similarity=0.8)
    assert listed(done) == [(told[3]["observation_id"], "merged", first["observation_id"])]
    for found in ({"episode": "ep2"}, {"topics": ["cooling"]}):
        answer = await ok(client, "recall", query="", **found)
        assert [r["observation_id"] for r in answer["results"]] == [
            told[0 if "episode" in found else 1]["observation_id"]
        ]


async def test_why_each_was_retired_travels_with_an_export(
    memory_client: Client, memory: Memory, tmp_path: Path
) -> None:
    ids = await seed(memory_client)
    await ok(memory_client, "prune", dry_run=False, **RULE)
    memory.export(str(tmp_path / "memory.jsonl"))
    moved = hash_settings(tmp_path / "moved")
    done = import_file(moved.store, tmp_path / "memory.jsonl")
    again = import_file(moved.store, tmp_path / "memory.jsonl")  # kept once
    async with Client(create_server(moved)) as client:
        unused = (await ok(client, "cite_evidence", id=ids["unused"]))["observation"]
        copy = (await ok(client, "cite_evidence", id=ids["copy"]))["observation"]
    assert unused["retired"].startswith("pruned: unused (confidence <= 0.5, impressions >= 1")
    assert copy["retired"].startswith(f"pruned: merged into {ids['original']}")
    assert done.created["Pruned"] == 2 and again.skipped["Pruned"] == 2
    assert len((tmp_path / "moved" / AUDIT_FILE).read_text().splitlines()) == 2


async def test_a_reason_for_an_observation_the_import_lacks_is_refused_naming_the_line(
    memory_client: Client, memory: Memory, tmp_path: Path
) -> None:
    await seed(memory_client)
    await ok(memory_client, "prune", dry_run=False, **RULE)
    memory.export(str(tmp_path / "memory.jsonl"))
    lines = (tmp_path / "memory.jsonl").read_text().splitlines()
    number = next(i for i, line in enumerate(lines) if json.loads(line).get("table") == "Pruned")
    lines[number] = json.dumps(json.loads(lines[number]) | {"id": "obs_nowhere"})
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")
    moved = hash_settings(tmp_path / "moved")
    with pytest.raises(ImportRefused, match=f"line {number + 1}: Pruned's id 'obs_nowhere'"):
        import_file(moved.store, tmp_path / "bad.jsonl")
    assert not (tmp_path / "moved").exists()  # refused whole: no memory left behind


async def test_a_purge_takes_the_reason_a_prune_retired_it_for(
    memory_client: Client, memory: Memory, tmp_path: Path
) -> None:
    # The reason stayed in pruned.jsonl: the export carried it, and its own import refused
    # it (the observation it names was gone).
    ids = await seed(memory_client)
    await ok(memory_client, "prune", dry_run=False, **RULE)
    await ok(memory_client, "forget", id=ids["copy"], mode="purge")
    memory.export(str(tmp_path / "memory.jsonl"))
    done = import_file(hash_settings(tmp_path / "moved").store, tmp_path / "memory.jsonl")
    audit = (Path(memory.settings.data_dir) / AUDIT_FILE).read_text()
    assert done.created["Pruned"] == 1
    assert ids["copy"] not in audit and ids["unused"] in audit


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"max_confidence": "1.5"}, "max_confidence"),
        ({"max_confidence": "lots"}, "max_confidence"),
        ({"min_impressions": 0}, "min_impressions"),
        ({"min_age_days": -1}, "min_age_days"),
        ({"merge_similarity": 0.5}, "merge_similarity"),
        ({"merge_similarity": 1.01}, "merge_similarity"),
    ],
)
async def test_a_bad_rule_value_is_refused_naming_the_field(
    client: Client, rule: dict[str, Any], field: str
) -> None:
    message = await error(client, "prune", dry_run=False, **rule)
    assert f"prune: {field} " in message, message


async def test_a_value_too_precise_is_named_once(client: Client) -> None:
    message = await error(client, "prune", max_confidence="0.1234567890123456789")
    assert (
        "max_confidence has more than 18 decimal places: 0.1234567890123456789; round it" in message
    )
    # A value whose text stands inside the problem's words is still named (the store's own
    # reading: the tool's schema refuses a string first).
    with pytest.raises(InvalidInput) as caught:
        rule_of(PruneSettings(), {"min_impressions": "a"})
    assert str(caught.value).endswith(", got 'a'"), caught.value


async def test_prune_is_listed_as_destructive_and_a_dry_run_by_default(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    tool = tools["prune"]
    assert tool.annotations is not None
    assert tool.annotations.destructive_hint is True
    assert tool.annotations.read_only_hint is False
    assert tool.input_schema["properties"]["dry_run"]["default"] is True
    assert "required" not in tool.input_schema or not tool.input_schema["required"]


#: Pairs the bundled model finds 0.95 alike or more that say different things.
#: A traceback of 40 frames, as a long text past the model's window.
TRACE = "Traceback (most recent call last):\n" + "".join(
    f'  File "src/app/module_{i}.py", line {10 + i}, in handler_{i}\n'
    f"    result = step_{i}(request)\n"
    for i in range(40)
)
DIFFERENT = [
    ("Invoice 98 total is 3.98.", "Invoice 99 total is 3.98."),
    ("The printer on floor 2 is broken.", "The printer on floor 2 is not broken."),
    ("The team standup is on Monday at nine.", "The team standup is on Tuesday at nine."),
    # The same words the other way round, or with an opposite or another tense: merged
    # away, the one said later (a correction) was lost.
    ("Alice owes Bob money.", "Bob owes Alice money."),
    ("I like the red car more than the blue car.", "I like the blue car more than the red car."),
    ("Send the report after Friday.", "Send the report before Friday."),
    ("Store the keys downstairs.", "Store the keys upstairs."),
    ("The door code was 4512.", "The door code is 4512."),
    # Paths, flags, hosts and versions: one word each, and no capital or digit to tell.
    (
        "Use the `--no-cache` flag when building the Docker image.",
        "Use the `--cache` flag when building the Docker image.",
    ),
    (
        "The config loader lives in src/config/loader.py.",
        "The config loader lives in src/legacy/loader.py.",
    ),
    ("We pinned numpy<2 because of pandas.", "We pinned numpy>=2 because of pandas."),
    ("The API is served from api.example.com.", "The API is served from api.example.org."),
    ("This call is safe to retry.", "This call is unsafe to retry."),
    # A word said instead of another, as often an opposite as not (no list of opposites is
    # ever whole: "increases" and "decreases" merged, and recall gave the one kept).
    (
        "Caching increases the memory usage of the worker.",
        "Caching decreases the memory usage of the worker.",
    ),
    (
        "The sync job imports user records to the CRM.",
        "The sync job exports user records to the CRM.",
    ),
    (
        "The retry policy uses the minimum backoff for uploads.",
        "The retry policy uses the maximum backoff for uploads.",
    ),
    ("The deploy script needs Python 3.11.", "The deploy script requires Python 3.11."),
    # Past the model's 256 word pieces the two read the same (cosine 1.0).
    (TRACE + "KeyError: 'refresh_token'", TRACE + "KeyError: 'access_token'"),
]
#: Pairs that say the same thing.
SAME = [
    ("The lift in block C is out of order.", "the lift in block C is out of order!"),
]
TRACKS = [{"name": "Balls to the Wall", "album_id": n, "milliseconds": 342562} for n in (2, 3)]


@pytest.mark.slow
async def test_only_near_duplicates_that_say_the_same_thing_merge_with_the_real_model(
    bundled_settings: Settings,
) -> None:
    settings = bundled_settings
    texts = [t for pair in DIFFERENT + SAME for t in pair]
    with anyio.fail_after(180):
        async with Client(create_server(settings)) as client:
            done = await ok(client, "remember", memories=[{"text": t} for t in texts])
            records = await ok(
                client,
                "remember",
                memories=[{"record": {"type": "Track", "fields": f}} for f in TRACKS],
            )
            dry = await ok(client, "prune")
    ids = dict(zip(texts, (m["observation_id"] for m in done["remembered"]), strict=True))
    # Guards the data: the model alone would merge every pair.
    vectors = np.asarray(make_embedder(settings.store.embedding).embed(texts), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for first, second in DIFFERENT + SAME:
        cosine = float(vectors[texts.index(first)] @ vectors[texts.index(second)])
        assert cosine >= 0.95, (first, second, cosine)
    record_ids = [m["observation_id"] for m in records["remembered"]]
    assert {(r["observation_id"], r["merged_into"]) for r in dry["retired"]} == {
        (ids[second], ids[first]) for first, second in SAME
    }
    assert record_ids[1] not in {r["observation_id"] for r in dry["retired"]}
