"""MCP prompts, kept as text files beside this module."""

from __future__ import annotations

import re
from importlib import resources


def prompt_text(name: str, **values: str) -> str:
    """The text of ``<name>.md`` in this package, each ``{key}`` of ``values`` replaced by
    its value in one pass (a value holding ``{another}`` stays as it was given)."""
    text = resources.files(__name__).joinpath(f"{name}.md").read_text(encoding="utf-8")
    if not values:
        return text
    slots = re.compile("|".join(re.escape("{" + key + "}") for key in values))
    return slots.sub(lambda found: values[found.group(0)[1:-1]], text)
