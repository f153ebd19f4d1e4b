"""Property-based tests: arbitrary arguments to every tool, through a real MCP client.

One memory (real Kùzu, real LanceDB, hash embedder) takes a few hundred calls that Hypothesis
draws: plausible values, JSON-looking strings, whitespace, unicode and unpaired surrogates,
numbers, booleans, nested lists and objects, missing and unknown keys, ids the memory returned
and ids it never did. Every call must answer in time, every error must name the field it is
about, every answer must be sendable as JSON, and at the end the store must hold exactly what
the successful ``remember`` calls acknowledged, byte for byte, read both from the graph and
through ``recall``.

The run is derandomized (the same calls on every run and in CI) and bounded to a few hundred
calls, so the file takes well under 30 seconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.argument_errors import printable
from doxa.server.settings import Settings
from doxa.store import Memory

#: Calls drawn in one run (each example is one call). Enough to reach every error path of
#: every tool several times; the whole file stays well under 30 s.
CALLS = 400
#: Seconds one call may take before it counts as a hang.
CALL_TIMEOUT = 20

LATEST = "9999-12-31T23:59:59.999999Z"

PARAMETERS: dict[str, frozenset[str]] = {
    "remember": frozenset(
        {"text", "topics", "agent", "confidence", "observed_at", "source", "episode"}
        | {"fact", "supports", "contradicts", "memories"}
    ),
    "recall": frozenset(
        {"query", "agent", "topics", "min_confidence", "as_of", "include_superseded"}
        | {"limit", "order_by", "explain"}
    ),
    "find_conflicts": frozenset({"agent", "other_agent", "topic"}),
    "cite_evidence": frozenset({"id", "agent", "unsupported"}),
    "feedback": frozenset({"recall_id", "accepted", "rejected"}),
    "forget": frozenset({"id", "mode"}),
}

# ---- what a client may send --------------------------------------------------------------------

#: Strings a client sends by mistake or on purpose that look like something else.
TRICKY = [
    "null",
    "true",
    "false",
    "[]",
    "{}",
    "[1, 2, 3]",
    '{"a": 1}',
    '"quoted"',
    "1",
    "0.5",
    "1e-400",
    "NaN",
    "",
    " ",
    "\t\n",
    "  padded  ",
    "Ünïcödé ✓ 🧠 中文 \u202e",
    "nul\x00byte",
    "x'); MATCH (n) DETACH DELETE n; //",
]

#: Text of any code point, unpaired surrogates included (the in-memory transport carries them;
#: JSON can spell them as ``\\ud800``).
any_text = st.one_of(
    st.text(max_size=30),
    st.text(alphabet=st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=4),
)
#: Text a well-behaved client may send: any valid Unicode, JSON-looking strings, whitespace.
valid_text = st.one_of(st.sampled_from(TRICKY), st.text(st.characters(codec="utf-8"), max_size=30))
strings = st.one_of(st.sampled_from(TRICKY), any_text)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    strings,
)
#: Object keys are never unpaired surrogates: the client's own serializer refuses them (in
#: values it lets them through).
keys = st.one_of(st.sampled_from(TRICKY), st.text(max_size=10))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=6,
)


def mostly(usual: st.SearchStrategy[Any], other: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``usual`` three times in four, else ``other``."""
    return st.sampled_from([usual, usual, usual, other]).flatmap(lambda chosen: chosen)


def as_json_text(value: st.SearchStrategy[Any]) -> st.SearchStrategy[str]:
    """The value as JSON text, as some clients send lists and objects."""
    return value.map(json.dumps)


@dataclass(frozen=True)
class Ref:
    """A placeholder for an id the memory returned: the ``index``-th known one of ``kind``
    when the call is made (``result``: one that the call's recall returned). Hypothesis must
    draw the same way whatever the memory holds, so ids are chosen after drawing."""

    kind: str
    index: int
    padded: bool


