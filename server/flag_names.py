"""A tool's refusal told in a command's words: the flags it took, not the tool's arguments.

The tools name their arguments as a model sends them (``other_agent``, ``fact.valid_from``,
``topics[0]``, ``unsupported=true``); a person at ``doxa conflicts`` typed ``--other-agent``.
The names are translated where they are unmistakably names, never an English word that
happens to be one (``unsupported beliefs``, ``where``, ``limit`` in prose stay):

- the field a clause is about, at the start of the message or of a clause after ``; ``
  (``known_at must be …``, ``agent: …``, ``agent is required …``);
- a name with an underscore, a dot or an index, anywhere (``other_agent``, ``fact.valid_from``,
  ``topics[1]``): no word of prose is written so;
- what to leave out (``or leave agent out``);
- a boolean set as an argument (``unsupported=true``);
- a parenthesised list of names and nothing else (``(agent, topics, subject)``).

Only the command's own flags are named; any other name (a field inside ``--memories`` or
``--record`` JSON, an id's kind such as ``observation_id``) is left as the tool said it.
"""

from __future__ import annotations

import argparse
import re

#: Flags of each command by the tool argument (dest) they give, learned from its parser.
_FLAGS: dict[str, dict[str, str]] = {}
#: The arguments of each command given by a repeated flag: only their ``[i]`` is the i-th
#: flag (``memories[2]`` is the 3rd memory in the one ``--memories`` file).
_REPEATED: dict[str, set[str]] = {}

#: ``remember --fact SUBJECT PREDICATE OBJECT [--valid-from …]`` gives one ``fact`` argument;
#: ``--supports BELIEF[=WEIGHT]`` one object per flag.
_NESTED = {
    "remember": {
        "fact.subject": "--fact SUBJECT",
        "fact.predicate": "--fact PREDICATE",
        "fact.object": "--fact OBJECT",
        "fact.valid_from": "--valid-from",
        "fact.valid_until": "--valid-until",
        "fact.cardinality": "--cardinality",
        "supports.belief_id": "--supports BELIEF",
        "supports.weight": "--supports WEIGHT",
    }
}

_NAME = r"[a-z][a-z_]*(?:\[\d+\])?(?:\.[a-z_]+)*"
#: A name not inside a longer word, path, flag or quoted value.
_TOKEN = re.compile(rf"(?<![\w.\[\]'\"-])({_NAME})(=true)?(?![\w\['\"-])")
_LIST = re.compile(r"\(([a-z][a-z_]*(?:, [a-z][a-z_]*)+)\)")


def learn(command: str, parser: argparse.ArgumentParser) -> None:
    """Record the flags of ``command`` (its parser built): dest -> the flag's long name."""
    flags = {
        action.dest: action.option_strings[0]
        for action in parser._actions  # argparse keeps them only there
        if action.option_strings and action.option_strings[0].startswith("--")
    }
    _FLAGS[command] = {**flags, **_NESTED.get(command, {})}
    _REPEATED[command] = {
        action.dest
        for action in parser._actions
        if isinstance(action, argparse._AppendAction)  # argparse names no public kind
    }


def flagged(command: str, message: str) -> str:
    """``message`` (a tool's refusal) with the argument names it names as ``command``'s flags."""
    flags = _FLAGS.get(command, {})

    def listed(match: re.Match[str]) -> str:
        names = match.group(1).split(", ")
        if not all(n in flags for n in names):
            return match.group(0)
        return "(" + ", ".join(flags[n] for n in names) + ")"

    def token(match: re.Match[str]) -> str:
        path, set_true = match.group(1), match.group(2)
        index = re.search(r"\[(\d+)\]", path)
        key = re.sub(r"\[\d+\]", "", path)
        flag = flags.get(key)
        if flag is None or (index and key.split(".")[0] not in _REPEATED.get(command, ())):
            return match.group(0)
        start = match.start()
        at_clause = start == 0 or message[:start].endswith("; ")
        left_out = message[:start].endswith("leave ") and message[match.end() :].startswith(" out")
        if not (set_true or at_clause or left_out or index or "_" in key or "." in key):
            return match.group(0)  # a word of prose
        return flag if index is None else f"the {_ordinal(int(index.group(1)) + 1)} {flag}"

    return _TOKEN.sub(token, _LIST.sub(listed, message))


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
