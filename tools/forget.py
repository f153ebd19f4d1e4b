"""The ``forget`` tool: retract an observation (kept for audit) or purge it entirely."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from doxa.tools.answer import answer
from doxa.tools.context import call, context_of
from doxa.tools.identity import writer

if TYPE_CHECKING:
    from doxa.store.sharing import SharedMemory


def agent_of(ctx: Context[Any]) -> str:
    """This server's agent (``--agent``)."""
    return context_of(ctx).settings.agent


DESCRIPTION = """Stop recalling an observation that turned out wrong or must not be kept.
mode="retract" (default) keeps it for audit with its evidence and history; mode="purge"
deletes it, its beliefs and every link to it."""


class ForgetResult(BaseModel):
    """What was forgotten."""

    observation_id: str
    mode: str
    belief_ids: list[str] = Field(
        default_factory=list, description="beliefs in the observation, retracted or deleted"
    )
    already: bool = Field(False, description="true when it had been retracted before")
    kept_for: list[str] = Field(
        default_factory=list,
        description="agents that still believe it: only your belief in it was withdrawn",
    )


async def forget(
    ctx: Context[Any],
    id: Annotated[str, Field(description="observation id")],
    mode: Annotated[Literal["retract", "purge"], Field(description="retract or purge")] = "retract",
) -> Annotated[CallToolResult, ForgetResult]:
    """Retract or purge an observation."""
    who = writer("forget")
    if who is not None and not who.admin:
        # A token may take back what its own agent believes, not what others do.
        found = await call(ctx, lambda memory: memory.evidence(id))
        # A belief its agent withdrew still counts (a retried forget answers ``already``).
        believers = sorted({b["agent"] for b in found["believers"] + found["withdrawn"]})
        # A belief id names its observation here, but forget refuses it below, saying why.
        if found["belief_id"] is None and who.agent not in believers:
            held = ", ".join(repr(b) for b in believers) or "no agent"
            raise ToolError(
                f"id {id.strip()!r} is believed by {held}, not by {who.agent!r} (this"
                " connection's agent): only its believers, or a token created with --admin,"
                " may forget it"
            )
    # Who forgets: the token's agent, or this server's; when others believe it too, a
    # retract withdraws only that agent's belief. An admin token retracts the observation.
    forgetting = None if who is not None and who.admin else (who.agent if who else agent_of(ctx))

    def run(memory: SharedMemory) -> CallToolResult:
        # A token that is no admin's may not purge what other agents hold (a purge deletes
        # their beliefs too): the store checks under its write lock, so a share landing
        # meanwhile is seen.
        done = memory.forget(id, mode, agent=forgetting, alone=who is not None and not who.admin)
        return answer(
            ForgetResult(
                observation_id=done.observation_id,
                mode=done.mode,
                belief_ids=done.belief_ids,
                already=done.already,
                kept_for=done.kept_for,
            )
        )

    return await call(ctx, run)
