"""What makes a text say what it says: its details, the words an embedding barely weighs.

"Invoice 98 total is 3.98" and "Invoice 99 total is 3.98" are 0.95 alike to the bundled
model, "… is broken" and "… is not broken" 0.97, "on Monday" and "on Tuesday" 0.96: a cosine
alone takes them for the same thing. Their details tell them apart: the words with a digit,
names (capitalised words; a sentence's first only when it is no common opener such as "The",
"What" or "Find"), days (weekdays, today, yesterday, tomorrow, tonight, "last week" and the
like), months, seasons and negations.
Two texts agree when each one's details are all words of the other, so a rewording agrees
("needs Python 3.11", "requires python 3.11") and another invoice, day or person does not;
they differ when each has a detail the other lacks, as another invoice does, while "ferry
timetable" and "ferry timetable in winter" only narrow. Pruning merges only near-duplicates
that agree and whose copy says no word the one kept lacks (``says_no_more``: merging one that
says more, or says it in another word, would lose it); a judged query lends to a new one as
the same question unless they differ.
"""

from __future__ import annotations

import re
import sys

from doxa.store.timewords import MONTHS, SEASONS

#: Words that make a memory say what it says whatever their case (see the module docstring).
_DETAIL_WORDS = frozenset(
    {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
    | {name for name in MONTHS if len(name) > 3}  # "may", "mar", "dec" are other words too
    | set(SEASONS)
    | {"today", "yesterday", "tomorrow", "tonight"}
    | {"not", "no", "never", "none", "nothing", "nobody", "nowhere", "neither", "nor"}
    | {"without", "cannot", "unless"}
)
#: A time relative to now in two words ("last week", "this morning"): one detail, and one
#: word of the text, so "lunch last week" agrees with "what was lunch last week?" only.
#: After "the" it is no time relative to now ("the last week of June").
_RELATIVE = re.compile(
    r"(?<!the )\b(?:last|this|next|past|coming)\s+"
    r"(?:week|weekend|month|year|night|morning|afternoon|evening)\b",
    re.IGNORECASE,
)
#: Words that open sentences capitalised without being names: function words, question
#: words and the commands queries start with. Any other capitalised first word is read as a
#: name ("Alice ordered what?"); a noun taken so ("Printer broken?") only narrows, as a
#: detail the other text also holds agrees.
_OPENER_WORDS = (
    "a an the this that these those there here some any all each every both either"
    " neither another other such many much more most few several what when where which"
    " who whom whose why how whether is are was were am be been being do does did has"
    " have had can could will would shall should may might must i you he she it we they"
    " me him her us them my your his its our their mine yours ours theirs and but or so"
    " yet if then because since after before while as at in on of for to from by with"
    " about into onto over under between during until till through without within per"
    " via also just now still please yes ok okay hi hello hey well maybe perhaps"
    " actually again already always usually sometimes often only even really very once"
    " find show list tell give get remember recall note check look search describe"
    " explain summarize summarise compare name let make see say said according"
)
_OPENERS = frozenset(_OPENER_WORDS.split())
#: A word: letters and digits, with the marks inside one kept ("isn't", "3.11", "a/b").
_WORD = re.compile(r"\w(?:[\w'\u2019./:-]*\w)?")
_SENTENCE_END = re.compile(r"[.!?]\s")
#: Marks inside a word that make it a path, a flag, a host, an identifier or a version
#: ("src/config/loader.py", "no-cache", "api.example.com", "refresh_token"): such a word
#: names one thing, and the model barely tells it from its neighbours.
_MARKED = re.compile(r"[./:_-]")
#: A text's words, with comparison marks as words of their own (``words_in_order``).
_TOKEN = re.compile(r"\w(?:[\w'\u2019./:-]*\w)?|[<>=!~]=|[<>]")
#: The comparison marks ``_TOKEN`` reads.
_COMPARING = frozenset({"<", ">", "<=", ">=", "==", "!=", "~="})
#: Prefixes that turn a word into its opposite ("safe", "unsafe").
_NEGATING = ("un", "non", "in", "im", "ir", "il", "dis")
#: A text's details and its words, casefolded (``details``).
Details = tuple[frozenset[str], frozenset[str]]


def details(text: str) -> Details:
    """(details, words) of a text, casefolded: its details are its words with a digit, its
    capitalised words but "I" and a sentence's first that is a common opener (``_OPENERS``;
    the others are names), two-word times relative to now ("last week"), and
    ``_DETAIL_WORDS`` and negations ("isn't") whatever their case; its words are all of
    them, those times included."""
    found: set[str] = set()
    words: set[str] = set()
    for sentence in _SENTENCE_END.split(text):
        for i, match in enumerate(_WORD.finditer(sentence)):
            word = match[0]
            # Interned: the judged queries' details, kept for every one, share their words.
            folded = sys.intern(word.casefold())
            words.add(folded)
            if (
                any(c.isdigit() for c in word)
                or _MARKED.search(word) is not None
                or (word[0].isupper() and folded != "i" and (i > 0 or name_first(folded)))
                or folded in _DETAIL_WORDS
                or folded.replace("\u2019", "'").endswith("n't")
            ):
                found.add(folded)
    for match in _RELATIVE.finditer(text):
        relative = sys.intern(" ".join(match[0].casefold().split()))
        found.add(relative)
        words.add(relative)
    return frozenset(found), frozenset(words)


#: Where a line of its own begins for ``values``: a sentence's end, a colon or semicolon
#: ("Caroline: Thanks, Mel!" opens with a speaker and a greeting, neither a value), a line.
_LINE_START = re.compile(r"[.!?:;]\s|\n")
#: Marks inside a word that make it a value (``values``): a version, a time, a path, a host,
#: an identifier; not the hyphen of a compound ("self-acceptance", "fire-fighting"), which
#: names no one thing.
_VALUE_MARK = re.compile(r"[./:_]")
#: A possessive's ending: "Lisbon's" names Lisbon.
_POSSESSIVE = re.compile(r"['\u2019]s$")
#: The day, month and season names ``values`` counts whatever their place.
_CALENDAR = frozenset(
    {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
    | {name for name in MONTHS if len(name) > 3}
    | set(SEASONS)
)


def values(text: str) -> Details:
    """(values, words) of a text, casefolded: its values are the details that name what a
    claim holds, numbers and names: its words with a digit or a mark inside ("3.12",
    "10:00", "acme/widgets"; not a hyphen), its capitalised words but a sentence's or a
    line's first ("Bumped", "Thanks", a speaker's name before a colon) and one it speaks to
    ("Thanks, Mel!"), and day, month and season names.
    Not the negations and times relative to now of ``details``: "yesterday" in March and
    in June are no other value. A possessive is its name ("Lisbon's" is "lisbon"). Its words
    are ``details``' words, and each possessive's name."""
    found: set[str] = set()
    for line in _LINE_START.split(text):
        previous = 0
        for i, match in enumerate(_WORD.finditer(line)):
            word = match[0]
            folded = _POSSESSIVE.sub("", word.casefold())
            named = i > 0 and word[0].isupper() and folded != "i" and name_first(folded)
            # One spoken to: the line's second word, or its third after a comma ("Hey Mel!",
            # "Thanks, Melanie.", "No problem, Joanna!"): a chat's turns name the other
            # speaker by one name or another, and say no other value by it.
            addressed = i == 1 or (i == 2 and "," in line[previous : match.start()])
            previous = match.end()
            if (
                any(c.isdigit() for c in word)
                or _VALUE_MARK.search(word) is not None
                or (named and not addressed)
                or folded in _CALENDAR
            ):
                found.add(sys.intern(folded))
    words = details(text)[1]
    return frozenset(found), words | {_POSSESSIVE.sub("", w) for w in words}


def name_first(folded: str) -> bool:
    """Whether a capitalised word opening a sentence is read as a name: no common opener,
    nor one's contraction or possessive ("What's", "It's", "I'm")."""
    head = re.split(r"['\u2019]", folded, maxsplit=1)[0]
    return folded not in _OPENERS and head not in _OPENERS


#: Words that make another claim of a text when its twin lacks them: directions, sides,
#: comparisons, opposites, tenses. The bundled model finds "Store the keys upstairs." and
#: "… downstairs." 0.95 alike or more, and "after Friday", "before Friday"; "older",
#: "younger"; "The door code was 4512.", "… is 4512." no less.
_CONTRAST_WORDS = (
    "before after earlier later sooner up down upstairs downstairs above below over"
    " under inside outside in out on off left right north south east west front back"
    " top bottom more less fewer most least older younger oldest youngest bigger"
    " smaller larger higher lower longer shorter faster slower better worse best worst"
    " cheaper dearer first last open opened closed close start started stop stopped"
    " begin began end ended buy bought sell sold win won lose lost increase increased"
    " decrease decreased add added remove removed accept accepted reject rejected allow"
    " allowed forbid forbidden true false yes always sometimes often rarely all some"
    " only every was is were are will would had has have did does do used"
)
_CONTRASTS = frozenset(_CONTRAST_WORDS.split())


def words_in_order(text: str) -> tuple[str, ...]:
    """A text's words, casefolded, in their order (``details``' words, repeats kept), and
    its comparison marks (``<``, ``>=``, ``!=``…) among them: "numpy<2" is not "numpy>=2"."""
    return tuple(sys.intern(m[0].casefold()) for m in _TOKEN.finditer(text))


def same_way_round(first: tuple[str, ...], second: tuple[str, ...], found: Details) -> bool:
    """Whether two texts that ``agree`` (``first`` and ``second`` their ``words_in_order``,
    ``found`` the first's ``details``) also say it the same way round: neither has a
    contrast word the other lacks ("upstairs", "was"), their names and other details come
    in the same order ("Alice owes Bob" is not "Bob owes Alice"), neither negates a word of
    the other ("unsafe", "safe"), their comparison marks are the same ("numpy<2",
    "numpy>=2"), and one is not the other's words reordered ("the red car more than the
    blue car"). Strict on purpose: it decides what a prune merges away, and two that say it
    alike but not so stay two."""
    mine, theirs = set(first), set(second)
    if (mine ^ theirs) & _CONTRASTS:
        return False
    # Against the other's own words only: "inform" beside a "form" both hold is no "form"
    # negated.
    if any(
        word.startswith(prefix) and word[len(prefix) :] in other
        for one, other in ((mine - theirs, theirs - mine), (theirs - mine, mine - theirs))
        for word in one
        for prefix in _NEGATING
    ):
        return False  # "unsafe" where the other says "safe"
    if [w for w in first if w in _COMPARING] != [w for w in second if w in _COMPARING]:
        return False
    if first != second and sorted(first) == sorted(second):
        return False

    def named(words: tuple[str, ...]) -> list[str]:
        return list(dict.fromkeys(w for w in words if w in found[0]))

    return named(first) == named(second)


#: Words a copy may lack or hold beside its original and still say the same: articles, "it",
#: "please" and such.
_FILLERS = frozenset(
    [
        "a",
        "an",
        "the",
        "it",
        "its",
        "this",
        "that",
        "please",
        "just",
        "really",
        "also",
        "so",
        "then",
        "very",
    ]
)


def says_no_more(twin: tuple[str, ...], keeper: tuple[str, ...]) -> bool:
    """Whether ``twin`` (its ``words_in_order``) says no word ``keeper`` lacks but fillers
    ("The printer on floor 2 is broken!" says no more than "The printer on floor 2 is
    broken."). A word said instead of another is another claim as often as not: the bundled
    model finds "Caching increases the memory usage." and "… decreases …" 0.95 alike or
    more, "raises"/"lowers", "imports"/"exports", "minimum"/"maximum" too, and no list of
    opposites is ever whole."""
    return set(twin) - _FILLERS <= set(keeper)


def agree(first: Details, second: Details) -> bool:
    """Whether two texts' details (``details``) are each all words of the other."""
    return first[0] <= second[1] and second[0] <= first[1]


def differ(first: Details, second: Details) -> bool:
    """Whether each of two texts has a detail (``details``) that is no word of the other."""
    return not first[0] <= second[1] and not second[0] <= first[1]