NAMES = ["a", "b", " a ", "a\n", "A", "Ünï 🧠", "null", "[]", "{}", "true", ""]
TEXTS = ["x", " x ", "x  y", "x y", "x\ty ", "[1, 2, 3]", "{}", "null", "1", '"x"']
DECIMALS = ["0", "1", "0.5", " 0.5 ", "-0", "0.000000000000000001", "1E-18", "0.10"]
BAD_DECIMALS = ["1e-400", "0.1234567890123456789", "NaN", "Infinity", "1.5", "[0.5]", "high"]
TIMES = [
    "2024-05-01T14:30:00Z",
    "2024-05-01",
    " 2024-05-01T14:30:00+02:00 ",
    "0001-01-01T00:00:00Z",
    "0001-01-01T05:00:00+05:00",
    LATEST,
    "9999-12-31T18:59:59-05:00",
]
BAD_TIMES = ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "yesterday", "2024-13-01"]
offsets = st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23))


class Values:
    """The values one kind of call is drawn from.

    ``wild=False``: what a client might well send (any valid Unicode, JSON-looking strings,
    whitespace, exact and inexact numbers, times at the edges of the range); most calls
    succeed. ``wild=True``: that, or anything at all in any field: surrogates, wrong types,
    nested lists and objects, values out of range.
    """

    def __init__(self, wild: bool) -> None:
        self.wild = wild
        text = strings if wild else valid_text
        # Blank texts and topics are refused; a plausible call rarely sends one.
        filled = text if wild else text.filter(str.strip)
        self.names = self.maybe(st.one_of(st.sampled_from(NAMES), text))
        self.texts = self.maybe(st.one_of(st.sampled_from(TEXTS), filled))
        self.decimals = self.maybe(
            st.one_of(
                st.sampled_from(DECIMALS + BAD_DECIMALS if wild else DECIMALS),
                st.decimals(min_value=0, max_value=1, places=6, allow_nan=False).map(str),
                st.floats(min_value=0, max_value=1),
                st.integers(min_value=-1 if wild else 0, max_value=2 if wild else 1),
            )
        )
        self.times = self.maybe(
            st.one_of(
                st.sampled_from(TIMES + BAD_TIMES if wild else TIMES),
                st.builds(
                    lambda moment, offset: moment.replace(tzinfo=timezone(offset)).isoformat(),
                    st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31)),
                    offsets,
                ),
                st.datetimes().map(datetime.isoformat),
            )
        )
        topics = st.lists(st.one_of(st.sampled_from(NAMES[:6]), filled), max_size=3)
        self.topics = self.maybe(st.one_of(topics, topics, as_json_text(topics)))

    def maybe(self, plausible: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        """``plausible``, or when wild sometimes any JSON value at all."""
        if not self.wild:
            return plausible
        return mostly(plausible, json_values)

    def ids(self, kind: str) -> st.SearchStrategy[Any]:
        """An id the memory returned (sometimes padded with whitespace), or anything else."""
        known = st.builds(Ref, st.just(kind), st.integers(min_value=0), st.booleans())
        return st.one_of(known, known, known, self.names)

    def arguments(
        self, required: dict[str, st.SearchStrategy[Any]], optional: dict[str, Any]
    ) -> st.SearchStrategy[Any]:
        """A tool's arguments, any optional ones left out; when wild, sometimes an unknown
        key too."""
        drawn = st.fixed_dictionaries(required, optional=optional)
        if not self.wild:
            return drawn
        extra = st.tuples(st.from_regex(r"[a-z_]{1,10}", fullmatch=True), json_values)
        return st.one_of(
            drawn,
            st.tuples(drawn, extra).map(lambda pair: {**pair[0], pair[1][0]: pair[1][1]}),
        )

    def fact(self) -> st.SearchStrategy[Any]:
        plain = st.fixed_dictionaries(
            {
                "subject": self.maybe(st.sampled_from(["Alice", " Alice ", "Bob"]) | self.names),
                "predicate": self.maybe(st.sampled_from(["lives in", "likes"]) | self.names),
                "object": self.names,
            },
            optional={"valid_from": self.times, "valid_until": self.times},
        )
        return self.maybe(st.one_of(plain, plain, as_json_text(plain)))

    def memory(self) -> st.SearchStrategy[Any]:
        """One memory, as ``remember`` and each of ``memories`` take it."""
        return st.fixed_dictionaries({"text": self.texts}, optional=self.memory_fields())

    def memory_fields(self, links: bool = True) -> dict[str, st.SearchStrategy[Any]]:
        fields = {
            "topics": self.topics,
            "agent": self.names,
            "confidence": self.decimals,
            "observed_at": self.times,
            "source": self.texts,
            "episode": self.names,
            "fact": self.fact(),
        }
        if links:
            supports = st.fixed_dictionaries(
                {"belief_id": self.ids("belief")}, optional={"weight": self.decimals}
            )
            fields["supports"] = self.maybe(st.lists(supports, max_size=2))
            fields["contradicts"] = self.maybe(st.lists(self.ids("observation"), max_size=2))
        return fields

    def remember(self) -> st.SearchStrategy[Any]:
        one = self.memory()
        # JSON text cannot hold a placeholder: memories sent as text link to nothing.
        as_text = st.fixed_dictionaries({"text": self.texts}, optional=self.memory_fields(False))
        least = 0 if self.wild else 1
        memories = mostly(
            st.lists(one, min_size=least, max_size=3),
            as_json_text(st.lists(as_text, min_size=least, max_size=3)),
        )
        batch = self.arguments({"memories": memories}, {"agent": self.names})
        single = self.arguments({"text": self.texts}, self.memory_fields())
        if not self.wild:
            return st.one_of(single, single, batch)
        anything = st.fixed_dictionaries(
            {}, optional={"text": json_values, "memories": json_values, **self.memory_fields()}
        )
        return st.one_of(single, single, batch, anything)

    def recall(self) -> st.SearchStrategy[Any]:
        words = st.sampled_from(["in May 2023", "9999 years ago", "December 9999", "yesterday"])
        return self.arguments(
            {"query": self.maybe(st.one_of(self.texts, words))},
            {
                "agent": self.names,
                "topics": self.topics,
                "min_confidence": self.decimals,
                "as_of": self.times,
                "include_superseded": self.maybe(st.booleans()),
                "limit": self.maybe(
                    st.integers(min_value=-1, max_value=101)
                    if self.wild
                    else st.integers(min_value=1, max_value=100)
                ),
                "order_by": self.maybe(
                    st.sampled_from(["relevance", "confidence", "newest", "oldest"])
                ),
                "explain": self.maybe(st.booleans()),
            },
        )

    def find_conflicts(self) -> st.SearchStrategy[Any]:
        return self.arguments(
            {}, {"agent": self.names, "other_agent": self.names, "topic": self.names}
        )

    def cite_evidence(self) -> st.SearchStrategy[Any]:
        return self.arguments(
            {},
            {
                "id": st.one_of(self.ids("observation"), self.ids("belief")),
                "agent": self.names,
                "unsupported": self.maybe(st.booleans()),
            },
        )

    def feedback(self) -> st.SearchStrategy[Any]:
        judged = self.maybe(st.lists(self.ids("result"), max_size=2))
        return self.arguments(
            {"recall_id": self.ids("recall")}, {"accepted": judged, "rejected": judged}
        )

    def forget(self) -> st.SearchStrategy[Any]:
        modes = ["retract", "purge", "Purge", " purge"] if self.wild else ["retract", "purge"]
        return self.arguments(
            {"id": self.ids("observation")}, {"mode": self.maybe(st.sampled_from(modes))}
        )


def tool_arguments(tool: str) -> st.SearchStrategy[Any]:
    """Arguments for ``tool``: three times in four what a client might send, else wild."""
    plausible: st.SearchStrategy[Any] = getattr(Values(wild=False), tool)()
    wild: st.SearchStrategy[Any] = getattr(Values(wild=True), tool)()
    return mostly(plausible, wild)


#: remember most often, so the store fills; every tool often enough to reach its errors.
TOOLS = ["remember"] * 4 + ["recall"] * 2 + ["find_conflicts", "cite_evidence", "feedback"]
TOOLS += ["forget"]
ARGUMENTS = {tool: tool_arguments(tool) for tool in set(TOOLS)}


@dataclass
class Known:
    """Ids the memory returned so far, for calls that name them."""

    observations: list[str] = field(default_factory=list)
    beliefs: list[str] = field(default_factory=list)
    recalls: dict[str, list[str]] = field(default_factory=dict)

    def resolve(self, value: Any, returned: list[str]) -> Any:
        """``value`` with every ``Ref`` replaced by the id it stands for now."""
        if isinstance(value, Ref):
            pool = {
                "observation": self.observations,
                "belief": self.beliefs,
                "recall": sorted(self.recalls),
                "result": returned or self.observations,
            }[value.kind]
            chosen = pool[value.index % len(pool)] if pool else "obs_0000000000000000"
            return f" {chosen}\n" if value.padded else chosen
        if isinstance(value, list):
            return [self.resolve(item, returned) for item in value]
        if isinstance(value, dict):
            return {key: self.resolve(item, returned) for key, item in value.items()}
        return value

    def arguments(self, drawn: dict[str, Any]) -> dict[str, Any]:
        """The arguments to send: placeholders replaced (judged results are the recall's)."""
        recall_id = self.resolve(drawn.get("recall_id"), [])
        returned = self.recalls.get(recall_id.strip(), []) if isinstance(recall_id, str) else []
        out: dict[str, Any] = self.resolve(drawn, returned)
        return out


# ---- what the store must then hold --------------------------------------------------------------


@dataclass
class Stored:
    """One observation as a successful remember acknowledged it."""

    text: str
    agents: list[str]  # its believers: the first, then those who remembered the same text
    source: str | None
    episode: str | None
    confidence: Decimal
    topics: list[str]
    observed_at: datetime | None
    retracted: bool = False
    #: What each agent that remembered the same text later believes it with.
    believed: dict[str, Decimal] = field(default_factory=dict)


def stripped(value: Any) -> str | None:
    """A name as the memory keeps it: stripped; blank is not given."""
    if value is None:
        return None
    assert isinstance(value, str)
    return value.strip() or None


def exact(value: Any) -> Decimal:
    """A confidence as the client sent it, exactly (a float through its shortest repr)."""
    if isinstance(value, str):
        return Decimal(value.strip())
    if isinstance(value, float):
        return Decimal(repr(value))
    return Decimal(value)


def utc(value: Any) -> datetime | None:
    if value is None:
        return None
    text = value.strip()
    text = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    moment = datetime.fromisoformat(text)
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def topic_echo(value: Any) -> list[str]:
    """The topics a remember acknowledges: stripped, the first of each case-folded name."""
    given = json.loads(value) if isinstance(value, str) else (value or [])
    out: list[str] = []
    for topic in given:
        name = topic.strip()
        if name.casefold() not in {t.casefold() for t in out}:
            out.append(name)
    return out


class Model:
    """What the memory must hold: every acknowledged observation, by id."""

    def __init__(self, default_agent: str) -> None:
        self.default_agent = default_agent
        self.stored: dict[str, Stored] = {}

    def remembered(self, arguments: dict[str, Any], answer: dict[str, Any]) -> None:
        memories = arguments.get("memories")
        if memories is None:
            items = [arguments]
        else:
            items = json.loads(memories) if isinstance(memories, str) else memories
        fallback = stripped(arguments.get("agent")) or self.default_agent
        listed = each_remembered(arguments, answer)
        assert len(listed) == len(items)
        for item, done in zip(items, listed, strict=True):
            agent = stripped(item.get("agent")) or fallback
            obs = done["observation_id"]
            if done.get("duplicate_of") is not None:
                # The same text (up to whitespace) for the same agent: the existing ids.
                assert done["duplicate_of"] == obs
                earlier = self.stored[obs]
                assert agent in earlier.agents
                assert earlier.text.split() == item["text"].split()
                assert not earlier.retracted
                continue
            if obs in self.stored:
                # The same text from another agent: its belief in the observation held.
                earlier = self.stored[obs]
                assert agent not in earlier.agents and not earlier.retracted
                assert earlier.text.split() == item["text"].split()
                assert done.get("shared_with") == sorted(earlier.agents)
                earlier.agents.append(agent)
                earlier.believed[agent] = exact(item.get("confidence", "1"))
                continue
            topics = topic_echo(item.get("topics"))
            assert done.get("topics", []) == topics
            self.stored[obs] = Stored(
                text=item["text"],
                agents=[agent],
                source=item.get("source"),
                episode=stripped(item.get("episode")),
                confidence=exact(item.get("confidence", "1")),
                topics=topics,
                observed_at=utc(item.get("observed_at")),
            )

    def forgot(self, answer: dict[str, Any]) -> None:
        obs = answer["observation_id"]
        if answer["mode"] == "purge":
            del self.stored[obs]
        elif answer.get("kept_for"):
            # Others believe it too: only this server's agent's belief was withdrawn.
            held = self.stored[obs]
            if self.default_agent in held.agents:
                held.agents.remove(self.default_agent)
            assert sorted(answer["kept_for"]) == sorted(held.agents)
        else:
            self.stored[obs].retracted = True


def each_remembered(arguments: dict[str, Any], answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The memories a remember answer acknowledges: a batch lists them in ``remembered`` (and
    says nothing else), one memory is the answer itself (without ``remembered``)."""
    if arguments.get("memories") is not None:
        assert set(answer) == {"remembered"}, answer
        listed: list[dict[str, Any]] = answer["remembered"]
        return listed
    assert "remembered" not in answer, answer
    return [answer]


def check_error_names_a_field(tool: str, message: str, sent: dict[str, Any]) -> None:
    """The error starts with the path of a parameter or of a key sent (``field must …``,
    ``memories[2].fact.object: …``), whether the tool refused the value or its schema did."""
    prefix = f"Error executing tool {tool}: "
    assert message.startswith(prefix), f"an error that names no field: {message!r}"
    body = message.removeprefix(prefix)
    assert "validation error" not in body and "pydantic" not in body, body
    known = PARAMETERS[tool] | {printable(key) for key in sent}
    named = [
        name
        for name in known
        if body.startswith(name)
        and body[len(name) : len(name) + 1] in ("", ".", ":", " ", "[", ",")
    ]
    assert named, body


# ---- the run --------------------------------------------------------------------------------


@pytest.fixture
def portal() -> Iterator[BlockingPortal]:
    """An event loop on a thread, so Hypothesis (synchronous) can drive the async client."""
    with start_blocking_portal("asyncio") as running:
        yield running


def test_any_arguments_to_any_tool_answer_name_their_field_and_store_what_was_acknowledged(
    portal: BlockingPortal, settings: Settings, memory: Memory
) -> None:
    known = Known()
    model = Model(settings.store.agent)
    counts = {"ok": 0, "error": 0}

    with portal.wrap_async_context_manager(
        Client(create_server(settings, memory=memory))
    ) as client:

        async def call(tool: str, args: dict[str, Any]) -> Any:
            with anyio.fail_after(CALL_TIMEOUT):
                return await client.call_tool(tool, args)

        @settings_for_run
        @given(data=st.data())
        def one_call(data: st.DataObject) -> None:
            tool = data.draw(st.sampled_from(TOOLS), label="tool")
            args = known.arguments(data.draw(ARGUMENTS[tool], label="arguments"))
            result = portal.call(call, tool, args)
            if result.is_error:
                counts["error"] += 1
                message = result.content[0].text
                message.encode("utf-8")  # sendable over any transport
                check_error_names_a_field(tool, message, args)
                return
            counts["ok"] += 1
            answer = result.structured_content
            assert isinstance(answer, dict)
            json.dumps(answer, ensure_ascii=False).encode("utf-8")
            if tool == "remember":
                model.remembered(args, answer)
                for done in each_remembered(args, answer):
                    if done["observation_id"] not in known.observations:
                        known.observations.append(done["observation_id"])
                        known.beliefs.append(done["belief_id"])
            elif tool == "recall":
                returned = [r["observation_id"] for r in answer["results"]]
                known.recalls[answer["recall_id"]] = returned
            elif tool == "feedback":
                del known.recalls[answer["recall_id"]]
            elif tool == "forget":
                model.forgot(answer)
                if answer["mode"] == "purge":
                    known.observations.remove(answer["observation_id"])

        one_call()

        # Both kinds of answer were reached many times, or the strategies are off.
        assert counts["ok"] > CALLS // 5 and counts["error"] > CALLS // 5, counts
        assert_graph_holds(memory, model)
        for agent in {a for s in model.stored.values() for a in s.agents}:
            assert_recall_returns(portal, call, model, agent)


settings_for_run = hypothesis_settings(
    max_examples=CALLS,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


def assert_graph_holds(memory: Memory, model: Model) -> None:
    """The graph holds exactly the acknowledged observations, every field byte for byte."""
    graph = memory.graph
    table = graph.observations().to_pylist()
    rows = {row["id"]: row for row in table}
    assert set(rows) == set(model.stored)
    agents: dict[str, list[str]] = {}
    for agent, _, obs, _, withdrawn, *_ in graph.beliefs():
        if withdrawn is None:
            agents.setdefault(obs, []).append(agent)
    episodes = dict(graph.episode_links())
    topics: dict[str, set[str]] = {}
    for obs, topic in graph.mentions():
        topics.setdefault(obs, set()).add(topic)
    for obs, want in model.stored.items():
        row = rows[obs]
        assert row["text"] == want.text
        assert sorted(agents[obs]) == sorted(want.agents)
        assert row["source"] == want.source
        assert episodes.get(obs) == want.episode
        assert Decimal(row["confidence"]) == want.confidence
        assert topics.get(obs, set()) == set(want.topics)
        assert (row["retracted_at"] is not None) == want.retracted
        if want.observed_at is not None:
            assert row["observed_at"] == want.observed_at.replace(tzinfo=None)


def assert_recall_returns(portal: BlockingPortal, call: Any, model: Model, agent: str) -> None:
    """recall(agent=…) returns exactly the agent's live observations, as acknowledged."""
    live = {obs: s for obs, s in model.stored.items() if agent in s.agents and not s.retracted}
    if not 0 < len(live) <= 100:
        return  # one recall returns at most 100
    args = {
        "query": "",
        "agent": agent,
        "limit": 100,
        "include_superseded": True,
        "explain": True,
    }
    result = portal.call(call, "recall", {**args, "as_of": LATEST})
    assert not result.is_error, result.content[0].text
    found = {r["observation_id"]: r for r in result.structured_content["results"]}
    assert set(found) == set(live)
    for obs, want in live.items():
        got = found[obs]
        assert (got["text"], sorted(got["agents"]), got.get("source"), got.get("episode")) == (
            want.text,
            sorted(want.agents),
            want.source,
            want.episode,
        )
        # The asked agent's own confidence in it.
        assert Decimal(got["confidence"]) == want.believed.get(agent, want.confidence)
        assert sorted(got.get("topics", [])) == sorted(want.topics)
