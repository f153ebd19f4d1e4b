"""Exact numbers on the wire: a JSON number a float cannot carry reaches the tools as its text.

A JSON number is read as a Python float, so ``1e-400`` arrives as ``0.0`` and
``0.1234567890123456789`` as ``0.12345678901234568``: a confidence silently becomes another
one. Every incoming JSON-RPC message is therefore read once more here. A float literal that
its float's shortest repr gives back exactly (``0.8``, ``1e-3``, ``0.30000000000000004``)
stays a number, since the store reads a float through that repr; any other arrives as its
literal text, which the store reads exactly (and refuses, naming the field, when it has more
than 18 decimal places or is out of range).
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from doxa.server.request_body import Body, BodyCheck

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send


class _Inexact:
    """A ``parse_float`` hook remembering whether any literal had to stay text."""

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, literal: str) -> float | str:
        number = float(literal)
        try:
            if Decimal(literal) == Decimal(repr(number)):
                return number
        except InvalidOperation:  # an exponent beyond Decimal's range: certainly inexact
            pass
        self.seen = True
        return literal


def exact_loads(text: str) -> Any:
    """``text`` read as JSON, each float literal a float cannot carry kept as its text: a
    tool argument sent as JSON text (``record="{...}"``, ``doxa remember --record``) reads
    its numbers as the same argument sent as an object does.

    Raises:
        ValueError: not JSON (``NaN`` and ``Infinity`` are none: ``json`` would read them).
        RecursionError: nested too deep.
    """
    return json.loads(text, parse_float=_Inexact(), parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON number; send a finite number, or text")


def exact_json(body: bytes) -> bytes:
    """The message ``body`` with every float literal a float cannot carry turned into a string.

    Returns ``body`` itself (the same bytes) when nothing changes, including when it is not
    UTF-8 JSON at all: the SDK's parser then judges it exactly as it would have.
    """
    inexact = _Inexact()
    try:
        value = json.loads(body.decode("utf-8"), parse_float=inexact)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested too deep, huge int
        return body
    if not inexact.seen:
        return body
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


class ExactNumbers(BodyCheck):
    """ASGI wrapper that passes POSTed JSON bodies through ``exact_json`` (HTTP and SSE).

    A body that ``exact_json`` leaves alone, one larger than ``max_body_bytes`` (the SDK's own
    limit, beyond which it answers 413), and every other request reach the app byte for byte
    as they came.
    """

    async def check(self, scope: Scope, body: Body, receive: Receive, send: Send) -> None:
        """Hand the app the body with its inexact numbers as text."""
        original = body.data
        changed = exact_json(original) if body.complete else original
        if changed is not original:
            body.replaced(changed)
            headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(changed)).encode("ascii")))
            scope = {**scope, "headers": headers}
        await self.app(scope, body.replay(receive), send)
