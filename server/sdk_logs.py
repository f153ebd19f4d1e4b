"""The SDK's log lines about what a client sent, kept to one line each.

Over SSE, a message POSTed to a session that is no JSON-RPC message (not JSON, not UTF-8,
nested too deep, a bare number) is answered 400 "Could not parse message", and the SDK logged
it with ``logger.exception``: an ERROR and a traceback of pydantic's whole validation report,
some twenty lines per request, for anyone who could reach the port to repeat. It is the
client's fault, not the server's: it is logged as a WARNING naming the first error, in one
line.
"""

from __future__ import annotations

import logging

from pydantic import ValidationError

#: The SDK's SSE transport, whose POSTed messages are parsed there.
SSE_LOGGER = "mcp.server.sse"
#: What it logs, with the exception, for a POSTed message it cannot parse.
PARSE_FAILURE = "Failed to parse message"


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


def quiet_client_faults() -> None:
    """Install the filter on the SDK's loggers (once per process)."""
    logger = logging.getLogger(SSE_LOGGER)
    if not any(isinstance(f, _ClientFaults) for f in logger.filters):
        logger.addFilter(_ClientFaults())
