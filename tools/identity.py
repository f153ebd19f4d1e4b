"""Who is calling: the agent a bearer token was created for, and what the token allows.

Over HTTP and SSE with tokens (``doxa.server.access``), every request carries a token, and the
identity it names is the only one the call may write as: a token for ``scout`` cannot remember,
judge or forget as ``driver``. Reads are not limited: any agent may look at what any other
believes. Without a token (stdio, or a loopback server with no tokens) there is no caller and
nothing here restricts anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver.exceptions import ToolError

from doxa.store.drafts import name
from doxa.store.errors import InvalidInput

#: The scopes a token grants, as the access token carries them.
READ = "doxa:read"
WRITE = "doxa:write"
ADMIN = "doxa:admin"


@dataclass(frozen=True)
class Caller:
    """The identity of an authenticated request.

    Attributes:
        agent: the agent it acts as.
        token_id: the token's id (never its secret).
        can_write: may remember, judge recalls and forget.
        admin: may forget observations other agents believe.
    """

    agent: str
    token_id: str
    can_write: bool
    admin: bool

    def scopes(self) -> list[str]:
        """The scopes of an access token for this caller."""
        return [READ] + ([WRITE] if self.can_write else []) + ([ADMIN] if self.admin else [])

    def access_token(self) -> AccessToken:
        """The SDK's access token for this caller (its client id is the token id, so an MCP
        session opened with one token cannot be used with another)."""
        return AccessToken(
            token=self.token_id, client_id=self.token_id, scopes=self.scopes(), subject=self.agent
        )


def caller() -> Caller | None:
    """The caller of the current request, or None when it carries no token."""
    token = get_access_token()
    if token is None or token.subject is None:
        return None
    return Caller(
        agent=token.subject,
        token_id=token.client_id,
        can_write=WRITE in token.scopes,
        admin=ADMIN in token.scopes,
    )


def writer(tool: str) -> Caller | None:
    """The caller, if any, after checking that it may write.

    Raises:
        ToolError: the token is read-only.
    """
    who = caller()
    if who is not None and not who.can_write:
        raise ToolError(
            f"{tool}: this connection's token (agent {who.agent!r}) is read-only; it may"
            " recall, find_conflicts, cite_evidence, about and read resources. Use a token"
            " created without --read-only to change the memory"
        )
    return who


def own_agent(who: Caller, value: str | None, field: str) -> None:
    """Check that ``value``, an agent a write names (None: not named), is the caller's own.

    Raises:
        ToolError: it names another agent (the message names ``field``), or is not a name.
    """
    try:
        named = name(value, field, required=False)
    except InvalidInput as error:
        raise ToolError(str(error)) from None
    if named is not None and named != who.agent:
        raise ToolError(
            f"{field} is {named!r}, but this connection is authenticated as agent"
            f" {who.agent!r} and can write only as {who.agent!r}; leave {field} out (it"
            f" defaults to {who.agent!r}) or connect with a token for {named!r}"
        )
