"""The ``feedback`` tool: judge a recall's results so future recalls rank better."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from doxa.tools.context import call
from doxa.tools.identity import writer

DESCRIPTION = """Tell the memory which results of a recall helped and which did not.

Call it after using a recall's results: `accepted` are observation ids that answered the
question, `rejected` ones that were wrong or off-topic. Every result of that recall counts an
impression, accepted ones a hit, and results accepted together are linked; on similar future
queries accepted results rank higher and rejected ones lower. Each recall can be judged once.

Returns {recall_id, accepted, rejected, impressions}.
Example: feedback(recall_id="rec_1f2e…", accepted=["obs_a1…"], rejected=["obs_b2…"])"""


class FeedbackResult(BaseModel):
    """What was recorded."""

    recall_id: str
    accepted: list[str]
    rejected: list[str]
    impressions: int = Field(description="results of the recall that were counted as shown")


async def feedback(
    ctx: Context[Any],
    recall_id: Annotated[str, Field(description="the recall_id a recall returned")],
    accepted: Annotated[list[str], Field(description="observation ids that helped")] = [],  # noqa: B006
    rejected: Annotated[list[str], Field(description="observation ids that did not")] = [],  # noqa: B006
) -> FeedbackResult:
    """Record a judgement on a recall."""
    writer("feedback")  # judging changes the ranking every agent gets: not for read-only
    judged = await call(ctx, lambda memory: memory.feedback(recall_id, accepted, rejected))
    return FeedbackResult(
        recall_id=judged.recall_id,
        accepted=judged.accepted,
        rejected=judged.rejected,
        impressions=judged.impressions,
    )
