"""Tool answers as a model reads them: compact JSON, with nothing said that says nothing.

Models pay for every character of a result. An answer is the tool's result model dumped to
JSON without indentation and without the fields that hold their default (``null``, an empty
list, a flag in its usual state): the published output schema does not require those, so the
structured content (the same dict) validates, and a field that is there says something. The
text content is that dict as compact JSON, so a client that shows either shows it once.

Building the answer is part of the call's work: tools build it on the worker thread that
ran the store call (``doxa.tools.context.call``), so a large answer (a thousand conflicts)
never stalls the event loop that every other session's calls go through.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel


def answer(result: BaseModel) -> CallToolResult:
    """``result`` without its defaulted fields, as structured content and as compact text."""
    data = lean(result)
    return CallToolResult(
        content=[TextContent(type="text", text=compact(data))], structured_content=data
    )


def lean(result: BaseModel) -> dict[str, Any]:
    """``result`` as JSON data without the fields that hold their default."""
    return result.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def compact(data: Any) -> str:
    """``data`` as JSON without indentation or spaces."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
