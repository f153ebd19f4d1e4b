"""MCP prompts, kept as text files beside this module."""

from __future__ import annotations

from importlib import resources


def prompt_text(name: str) -> str:
    """The text of ``<name>.md`` in this package."""
    return resources.files(__name__).joinpath(f"{name}.md").read_text(encoding="utf-8")
