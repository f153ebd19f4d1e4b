"""Who may use the HTTP and SSE transports: the Host and Origin a request may carry, and the
bearer token it must present.

- Host and Origin are always checked (the SDK's DNS-rebinding protection): against the
  loopback names, the bind address, and ``[server] allowed_hosts`` / ``allowed_origins``.
  Without it, a web page the user visits could point a name it controls at 127.0.0.1 (or at
  the server's address) and drive the memory from the browser.
- Tokens (``doxa.server.tokens``) are required when ``[server] auth`` says ``"tokens"``, or
  ``"auto"`` (the default) and either a token was ever created (``tokens.json`` exists, even
  with every token revoked) or the server listens off loopback. The decision is taken per
  request, so the first ``doxa token create`` locks a running server, and revoking the last
  token does not unlock it; and every second for an open SSE stream, closed once it no longer
  holds (``doxa.server.sse_streams``).
- Off loopback the server does not start without tokens, nor on a wildcard address
  (0.0.0.0, ::) without ``allowed_hosts``.

stdio never passes through here: its client is the process that started the server.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.transport_security import TransportSecuritySettings
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers

from doxa.server.request_body import send_json
from doxa.server.settings import ServerSettings, Settings, SettingsError
from doxa.server.tokens import TokenFileError, TokenRecord, TokenStore
from doxa.tools.identity import Caller

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)

#: Host and Origin values always allowed: the machine itself, on any port or none (a local
#: proxy's ``Host $host`` names no port).
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
LOOPBACK_ORIGINS = ("http://127.0.0.1", "http://localhost", "http://[::1]")
#: The realm named in WWW-Authenticate.
REALM = "doxa"
#: Who a request is let in as when no token is required (``Access.admitted_as``); no token
#: id (``tok_…``) is spelt so.
ANYONE = "anyone"


def is_loopback(host: str) -> bool:
    """True when ``host`` (a bind address) only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name: it may resolve to anything
        return False


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def _with_any_port(entries: list[str]) -> list[str]:
    """Each entry, and for one without a port also ``entry:*``: a proxy sends ``Host:
    doxa.example.com`` and a client naming the port ``Host: doxa.example.com:8765``."""
    out: list[str] = []
    for entry in entries:
        out.append(entry)
        bare = entry.split("//", 1)[-1]  # an origin's scheme has a colon too
        if bare.startswith("["):  # so has an IPv6 address
            bare = bare.rsplit("]", 1)[-1]
        if ":" not in bare:
            out.append(f"{entry}:*")
    return out


def _host_entry(host: str) -> str:
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host
    return f"[{address}]" if address.version == 6 else str(address)


def transport_security(server: ServerSettings) -> TransportSecuritySettings:
    """The SDK's Host/Origin checks for this server: loopback names, the bind address (when it
    is a specific one), and the configured ``allowed_hosts`` and ``allowed_origins``.

    A Host not allowed is answered 421, an Origin not allowed 403; a request without Origin
    (any client but a browser) passes.
    """
    hosts = _with_any_port(list(LOOPBACK_HOSTS))
    origins = _with_any_port(list(LOOPBACK_ORIGINS))
    if not is_loopback(server.host) and not _is_wildcard(server.host):
        bound = _host_entry(server.host)
        hosts += _with_any_port([bound])
        origins += _with_any_port([f"http://{bound}"])
    # Names are compared in lower case: requests' Host and Origin are lowered on arrival.
    hosts += _with_any_port([h.lower() for h in server.allowed_hosts])
    origins += _with_any_port([o.lower() for o in server.allowed_origins])
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class Access:
    """The access rules of one HTTP or SSE server.

    Args:
        settings: the server's settings (its bind address, ``auth``, allow-lists, data dir).
    """

    def __init__(self, settings: Settings) -> None:
        self.server = settings.server
        self.mode = settings.server.auth
        self.off_loopback = not is_loopback(settings.server.host)
        self.tokens = TokenStore(Path(settings.store.data_dir))
        self.security = transport_security(settings.server)

    def check(self) -> None:
        """Refuse to serve what would be open to others.

        Raises:
            SettingsError: off loopback without tokens, or on a wildcard address without
                ``allowed_hosts``; or the token file is unreadable. The message names the fix.
        """
        try:
            count = len(self.tokens.records())
        except TokenFileError as error:
            raise SettingsError(str(error)) from None
        host = self.server.host
        if self.off_loopback:
            if self.mode == "none" or count == 0:
                why = 'auth = "none"' if self.mode == "none" else "no token exists"
                raise SettingsError(
                    f"refusing to serve on {host} without authentication ({why}): anyone who"
                    " can reach the port could read and rewrite the memory. Create a token"
                    f" with `doxa token create --agent NAME --data-dir {self.tokens.path.parent}`"
                    ' and keep [server] auth = "auto" or "tokens" (DOXA_AUTH, --auth), or serve'
                    " on 127.0.0.1 (behind a reverse proxy for remote clients)"
                )
            if _is_wildcard(host) and not self.server.allowed_hosts:
                raise SettingsError(
                    f"serving on {host} needs the names clients use to reach it: set [server]"
                    ' allowed_hosts = ["doxa.example.com"] (DOXA_ALLOWED_HOSTS,'
                    " --allowed-hosts; a name allows any port, name:port one port). Requests"
                    " with another Host are refused (DNS-rebinding protection)"
                )
        if self.required() and count == 0:
            log.warning(
                "tokens are required and none is left (or none exists yet): every request is"
                " refused until one is created with `doxa token create --agent NAME`"
            )
        if self.required():
            log.info("bearer tokens required (%d in %s)", count, self.tokens.path)
        elif self.mode == "auto":
            log.info(
                "no bearer token required (loopback, no token yet); the first `doxa token"
                " create` requires them from the next request"
            )
        else:
            log.info('no bearer token required (auth = "none"): tokens are ignored')

    def required(self) -> bool:
        """Whether a request must present a valid token now."""
        if self.mode == "none":
            return False
        if self.mode == "tokens" or self.off_loopback:
            return True
        return self.tokens.in_use()

    def admitted_as(self, presented: str | None) -> str | None:
        """Who a request presenting the bearer token ``presented`` (None: no token) is let in
        as now: ``ANYONE`` when no token is required, the id of its token, or None when it is
        refused. An open SSE stream watches it change (``doxa.server.sse_streams``)."""
        if not self.required():
            return ANYONE
        record = self.tokens.verify(presented) if presented else None
        return None if record is None else record.id

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """``app`` behind the token check."""
        return BearerTokens(app, self)


