"""The ``about`` tool, and the entity resources: one entity at a glance."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from doxa.store.errors import InvalidInput, MemoryStoreError
from doxa.store.values import iso
from doxa.tools.answer import answer, compact, lean
from doxa.tools.context import MemoryContext, call, context_of, exact
from doxa.tools.find_conflicts import Conflict, Side, within_budget

if TYPE_CHECKING:
    from doxa.store.sharing import SharedMemory

T = TypeVar("T")

DESCRIPTION = """One entity at a glance (any fact's subject or object, or a topic), for "what
do we know about X", "how did X change", "who relates to X": current facts by predicate (also
where X is the object), a timeline of changes, entities within 2 hops and their links,
counts, conflicts, a summary. `as_of`: as true then; `known_at`: as the memory held then.
Search by words with `recall`."""


class Value(BaseModel):
    """One current fact: the other side, the observation stating it, who believes it."""

    object: str | None = None
    subject: str | None = None
    observation_id: str
    confidence: str
    agents: list[str] = Field(default_factory=list)
    since: str | None = None


class Event(BaseModel):
    """A change of a fact, at its valid time, with when the memory recorded it."""

    at: str
    event: Literal["started", "superseded", "ended", "retracted"]
    fact: str
    observation_id: str
    by: str | None = None
    recorded: str


class Related(BaseModel):
    """An entity one or two hops away and the links that reach it."""

    name: str
    hops: int
    via: list[str]


class Counts(BaseModel):
    """Observations naming the entity, current facts, believing agents, timeline events."""

    observations: int
    facts: int
    believers: int
    events: int = 0
    unlisted: int = Field(0, description="values beyond 20 per predicate, left out")


class AboutResult(BaseModel):
    """One entity at a glance."""

    name: str
    summary: str
    facts: dict[str, list[Value]] = Field(default_factory=dict, description="by predicate")
    incoming: dict[str, list[Value]] = Field(
        default_factory=dict, description="facts whose object it is, by predicate"
    )
    timeline: list[Event] = Field(default_factory=list)
    related: list[Related] = Field(default_factory=list)
    counts: Counts
    conflicts: list[Conflict] = Field(default_factory=list)
    note: str | None = Field(None, description="what was cut")


def _value(v: dict[str, Any]) -> Value:
    return Value(
        object=v.get("object"),
        subject=v.get("subject"),
        observation_id=v["id"],
        confidence=exact(v["confidence"]) or "0",
        agents=v["agents"],
        since=iso(v["since"]),
    )


def _side(c: dict[str, Any], side: str) -> Side:
    return Side(
        observation_id=c[side],
        text=c[f"{side}_text"],
        confidence=exact(c[f"{side}_confidence"]) or "0",
        agents=c[f"{side}_agents"],
    )


def _conflict(c: dict[str, Any]) -> Conflict:
    return Conflict(
        kind=c["kind"],
        a=_side(c, "a"),
        b=_side(c, "b"),
        subject=c.get("subject"),
        predicate=c.get("predicate"),
        since=iso(c.get("at")),
        begins=iso(c.get("begins")),
    )


def about_result(seen: dict[str, Any]) -> AboutResult:
    """The tool's view of the store's ``Memory.about``."""
    counts = seen["counts"]
    conflicts, note = within_budget([_conflict(c) for c in seen["conflicts"]])
    return AboutResult(
        name=seen["name"],
        summary=seen["summary"],
        facts={p: [_value(v) for v in vs] for p, vs in seen["facts"].items()},
        incoming={p: [_value(v) for v in vs] for p, vs in seen["incoming"].items()},
        timeline=[
            Event(
                at=iso(e["at"]) or "",
                event=e["event"],
                fact=e["fact"],
                observation_id=e["id"],
                by=e.get("by"),
                recorded=iso(e["recorded"]) or "",
            )
            for e in seen["timeline"]
        ],
        related=[Related(**r) for r in seen["related"]],
        counts=Counts(
            observations=counts["observations"],
            facts=counts["facts"],
            believers=counts["believers"],
            # Said only when the timeline shows fewer.
            events=counts["events"] if counts["events"] > len(seen["timeline"]) else 0,
            unlisted=counts["unlisted"],
        ),
        conflicts=conflicts,
        note=note,
    )


async def about(
    ctx: Context[Any],
    name: Annotated[str, Field(description="any case")],
    as_of: Annotated[str | None, Field(description="ISO 8601: what was true then")] = None,
    known_at: Annotated[str | None, Field(description="ISO 8601: as held then")] = None,
) -> Annotated[CallToolResult, AboutResult]:
    """One entity at a glance."""

    def run(memory: SharedMemory) -> CallToolResult:
        return answer(about_result(memory.about(name, as_of=as_of, known_at=known_at)))

    return await call(ctx, run)


# ---- resources ------------------------------------------------------------------------------

ENTITY_URI = "doxa://entity/{name}"
ENTITIES_URI = "doxa://entities"
STATS_URI = "doxa://stats"


async def _read(state: MemoryContext, operation: Callable[[SharedMemory], T]) -> T:
    """Run ``operation`` on the memory off the event loop; store errors become resource
    errors (a name that names nothing: not found)."""

    def run() -> T:
        return operation(state.memory())

    try:
        return await anyio.to_thread.run_sync(run)
    except InvalidInput as error:
        raise ResourceNotFoundError(str(error)) from None
    except MemoryStoreError as error:
        raise ResourceError(str(error)) from None


async def entity(name: str, ctx: Context[Any]) -> str:
    """``doxa://entity/{name}``: what ``about(name)`` answers, as JSON."""

    def run(memory: SharedMemory) -> str:
        return compact(lean(about_result(memory.about(name))))

    return await _read(context_of(ctx), run)


def entity_list(state: MemoryContext) -> Callable[[], Any]:
    """The reader of ``doxa://entities``: the entities, most mentioned first."""

    async def read() -> str:
        found = await _read(state, lambda memory: memory.entities())
        return compact({"entities": found})

    return read


def stats_reader(state: MemoryContext) -> Callable[[], Any]:
    """The reader of ``doxa://stats``: how many of each kind of thing the memory holds."""

    async def read() -> str:
        counts = await _read(state, lambda memory: memory.stats())
        return compact({"counts": counts})

    return read
