"""The SDK's log lines about what a client sent, kept to one line each.

Over SSE, a message POSTed to a session that is no JSON-RPC message (not JSON, not UTF-8,
nested too deep, a bare number) is answered 400 "Could not parse message", and the SDK logged
it with ``logger.exception``: an ERROR and a traceback of pydantic's whole validation report,
some twenty lines per request, for anyone who could reach the port to repeat. It is the
client's fault, not the server's: it is logged as a WARNING naming the first error, in one
line.

The SDK's lines quoting what a client sent quote it whole and as it came: the session id of
a POST to ``/messages/`` (``Received invalid session ID: …``, its query decoded, so ``%0A``
is a line break) and a refused Host or Origin. A client could write lines of its own into the
log (``?session_id=x%0A2026-01-01 00:00:00,000 ERROR doxa: …``), or one of 16 KiB per
request. Each line of those loggers has its unprintable characters escaped (``\\n``), and
one above DEBUG is cut at ``LONGEST`` characters.
"""

from __future__ import annotations

import logging

from pydantic import ValidationError

#: The SDK's SSE transport, whose POSTed messages are parsed there.
SSE_LOGGER = "mcp.server.sse"
#: The SDK's Host and Origin checks (``doxa.server.access``).
SECURITY_LOGGER = "mcp.server.transport_security"
#: What it logs, with the exception, for a POSTed message it cannot parse.
PARSE_FAILURE = "Failed to parse message"
#: The most characters of a line above DEBUG from those loggers.
LONGEST = 300


class _ClientFaults(logging.Filter):
    """Turns the SDK's report of a message it could not parse into one WARNING line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != PARSE_FAILURE or record.exc_info is None:
            return True
        error = record.exc_info[1]
        record.exc_info = None
        record.exc_text = None
        record.levelno = logging.WARNING
        record.levelname = logging.getLevelName(logging.WARNING)
        record.msg = "a message POSTed to an SSE session is no JSON-RPC message (answered 400): %s"
        record.args = (_first_error(error),)
        return logging.getLogger(record.name).isEnabledFor(logging.WARNING)


def _first_error(error: BaseException | None) -> str:
    """The first line pydantic gives for ``error``, with how many more there are."""
    if not isinstance(error, ValidationError):
        return type(error).__name__
    errors = error.errors(include_url=False, include_input=False)
    if not errors:
        return "invalid"
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    more = f" ({len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where + ': ' if where else ''}{first['msg']}{more}"


class _OneLine(logging.Filter):
    """Writes a line's unprintable characters as escapes, and cuts a long one above DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        line = one_line(message, None if record.levelno <= logging.DEBUG else LONGEST)
        if line != message:
            record.msg, record.args = line, ()
        return True


def one_line(text: str, longest: int | None = LONGEST) -> str:
    """``text`` with each unprintable character (line breaks, controls, unpaired surrogates)
    as its escape, cut at ``longest`` characters (None: whole)."""
    if not text.isprintable():
        text = "".join(
            c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
        )
    if longest is not None and len(text) > longest:
        text = f"{text[:longest]}… ({len(text) - longest} more characters)"
    return text


def quiet_client_faults() -> None:
    """Install the filters on the SDK's loggers (once per process)."""
    for name, filters in (
        (SSE_LOGGER, (_ClientFaults, _OneLine)),
        (SECURITY_LOGGER, (_OneLine,)),
    ):
        logger = logging.getLogger(name)
        for kind in filters:
            if not any(isinstance(f, kind) for f in logger.filters):
                logger.addFilter(kind())