def _names_lowered(scope: Scope) -> Scope:
    """The request with its Host and Origin in lower case, as the SDK's checks compare them
    with the allowed names: host names are case-insensitive (``DOXA.EXAMPLE.COM`` was
    refused where ``doxa.example.com`` was allowed)."""
    headers = [
        (name, value.lower() if name in (b"host", b"origin") else value)
        for name, value in scope["headers"]
    ]
    return {**scope, "headers": headers}


class BearerTokens:
    """ASGI middleware: a request must carry ``Authorization: Bearer <token>`` with a valid
    token whenever ``Access.required`` says so, or it is answered 401 with a
    ``WWW-Authenticate: Bearer`` challenge (RFC 6750).

    An accepted request carries the SDK's ``AuthenticatedUser`` in ``scope["user"]`` (the SDK
    binds each MCP session to it) and its access token in the SDK's context variable, where
    the tools read the caller (``doxa.tools.identity.caller``).
    """

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        scope = _names_lowered(scope)
        header = Headers(scope=scope).get("authorization")
        presented = bearer_token(scope)
        if not self.access.required():
            # auth = "none", or a loopback server with no token: as without this middleware.
            await self.app(scope, receive, send)
            return
        record = self.access.tokens.verify(presented) if presented else None
        if record is None:
            await _refuse(send, given=header is not None)
            return
        if self.access.tokens.due_for_use_note(record):
            await anyio.to_thread.run_sync(self.access.tokens.note_used, record.id)
        who = _caller(record)
        user = AuthenticatedUser(who.access_token())
        scope = {**scope, "user": user, "auth": AuthCredentials(who.scopes())}
        reset = auth_context_var.set(user)
        try:
            await self.app(scope, receive, send)
        finally:
            auth_context_var.reset(reset)


def bearer_token(scope: Scope) -> str | None:
    """The token of the request's ``Authorization: Bearer`` header, or None."""
    header = Headers(scope=scope).get("authorization")
    if header is None:
        return None
    scheme, _, credentials = header.partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else None


def _caller(record: TokenRecord) -> Caller:
    return Caller(
        agent=record.agent,
        token_id=record.id,
        can_write=not record.read_only,
        admin=record.admin,
    )


async def _refuse(send: Send, given: bool) -> None:
    """401 with a Bearer challenge; ``invalid_token`` when a credential was given (RFC 6750:
    a request without one gets the bare challenge)."""
    if given:
        description = "the bearer token is not valid (unknown or revoked)"
        challenge = (
            f'Bearer realm="{REALM}", error="invalid_token", error_description="{description}"'
        )
        body = {"error": "invalid_token", "error_description": description}
    else:
        challenge = f'Bearer realm="{REALM}"'
        body = {
            "error": "unauthorized",
            "error_description": "this server requires Authorization: Bearer <token>;"
            " create one with `doxa token create --agent NAME`",
        }
    payload = json.dumps(body).encode()
    await send_json(send, 401, payload, [(b"www-authenticate", challenge.encode())])
