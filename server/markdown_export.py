"""``doxa export --markdown DIR``: the memory for people, one Markdown file per entity (a
topic, or a fact's subject or object, as ``doxa about`` knows them), with its facts (current
and replaced) and a timeline of its observations.

It reads an export file (``doxa.store.exporting``), so it needs no database of its own.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any


def read_tables(export: Path) -> dict[str, list[dict[str, Any]]]:
    """The lines of an export file by table (the header left out)."""
    tables: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with export.open(encoding="utf-8") as lines:
        next(lines)  # the header
        for text in lines:
            line = json.loads(text)
            tables[line["table"]].append(line)
    return tables


def _file_name(name: str, taken: set[str]) -> str:
    stem = re.sub(r"[^\w.-]+", "-", name.strip().lower()).strip("-.") or "untitled"
    candidate, n = stem, 1
    while candidate in taken:
        n += 1
        candidate = f"{stem}-{n}"
    taken.add(candidate)
    return candidate + ".md"


def write_markdown(export: Path, target: Path) -> int:
    """Write one Markdown file per entity of ``export`` (topic, fact subject or object) into
    ``target``, and an index; returns how many files were written (the index included)."""
    tables = read_tables(export)
    observations = {o["id"]: o for o in tables["Observation"]}
    believers: dict[str, list[str]] = defaultdict(list)
    belief_of = {link["from"]: link["to"] for link in tables["OF"]}
    for link in tables["HOLDS"]:
        if link["to"] in belief_of:
            believers[belief_of[link["to"]]].append(link["from"])
    superseded_by = {link["to"]: link["from"] for link in tables["SUPERSEDES"]}
    about: dict[str, set[str]] = defaultdict(set)
    for link in tables["MENTIONS"]:
        about[link["to"]].add(link["from"])
    for o in observations.values():
        for end in ("subject", "object"):  # both ends of a fact are entities
            if o.get(end):
                about[o[end]].add(o["id"])
    target.mkdir(parents=True, exist_ok=True)
    taken: set[str] = {"index"}
    index = ["# doxa memory", ""]
    for name in sorted(about, key=str.lower):
        held = sorted((observations[i] for i in about[name]), key=lambda o: o["observed_at"])
        file = _file_name(name, taken)
        index.append(f"- [{name}]({file}) ({len(held)} observations)")
        page = [f"# {name}", ""]
        facts = [o for o in held if o.get("subject")]
        if facts:
            page += ["## Facts", ""]
            for o in facts:
                state = "retracted" if o.get("retracted_at") else "current"
                if o["id"] in superseded_by:
                    state = f"replaced by {superseded_by[o['id']]}"
                span = f"{o.get('valid_from') or '?'} to {o.get('valid_until') or 'now'}"
                said = o["predicate"].replace("_", " ")  # stored as a key, read as words
                page.append(f"- {o['subject']} {said} {o['object']} ({span}; {state})")
            page.append("")
        page += ["## Timeline", ""]
        for o in held:
            who = ", ".join(believers.get(o["id"], [])) or "nobody"
            notes = [f"confidence {o['confidence']}", f"believed by {who}"]
            if o.get("source"):
                notes.append(f"source {o['source']}")
            if o.get("retracted_at"):
                notes.append(f"retracted {o['retracted_at']}")
            page.append(f"- **{o['observed_at']}** {o['text']} ({'; '.join(notes)}) `{o['id']}`")
        (target / file).write_text("\n".join(page) + "\n", encoding="utf-8")
    (target / "index.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    return len(about) + 1
