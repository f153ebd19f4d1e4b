"""``doxa export --markdown DIR``: the memory for people, one Markdown file per entity (a
topic, or a fact's subject or object, as ``doxa about`` knows them), with its facts (current,
replaced, ended, retracted, or beginning later, as recall tells them now) and a timeline of its
observations.

It reads an export file (``doxa.store.exporting``), so it needs no database of its own.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from doxa.store.drafts import predicate_key
from doxa.store.provenance import through_plans
from doxa.store.working_memory import topic_key


def read_tables(export: Path) -> dict[str, list[dict[str, Any]]]:
    """The lines of an export file by table (the header left out)."""
    tables: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with export.open(encoding="utf-8") as lines:
        next(lines)  # the header
        for text in lines:
            line = json.loads(text)
            tables[line["table"]].append(line)
    return tables


def moment(text: str) -> datetime:
    """A time of an export file (written with and without fractions of a second)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def superseders(tables: dict[str, list[dict[str, Any]]]) -> dict[str, list[str]]:
    """Per observation, the unretracted observations that supersede it, as recall names
    them: never a retracted one, nor one whose link a forget undid, and for a plan replaced
    before it began, what replaced it (``provenance.through_plans``)."""
    retracted = {o["id"] for o in tables["Observation"] if o.get("retracted_at")}
    starts = {
        o["id"]: moment(o["valid_from"]) if o.get("valid_from") else None
        for o in tables["Observation"]
    }
    standing = [
        {
            "newer": link["from"],
            "older": link["to"],
            "at": moment(link["at"]),
            "recorded_at": moment(link.get("known") or link["at"]),
        }
        for link in tables["SUPERSEDES"]
        if link["from"] not in retracted and not link.get("dropped")
    ]
    found: dict[str, list[str]] = defaultdict(list)
    for link in through_plans(standing, starts):
        found[link["older"]].append(link["newer"])
    return {oid: sorted(newer) for oid, newer in found.items()}


