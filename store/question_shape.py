"""What shape of answer a question asks for, from its words alone (no model).

``asks_for_many``: the question wants several things, each perhaps said at another time
("Which cities has John been to?", "How many games has he won?", "What are the names of his
children?", "What did both of them paint?", "What types of yoga has she practised?", "Where
has Melanie camped?"). Its answer is spread over turns of different episodes, so ranking
spreads its first results over episodes (``ranking``, weight ``spread``).
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z']+")
#: Words that name several things however the rest reads.
_MANY = frozenset({"both", "names", "list", "all", "every", "ways"})
#: After what/which: words that lead to the thing asked about ("what kind of books").
_LEADING = frozenset({"kind", "kinds", "type", "types", "sort", "sorts", "of", "other"})
#: Right after what/which, several kinds of anything, even of a thing counted as a whole
#: ("what types of pottery"); "kind of" asks for one, and only a plural after it asks for more.
_KINDS = frozenset({"kinds", "types", "sorts"})
#: Verbs and words ending in s that are not plural nouns.
_NOT_PLURAL = frozenset(
    {"does", "is", "was", "has", "his", "its", "this", "us", "as", "yes", "always", "news"}
)
#: Plural nouns without the s ("What people has Maria met?").
_IRREGULAR_PLURALS = frozenset({"people", "children", "men", "women", "feet", "teeth", "mice"})
#: Where the thing asked about ends: the question's verb.
_VERBS = frozenset({"did", "does", "do", "is", "was", "are", "were", "has", "have", "had"})


def asks_for_many(query: str) -> bool:
    """Whether ``query`` asks for several things: "how many", "both", "names", what/which
    followed by a plural noun before its verb ("What activities does Melanie do?"),
    what/which kinds (types, sorts) of anything, or where in the present perfect ("Where
    has she lived?")."""
    words = _WORD.findall(query.casefold())
    if not words:
        return False
    if _MANY.intersection(words) or "how many" in " ".join(words):
        return True
    if words[0] == "where" and len(words) > 2 and words[1] in ("has", "have"):
        # The present perfect asks where up to now: the places of a life so far.
        return True
    if words[0] not in ("what", "which"):
        return False
    if len(words) > 2 and words[1] in _KINDS and words[2] == "of":
        return True
    for word in words[1:5]:
        if word in _VERBS:
            return False
        if word in _LEADING:
            continue
        if word in _IRREGULAR_PLURALS:
            return True
        if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
            return word not in _NOT_PLURAL
    return False
