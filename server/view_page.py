"""The picture of the memory as one self-contained HTML page: ``doxa view`` writes it, and the
HTTP and SSE transports serve it at ``/view`` behind the same token check as ``/mcp``.

The page (``view/page.html``: hand-written CSS and JavaScript, no library, nothing fetched)
draws the ``DRAWN`` most mentioned entities and the neighbourhood of the one selected as a
graph, lists every entity for the search box, and shows an entity's facts, timeline, notes
and conflicts. The memory's ``Picture`` is embedded as compact JSON: entities are referred
to by their position in the list, times are UTC to the minute.
"""

from __future__ import annotations

import json
from datetime import datetime
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from doxa.store.errors import MemoryStoreError

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecurityMiddleware
    from starlette.requests import Request
    from starlette.responses import Response

    from doxa.server.settings import ServerSettings
    from doxa.store.picture import Picture
    from doxa.tools.context import MemoryContext

#: Entities drawn in the graph when the page opens (the most mentioned); the rest are found
#: by search, and drawn with their neighbours when selected.
DRAWN = 80
#: Where the template's data goes.
_SLOT = "/*DATA*/"
#: What the page may do when served: run its own inline script and style, fetch nothing.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline';"
    " img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def _time(moment: datetime | None) -> str:
    # By hand: isoformat and strftime ask an aware time for its offset, a third of the
    # page's time over 10k facts. The store's times are UTC.
    if moment is None:
        return ""
    m = moment
    return f"{m.year:04d}-{m.month:02d}-{m.day:02d} {m.hour:02d}:{m.minute:02d}"


def page_data(picture: Picture, drawn: int = DRAWN) -> dict[str, Any]:
    """The picture as the page reads it (short keys: the page is the only reader).

    ``e`` entities ``[name, observations, current facts]``; ``f`` facts ``[id, subject,
    predicate, object, confidence, agents, start, end, observed, recorded, retracted,
    superseded by, current, event times, supersession recorded, begins later, ended by,
    held at some time]`` with subject and object as positions in ``e``;
    ``m`` entities mentioned together ``[a, b, count]``; ``n`` notes ``[id, text, observed,
    [entities]]``; ``c`` conflicts ``[kind, a, b, a text, b text, a agents, b agents,
    [entities]]``; ``o`` observations, ``t`` taken at, ``d`` entities drawn, ``x`` left out.
    """
    entities = [[e.name, e.observations, e.facts] for e in picture.entities]
    index = {e.key: i for i, e in enumerate(picture.entities)}

    def at(key: str, name: str) -> int:
        # Every fact's ends are entities; a key missing (an empty object) gets a row.
        if key not in index:
            index[key] = len(entities)
            entities.append([name or key, 0, 0])
        return index[key]

    facts = [
        [
            f.id,
            at(f.subject_key, f.subject),
            f.predicate,
            at(f.object_key, f.object),
            f.confidence,
            ", ".join(f.agents),
            _time(f.start),
            _time(f.end),
            _time(f.observed_at),
            _time(f.recorded_at),
            _time(f.retracted_at),
            ", ".join(f.superseded_by),
            1 if f.current else 0,
            "; ".join(f.events),
            _time(f.superseded_known),
            1 if f.later else 0,
            f.ended_by or "",
            1 if f.held else 0,
        ]
        for f in picture.facts
    ]
    together = [
        [index[a], index[b], n]
        for a, b, n in picture.mentioned_together
        if a in index and b in index
    ]
    notes = [
        [n.id, n.text, _time(n.observed_at), [index[k] for k in n.about if k in index]]
        for n in picture.notes
    ]
    conflicts = [
        [
            c.kind,
            c.a,
            c.b,
            c.a_text,
            c.b_text,
            list(c.a_agents),
            list(c.b_agents),
            [index[k] for k in c.about if k in index],
            _time(c.begins),
        ]
        for c in picture.conflicts
    ]
    return {
        "t": _time(picture.taken_at),
        "o": picture.observations,
        "d": drawn,
        "x": picture.left_out,
        "e": entities,
        "f": facts,
        "m": together,
        "n": notes,
        "c": conflicts,
    }


def _embedded(data: dict[str, Any]) -> str:
    """JSON safe inside a ``<script>`` element: no ``</script>``, no ``<!--``, and the two
    line separators JavaScript once read as line ends, all written as escapes."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render(picture: Picture, drawn: int = DRAWN) -> str:
    """The self-contained HTML page of ``picture``."""
    template = files("doxa.server").joinpath("view/page.html").read_text(encoding="utf-8")
    head, slot, tail = template.partition(_SLOT)
    assert slot, "view/page.html has lost its data slot"
    return head + _embedded(page_data(picture, drawn)) + tail


def view_endpoint(state: MemoryContext, server: ServerSettings) -> Any:
    """The ``/view`` route's handler: the page of the memory ``state`` serves, now.

    The token check wraps the whole application (``doxa.server.access``); the Host and
    Origin checks the SDK makes on ``/mcp`` are made here too, or a page elsewhere could
    read the memory through a name it points at this machine (DNS rebinding).
    """
    # Made at the first request: only HTTP and SSE serve the route, and the checks' modules
    # took about 2 ms of every start, stdio's included.
    security: TransportSecurityMiddleware | None = None

    async def view(request: Request) -> Response:
        nonlocal security
        import anyio.to_thread
        from starlette.responses import HTMLResponse, PlainTextResponse

        if security is None:
            from mcp.server.transport_security import TransportSecurityMiddleware

            from doxa.server.access import transport_security

            security = TransportSecurityMiddleware(transport_security(server))
        refused = await security.validate_request(request)
        if refused is not None:
            return refused
        try:
            picture = await anyio.to_thread.run_sync(lambda: state.memory().picture())
        except MemoryStoreError as error:
            return PlainTextResponse(f"the memory cannot be shown: {error}", status_code=503)
        page = await anyio.to_thread.run_sync(render, picture)
        return HTMLResponse(
            page,
            headers={
                "Content-Security-Policy": CONTENT_SECURITY_POLICY,
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
            },
        )

    return view