def holders(
    tables: dict[str, list[dict[str, Any]]], now: datetime
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per observation, the agents holding it at valid time ``now`` as recall names them,
    each once with the belief it holds it by, in the order of the export's ``HOLDS`` lines:
    by a belief not withdrawn, or
    by one a later fact of the agent withdrew (and the agent did not forget) while it holds,
    until the agent's next fact of the same subject and predicate begins, as its facts
    stand (``WorkingMemory.belief_end``): not where the fact that withdrew it began (told
    late, an earlier one ends it sooner; forgotten, the next one ends it)."""
    observations = {o["id"]: o for o in tables["Observation"]}
    beliefs = {b["id"]: b for b in tables["Belief"]}
    belief_of = {link["from"]: link["to"] for link in tables["OF"]}
    holding = [
        (link["from"], link["to"], belief_of[link["to"]])
        for link in tables["HOLDS"]
        if link["to"] in belief_of and link["to"] in beliefs
    ]
    held: set[tuple[str, str]] = set()  # (agent, observation): held by a belief not withdrawn
    later: set[tuple[str, str]] = set()  # held until a later fact of the agent
    for agent, belief, obs in holding:
        if not beliefs[belief].get("retracted_at"):
            held.add((agent, obs))
        elif beliefs[belief].get("held_until") and not beliefs[belief].get("forgotten_at"):
            later.add((agent, obs))
    facts: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for o in observations.values():
        if o.get("subject") and o.get("predicate") and not o.get("retracted_at"):
            facts[(topic_key(o["subject"]), predicate_key(o["predicate"]))].append(o)

    def start(o: dict[str, Any]) -> datetime:
        return moment(o.get("valid_from") or o["observed_at"])

    def holds_now(agent: str, obs: str) -> bool:
        """Whether the belief of ``agent`` held until its later fact holds ``obs`` now."""
        fact = observations.get(obs)
        if fact is None:
            return False
        if not fact.get("subject") or not fact.get("predicate"):
            return True  # no fact of the agent's can end it
        began, told = start(fact), fact.get("seq") or 0
        for other in facts[(topic_key(fact["subject"]), predicate_key(fact["predicate"]))]:
            at = start(other)
            if (
                other["id"] == obs
                or at > now
                or at < began
                or (at == began and (other.get("seq") or 0) < told)
                or (other.get("stated_until") and moment(other["stated_until"]) <= at)
            ):
                continue
            if (agent, other["id"]) in held or (agent, other["id"]) in later:
                return False  # a fact of the agent's own that has begun ended it
        return True

    found: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for agent, belief, obs in holding:
        taken = beliefs[belief]
        if (agent, obs) in held:
            if not taken.get("retracted_at"):  # the belief not withdrawn, where there are two
                found[obs][agent] = taken
        elif (agent, obs) in later and holds_now(agent, obs):
            found[obs].setdefault(agent, taken)
    return dict(found)


def withdrawn_from(tables: dict[str, list[dict[str, Any]]]) -> set[str]:
    """The observations some belief in which was withdrawn (by a forget, or a later fact of
    its agent): only theirs may show another confidence than their own."""
    withdrawn = {b["id"] for b in tables["Belief"] if b.get("retracted_at")}
    return {link["to"] for link in tables["OF"] if link["from"] in withdrawn}


def shown_confidence(
    observation: dict[str, Any], held: dict[str, dict[str, Any]], withdrawn: set[str]
) -> str:
    """The confidence recall shows for ``observation`` with no agent asked: its own, unless
    a belief in it was withdrawn (``withdrawn_from``); then that of the first belief (by
    ``since``; of beliefs taken together, one holding the observation's own confidence)
    among those holding it (``holders``), or its own when none does."""
    own = str(observation["confidence"])
    if observation["id"] not in withdrawn:
        return own
    recorded = observation.get("recorded_at") or observation["observed_at"]

    def began(belief: dict[str, Any]) -> tuple[datetime, bool]:
        mine = belief.get("confidence")
        return moment(belief.get("since") or recorded), mine is not None and str(mine) != own

    first = min(held.values(), key=began, default=None)
    if first is None or first.get("confidence") is None:
        return own
    return str(first["confidence"])


def fact_state(fact: dict[str, Any], replaced_by: list[str], now: datetime) -> str:
    """Where a fact stands at ``now``, as recall tells it: "retracted", "begins later",
    "replaced by <ids>" or "ended" once its end has passed, else "current"."""
    if fact.get("retracted_at"):
        return "retracted"
    if fact.get("valid_from") and moment(fact["valid_from"]) > now:
        return "begins later"
    if fact.get("valid_until") and moment(fact["valid_until"]) <= now:
        return f"replaced by {', '.join(replaced_by)}" if replaced_by else "ended"
    return "current"


#: Characters Markdown reads as marks (emphasis, links, code, html and entities, tables,
#: quotes, headings, escapes).
_MARKS = re.compile(r"([\\`*_\[\]<>|~#&])")
#: A line's start that Markdown would read as a list item of its own ("- ", "+ ", "2. ").
_LINE_START = re.compile(r"(?m)^(\s*)([-+]|\d+)([.)]?)(?=\s|$)")
#: A line that underlines the one before as a heading ("---", "==="), or is a rule.
_UNDERLINE = re.compile(r"(?m)^(\s*)([-=])(?=[-=\s]*$)")
#: A line's indentation: four spaces would make it code (swallowing the rest of the item).
_INDENT = re.compile(r"(?m)^[ \t]+")


def shown(text: str) -> str:
    """What a person or an agent wrote, shown as written: Markdown's marks escaped (a name
    "*Bob*" stayed emphasis, "[a](b)" a link), further lines indented into the list item
    they belong to (a second line began a paragraph of its own)."""
    # Every line break Python knows (CR, CR LF, VT, FF, U+0085, U+2028, U+2029…) made "\n"
    # first: the escaping below reads lines by "\n" alone, and the final join splits on all
    # of them, so a "- milk" after a CR became a list item, four spaces a code block.
    text = "\n".join(text.splitlines())
    escaped = _LINE_START.sub(_unlisted, _MARKS.sub(r"\\\1", text))
    escaped = _UNDERLINE.sub(r"\1\\\2", escaped)
    # Kept as no-break spaces: they show as the indent, and Markdown reads no code in them.
    escaped = _INDENT.sub(lambda m: "\u00a0" * len(m.group().expandtabs(4)), escaped)
    return "\n  ".join(escaped.splitlines()) if escaped.strip() else escaped


def _unlisted(start: re.Match[str]) -> str:
    indent, marker, dot = start.groups()
    if not dot:  # "- " or "+ ": the marker itself is escaped; a bare number is no item
        return indent + ("\\" + marker if not marker.isdigit() else marker)
    return f"{indent}{marker}\\{dot}"


#: The first line of the index a Markdown export writes: what marks a folder as one.
_INDEX_TITLE = "# doxa memory"
#: A page the index links to: ``- [Alice](alice.md) (3 observations)``.
_LINKED = re.compile(r"^- \[.*\]\(([\w.-]+\.md)\) \(\d+ observations?\)$")


def _clear_previous(target: Path) -> None:
    """Take away the pages an earlier export into ``target`` wrote (those its index lists),
    so none outlives what it tells of: a purged memory's page stayed, its text with it.
    Other files in the folder are left alone."""
    index = target / "index.md"
    try:
        lines = index.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return
    if not lines or lines[0] != _INDEX_TITLE:
        return  # not an index this export wrote
    for line in lines[1:]:
        if (linked := _LINKED.match(line)) is not None:
            (target / linked[1]).unlink(missing_ok=True)
    index.unlink()


#: The most bytes of a file name's stem: file systems allow 255 bytes a name (eCryptfs 143),
#: and a longer name (a URL as a fact's object, a topic in CJK) failed the whole export.
_STEM_BYTES = 120


def _file_name(name: str, taken: set[str]) -> str:
    """A file name for the page of ``name``, none of ``taken`` (to which it is added): the
    name lowercased, what is no word character, dot or dash made a dash; one too long for
    a file system cut, with a hash of the whole, so names that begin alike keep a page each."""
    stem = re.sub(r"[^\w.-]+", "-", name.strip().lower()).strip("-.") or "untitled"
    if len(whole := stem.encode()) > _STEM_BYTES:
        mark = hashlib.sha256(whole).hexdigest()[:10]
        # Cut at a character's boundary ("ignore" drops a character the cut split).
        cut = whole[: _STEM_BYTES - len(mark) - 1].decode("utf-8", "ignore").rstrip("-.")
        stem = f"{cut}-{mark}"
    candidate, n = stem, 1
    while candidate in taken:
        n += 1
        candidate = f"{stem}-{n}"
    taken.add(candidate)
    return candidate + ".md"


def _told(observation: dict[str, Any]) -> tuple[datetime, int, str]:
    """Where ``observation`` stands in a timeline: when observed, then in the order told."""
    return moment(observation["observed_at"]), observation.get("seq") or 0, observation["id"]


def write_markdown(export: Path, target: Path) -> int:
    """Write one Markdown file per entity of ``export`` (topic, fact subject or object) into
    ``target``, and an index; returns how many files were written (the index included)."""
    tables = read_tables(export)
    observations = {o["id"]: o for o in tables["Observation"]}
    now = datetime.now(UTC)
    believers = holders(tables, now)
    withdrawn = withdrawn_from(tables)
    superseded_by = superseders(tables)
    # One page per entity as ``about`` knows them: named case- and space-insensitively, a
    # leading article aside (Alice, ALICE and alice had a page each; "the user" and "User"
    # are one), titled by the name most used for it.
    about: dict[str, set[str]] = defaultdict(set)
    names: dict[str, dict[str, int]] = defaultdict(dict)

    def mention(name: str, observation: str) -> None:
        key = topic_key(name)
        about[key].add(observation)
        names[key][name] = names[key].get(name, 0) + 1

    for link in tables["MENTIONS"]:
        mention(link["to"], link["from"])
    for o in observations.values():
        for end in ("subject", "object"):  # both ends of a fact are entities
            if o.get(end):
                mention(o[end], o["id"])
    target.mkdir(parents=True, exist_ok=True)
    _clear_previous(target)
    taken: set[str] = {"index"}
    index = [_INDEX_TITLE, ""]
    for key in sorted(about):
        name = max(sorted(names[key]), key=names[key].__getitem__)
        # By time, then as told (a batch shares one time): by the time's text and no more,
        # a batch came in a set's order, another in each run, and "…00.5Z" before "…00Z".
        held = sorted((observations[i] for i in about[key]), key=_told)
        file = _file_name(name, taken)
        title = shown(" ".join(name.split()))  # a heading and a link are one line
        counted = f"{len(held)} observation{'' if len(held) == 1 else 's'}"
        index.append(f"- [{title}]({file}) ({counted})")
        page = [f"# {title}", ""]
        facts = [o for o in held if o.get("subject")]
        if facts:
            page += ["## Facts", ""]
            for o in facts:
                state = fact_state(o, superseded_by.get(o["id"], []), now)
                span = f"{o.get('valid_from') or '?'} to {o.get('valid_until') or 'now'}"
                if state == "begins later" and not o.get("valid_until"):
                    span = f"from {o['valid_from']}"
                elif (
                    o.get("valid_until")
                    and o.get("valid_from")
                    and (moment(o["valid_until"]) < moment(o["valid_from"]))
                ):
                    # Told with only an end already past, of a fact never held.
                    span = f"until {o['valid_until']}"
                said = o["predicate"].replace("_", " ")  # stored as a key, read as words
                fact = shown(f"{o['subject']} {said} {o['object']}")
                page.append(f"- {fact} ({span}; {state})")
            page.append("")
        page += ["## Timeline", ""]
        for o in held:
            holding = believers.get(o["id"], {})
            who = shown(", ".join(holding)) or "nobody"
            shown_at = shown_confidence(o, holding, withdrawn)
            notes = [f"confidence {shown_at}", f"believed by {who}"]
            if o.get("source"):
                notes.append(f"source {shown(o['source'])}")
            if o.get("retracted_at"):
                notes.append(f"retracted {o['retracted_at']}")
            text = shown(o["text"])
            page.append(f"- **{o['observed_at']}** {text} ({'; '.join(notes)}) `{o['id']}`")
        (target / file).write_text("\n".join(page) + "\n", encoding="utf-8")
    # Records and notes with no topic or fact name no entity: said, or a memory of records
    # wrote an index of nothing. Retracted ones aside, as recall leaves them out.
    placed = set().union(*about.values())
    unplaced = [i for i, o in observations.items() if i not in placed and not o.get("retracted_at")]
    if unplaced:
        one = len(unplaced) == 1
        index += [""] if len(index) > 2 else []  # after the pages' list, a line apart
        index.append(
            f"{len(unplaced)} observation{'' if one else 's'} name{'s' if one else ''} no topic"
            f" or fact, so no page shows {'it' if one else 'them'}; doxa recall --all lists"
            f" {'it' if one else 'them'}"
        )
    (target / "index.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    return len(about) + 1
