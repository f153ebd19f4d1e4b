"""Plain notes that may update one another.

A fact (subject, predicate, object) supersedes the older facts of its subject and predicate;
a plain note never did. In a memory holding "Python 3.12 is the minimum supported version"
(told in March) and "Bumped the minimum Python to 3.13" (told in June), a recall of "What is
the minimum Python version?" ranked March's note above June's, and nothing said that the two
disagree. A later note ``may_update`` an earlier one when

- the two are alike in meaning: a cosine of at least ``update_alike`` (``[store.ranking]``;
  how it was chosen is told there), or ``update_alike_strict`` for a ``STRICT`` shape (a new
  holder of the earlier's post, naming the holder it replaced or not, an ending naming its
  thing alone), which the model finds less alike;
- the later one says that something changed, in one of three ways (``may_update``): it
  ends what the earlier told (``_ENDED``: "no longer", "stopped", "cancelled", "scrapped",
  "closed for good") and names one of its values (``details.values``: numbers and names;
  "The café no longer closes on Mondays"; a day only with its subject in the earlier's
  words, not "The Monday pottery studio") or its thing in its words alone ("The yoga class
  was cancelled" after "Yoga class is on Thursdays at 6pm"; "for good", "service" are no
  other thing); or a verb of change (``_CHANGED``: "changed", "moved", "replaced", "took
  over", "joined Globex", "raised to"…) comes before a value the earlier lacks, or after a
  new holder opening the sentence (what it changed to: "The on-call lead changed from Priya
  to Daniel", which repeats the old value; "Ben took over the team from Nora"; "Irene has
  taken over as club treasurer" after "Paul is the club treasurer", naming no value); or
  each says a value that is no word of the other and the later says "now", "became",
  "updated" or "new" in a sentence naming a word of the earlier ("New office wifi
  password"; not "The store now opens at 9am" after "The film screening starts at 9pm"),
  or a new holder "is now" what the earlier's was or ran ("Marco is now in charge of the
  front desk" after "Dana runs the front desk"; "Tobias is now the rowing crew's coach",
  or "the new coach", or "the rowing crew's new coach", after "Siobhan coaches the rowing
  crew", a verb of holding's noun),
  a post told before its holder too ("Marco is now team lead" after "The team lead is
  Dana"; not "Marco is now in charge of the venue" after "The venue is Lisbon"), a holder
  named after its new post ("The choir has a new conductor: Ilse"), a day, a time or a
  place the earlier names beside its holder aside ("… the Saturday calligraphy class"),
  and not one holding it beside the earlier's ("also", "too", "a team lead").
  Not when the change is another person's ("Sara's son upgraded to …"), the earlier's
  holder replaced in another post, another kind of the earlier's thing a verb of change
  acts on ("Upgraded our mobile plan" after "Our broadband plan is 100 Mbps"), or the
  earlier counts a thing ("The cluster has 3
  nodes") and the later names another or a version alone ("… upgraded to Kubernetes
  1.30", "… to 1.30"; a decimal after "raised" or "went up" is the count: "Raised the
  pump's flow to 32.5", and one told as the earlier told its measure: "The tank now holds
  45.5" after "The tank holds 40 litres", or "at" or "set to" it naming that thing alone:
  "The tank is now at 45.5").
  So a note and its paraphrase, or a note and one that only adds to it, are no update, and
  two invoices, two trips or two sprint goals, as alike and as different, say no change.
  Questions and sentences saying the old still holds or a change was not made ("still",
  "after all", "didn't", "won't") tell none (``told``);
- it was observed later, and both are plain notes: not facts (they supersede, and recall
  names that) nor records (each record of a type is alike to the others and holds other
  values).

``later_notes`` finds them for a recall's results among the rows the recall allows, and
``newer_first`` places each later note above the note it may update. The caller holds the
working memory's read lock.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from doxa.store.details import Details, name_first, values, words_in_order
from doxa.store.ranking import Ranked
from doxa.store.timewords import MONTHS, SEASONS
from doxa.store.values import micros
from doxa.store.working_memory import BoolArray, WorkingMemory

#: At most this many later notes are named on one result, the newest first.
MOST_LATER = 3

#: Sentences that tell no change whatever words of one they hold: a question ("Should we
#: move the standup to 10:00?"), one saying the old still holds ("still", "after all", "as
#: before") and a change not made ("didn't", "won't", "never").
#: A sentence ends at a mark before a space or a line's end ("Fly.io" is one word).
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n")
_KEPT = re.compile(
    r"\b(?:still|after all|as before|as usual|didn't|did not|won't|will not"
    r"|wasn't|was not|weren't|were not|not going to|never)\b",
    re.IGNORECASE,
)

#: Words that say a thing the earlier note told has ended: the later need name no other
#: value ("The café no longer closes on Mondays", "The v1 API is deprecated").
_ENDED = re.compile(
    r"\b(?:no longer|anymore|any more|stopped(?! by\b)|discontinued|deprecated|retired"
    r"|cancell?ed|stepped down|shut down|closed down|scrapped|axed"
    r"|(?:closed|shut) (?:for good|permanently))\b",
    re.IGNORECASE,
)
#: Verbs of change in the past tense ("moved", "raised", "took over"), a few that say it
#: only with what follows ("went up", "cut to", "turned 8"), "instead", and "joined" before
#: a name ("joined Globex"; not "joined a pottery class"), and "succeeded" before a name
#: ("succeeded Professor Haldane"; not "succeeded at"): the later note need only name a
#: value the earlier lacks ("changed from Priya to Daniel" repeats Priya).
_CHANGED = re.compile(
    r"\b(?:instead|changed|moved|switched|raised|lowered|increased|decreased|reduced|bumped"
    r"|upgraded|downgraded|replaced|renamed|rescheduled|postponed|delayed|slipped|extended"
    r"|shortened|renewed|grew|shrank|scaled|relocated|migrated|revised|adjusted|reassigned"
    r"|promoted|transferred|took over|taken over|takes over|handed (?:\w+ ){0,4}over"
    r"|dropped(?! (?:off|by|in|out|me|us|him|her|them)\b)"
    r"|(?:went|gone|goes|go) (?:up|down)"
    r"|(?:fell|cut|improved|rose|jumped|pushed|down) to|pushed back|turned \d+"
    r")\b"
    r"|\bjoined (?=(?-i:[A-Z]))"
    r"|\bsucceed(?:s|ed)\b(?= (?-i:[A-Z]))",
    re.IGNORECASE,
)
#: Words that say a change only beside values of both notes ("now", "updated", "became",
#: "set to", "going forward"): "now" not after "for", "right", "just", "by" or "until"
#: ("bye for now"). Alone they as often open a new side of the subject ("The café now
#: serves oat milk").
_NOW = re.compile(
    r"\b(?:from now on|going forward|henceforth|updated|became|set to"
    r"|(?<!\bfor )(?<!\bright )(?<!\bjust )(?<!\bby )(?<!\buntil )now)\b",
    re.IGNORECASE,
)
#: Words an ending may say beside the thing it ends, naming no other: for how long ("for
#: good", "permanently"), a thing's service or its running, when ("last month"). "The
#: farmers market shut down for good" ends the farmers market.
_ENDING_WORDING = (
    "good permanently altogether indefinitely entirely completely officially service services"
    " running happening operating last week month year recently yesterday ago"
)
_ENDING_WORDS = frozenset(_ENDING_WORDING.split())
#: Days, months and seasons: a time a thing happens, not the thing. Shared alone, they say
#: no more than that both happen then ("The Monday pottery studio was closed down" after
#: "The pottery class is on Mondays at 7pm").
_TIMES = frozenset(
    {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
    | {name for name in MONTHS if len(name) > 3}
    | set(SEASONS)
)
#: A plural day as its day ("mondays": "monday"): a value of a note either way.
_DAYS = {f"{day}s": day for day in _TIMES if day.endswith("day")}
#: A version: numbers joined by dots ("1.30", "v3.7.2"); no count of a thing.
_VERSION = re.compile(r"v?\d+(?:\.\d+)+")
#: A decimal: after a verb of quantity (``_QUANTITY``), a count's new value, no version.
_DECIMAL = re.compile(r"\d+\.\d+")
#: Verbs of change that say a quantity changed ("raised the pump's flow to 32.5").
_QUANTITY = re.compile(
    r"raised|lowered|increased|decreased|reduced|grew|shrank|(?:went|gone|goes|go) (?:up|down)"
    r"|(?:fell|cut|rose|jumped|down) to",
    re.IGNORECASE,
)
#: Units a number measures in, stemmed ("litres": "litre"): a thing that comes in parts, so a
#: decimal is its new measure ("now holds 45.5" after "holds 40 litres"), where things
#: counted whole ("3 nodes") take none and a decimal beside them is a version.
_MEASURING = (
    "litre liter ml gallon pint kg kilo kilogram gram lb pound ounce oz tonne ton km"
    " kilometre kilometer mile metre meter feet foot inch cm mm hour minute percent degree"
    " dollar euro quid buck cent penny pence gb mb tb kwh watt volt"
)
_MEASURES = frozenset(_MEASURING.split())
#: Words a later tells a bare decimal after as the level its thing is at or set to: "The
#: tank is now at 45.5", "The heater is now set to 22.5" (``_measured_again``).
_LEVEL_WORDS = frozenset({"at", "to"})
#: Words such a later may say beside its thing's: how the level was set.
_SETTING_WORDS = frozenset({"set", "turned", "up", "down", "back", "kept"})
#: "new" and the word it qualifies: a change only of something the earlier note names
#: ("New office wifi password" after "The office wifi password is …"; not "Anything new?").
_NEW = re.compile(r"\bnew\s+(\w+)", re.IGNORECASE)

_POSSESSIVE_END = re.compile(r"['\u2019]s$")

#: Verbs of change whose subject is the thing's new holder ("Ben took over the team",
#: "Daniel replaced Priya", "Ms Okafor is now our head of sales"), not the thing that
#: changed ("Bob moved to Porto").
_HOLDER_VERBS = frozenset(
    {"took over", "taken over", "takes over", "replaced", "succeeded", "succeeds", "now", "became"}
)
#: Of those, the verbs that may name the holder replaced after them ("Elena replaced Victor",
#: "took over from Victor", "succeeded Victor").
_REPLACING = frozenset(
    {"took over", "taken over", "takes over", "replaced", "succeeded", "succeeds"}
)
#: Verbs of holding a post, after the earlier's holder and before a definite thing
#: (``_DEFINITE``): "Dana runs the front desk" holds what "Marco is now in charge of the front
#: desk" does ("Paul works at the bakery" none).
#: Each with the nouns of its holder, the post told as a noun ("Siobhan coaches the rowing
#: crew", "Tobias is now the rowing crew's coach"): "runs" has none.
_HOLDING: dict[str, frozenset[str]] = {
    verb: frozenset(nouns.split())
    for verb, nouns in (
        ("runs", ""),
        ("leads", "lead leader"),
        ("manages", "manager"),
        ("chairs", "chair chairman chairwoman chairperson"),
        ("coaches", "coach"),
        ("heads", "head"),
        ("edits", "editor"),
        ("teaches", "teacher"),
        ("keeps", "keeper"),
        ("captains", "captain"),
        ("directs", "director"),
        ("oversees", "overseer"),
        ("organises", "organiser"),
        ("organizes", "organizer"),
        ("hosts", "host"),
    )
}
#: Words that open a definite thing, one a post is: "the front desk", "our choir" ("Dana
#: runs marathons" holds none, nor "Dana hosts a podcast").
_DEFINITE = frozenset({"the", "our", "their", "his", "her", "its", "my", "your"})
#: Words a holder says beside the thing it holds: "in charge of".
_HOLDING_WORDS = frozenset({"charge"})
#: A name: one to three capitalised words ("Ben", "Ms Okafor", "O'Neill-Hart").
_NAME = r"((?-i:[A-Z])[\w'\u2019-]*(?:\s+(?-i:[A-Z])[\w'\u2019-]*){0,2})"
#: A holder opening its clause, before its verb: one to three capitalised words and a "has"
#: ("Ben ", "Ms Okafor ", "Dr Shah has "), or an "is" before "now" ("Ms Okafor is now"; "Priya
#: is replaced" is no holder). A sentence opens with a capitalised word, which
#: ``details.values`` reads as no value.
_HOLDER = re.compile(_NAME + r"\s+(?:(has|have|had|is)\s+)?")
#: Words that tell a holder beside the earlier's, not in its place: "Marco is now also team
#: lead", "… club treasurer too", "… a team lead" (one of several), "Pickles is now also a
#: mascot".
_JOINING = re.compile(r"\b(?:also|too|as well|another|one of|an?)\b|\bco-", re.IGNORECASE)
#: Words after which a holder is told with "is": "Ms Okafor is now our head of sales".
_HOLDER_IS = frozenset({"now"})
#: A holder told new: "Ida is the new keeper of the lighthouse", "Gideon is the climbing
#: wall's new manager" (to "new"; the post's thing before it, ``_THING_OF``).
_HOLDER_NEW = re.compile(
    _NAME + r"\s+is\s+(?:the|our)\s+"
    r"(?:(?:[\w-]+\s+){0,2}[\w-]+['\u2019]s\s+)?",
    re.IGNORECASE,
)
#: The thing whose post is new, told before "new": "the climbing wall's " (of "Gideon is the
#: climbing wall's new manager").
_THING_OF = re.compile(r"\b(?:the|our)\s+((?:[\w-]+\s+){0,2}[\w-]+['\u2019]s)\s+$", re.IGNORECASE)
#: A holder named after its new post: "The climbing wall has a new manager, Gideon", "The
#: choir has a new conductor: Ilse", "The board's new chair is Dr Amadi"; read as "Gideon is
#: the climbing wall's new manager" (``_holder_first``). The holder is one to three
#: capitalised words of letters ending the sentence.
_NAME_LAST = r"((?-i:[A-Z])[a-z'\u2019-]*(?:\s+(?-i:[A-Z])[a-z'\u2019-]*){0,2})\s*(?=[.!;]|$)"
_POST_HAS_NEW = re.compile(
    r"\b((?:the|our)\s+(?:[\w-]+\s+){0,2}[\w-]+)\s+(?:has|have)\s+(?:got\s+)?an?\s+"
    r"(new\s+[\w-]+(?:\s+[\w-]+)?)\s*[,:]\s*" + _NAME_LAST,
    re.IGNORECASE,
)
_POST_NEW_IS = re.compile(
    r"\b((?:the|our)\s+(?:[\w-]+\s+){0,2}[\w-]+['\u2019]s)\s+(new\s+[\w-]+(?:\s+[\w-]+)?)"
    r"\s+is\s+" + _NAME_LAST,
    re.IGNORECASE,
)
#: A post told first and its holder after it, opening a note: "The team lead is Dana", "Our
#: club secretary is Ms Ito". The holder is one to three capitalised words of letters ending
#: the sentence ("The password is Hunter2" names no holder); a time is none ("The meeting is
#: Tuesday", ``_TIMES``).
_POST_FIRST = re.compile(
    r"(?:the|our)\s+[\w'\u2019-]+(?:\s+[\w'\u2019-]+){0,3}\s+is\s+" + _NAME_LAST,
    re.IGNORECASE,
)
#: A time of day an earlier's holder holds its post at: "7am", "6:30pm", "18:00", "noon".
_CLOCK = re.compile(r"\d{1,2}(?::\d\d)?\s?(?:am|pm)|\d{1,2}:\d\d|noon|midnight")
#: A place a post is held at or in: the capitalised words after "at" or "in" ("at Riverside
#: Park"); a post's thing is told otherwise ("the payroll desk").
_PLACE = re.compile(
    r"\b(?:at|in)\s+((?-i:[A-Z])[\w'\u2019-]*(?:\s+(?-i:[A-Z])[\w'\u2019-]*){0,3})",
    re.IGNORECASE,
)
#: A definite thing a verb of change acts on opens so: "Upgraded our mobile plan" (``_DEFINITE``).
_DEFINITE_OPENING = re.compile(rf"\s*(?:{'|'.join(sorted(_DEFINITE))})\s+", re.IGNORECASE)
#: A word, or a mark, of what follows it.
_PHRASE_WORD = re.compile(r"[\w'\u2019-]+|[^\w\s]")
#: Words after a thing, beside the function words, that end it: "moved the site off Heroku".
_PHRASE_ENDS = frozenset({"off", "into", "onto", "over", "up", "down", "out", "back", "instead"})
#: Where a sentence opens: a sentence's end, a colon (a speaker's name), a semicolon.
_SENTENCE_START = re.compile(r"[.!?:;]\s|\n")
#: A number and nothing else: a count ("3", "1,200", "2.5").
_NUMBER = re.compile(r"\d[\d,.]*")
#: A number, a whole word, and the word after it: what it may count ("3 nodes").
_COUNT = re.compile(r"(?<![\w.,:/-])(\d[\d,.]*\d|\d)\s+([^\W\d_]+)\b")
#: Where a clause opens: a sentence's end, a colon (a speaker's name), a semicolon, a comma.
_CLAUSE_START = re.compile(r"[.!?:;,]\s|\n")
#: Another person of the subject's, before the change: "Sara's son upgraded", "her brother
#: switched" tell of that person's change, not the subject's ("my wife and I moved" of
#: the speaker's too).
_KIN = re.compile(
    r"(?:['\u2019]s|\b(?:my|our|his|her|their|your))\s+"
    r"(son|daughter|wife|husband|partner|boyfriend|girlfriend|fianc[ée]e?|brother|sister"
    r"|mum|mom|mother|dad|father|parent|kid|child|children|baby|grandson|granddaughter"
    r"|grandma|grandmother|grandpa|grandfather|aunt|uncle|cousin|niece|nephew|friend"
    r"|neighbou?r|colleague|coworker|roommate|flatmate|boss)s?\b(?!\s+and\s+(?:I|me|we)\b)",
    re.IGNORECASE,
)
#: Words that name no thing: articles, pronouns, auxiliaries, prepositions. An ending's
#: other words name what ended.
_FUNCTION_WORDING = (
    "a an the this that these those my our your his her their its it we i you he she they"
    " me us him them is are was were be been being has have had do does did will would"
    " shall should can could may might must to of for on in at from by with and or but as"
    " so all now just also today"
)
_FUNCTION_WORDS = frozenset(_FUNCTION_WORDING.split())

#: How strongly a text says a change: not, beside other values, a value it adds, at all.
NONE, BESIDE, ADDED, ENDED = 0, 1, 2, 3


def told(text: str) -> str:
    """``text`` without its questions and the sentences that say the old still holds or a
    change was not made (``_KEPT``)."""
    return " ".join(
        sentence
        for sentence in _SENTENCE_END.split(text)
        if not sentence.rstrip().endswith("?") and _KEPT.search(sentence) is None
    )


class Change(NamedTuple):
    """How a text says a change (``change_said``): ``how``; ``clause``, the clause of its
    word of change up to that word; ``word``, the word; and ``after``, what it tells after
    an ending or a verb of change."""

    how: int
    clause: str
    word: str
    after: str


def _holder_first(said: str) -> str:
    """``said`` with each holder named after its new post told first: "The choir has a new
    conductor: Ilse" as "Ilse is the choir's new conductor", "The board's new chair is Dr
    Amadi" as "Dr Amadi is the board's new chair" (``_POST_HAS_NEW``, ``_POST_NEW_IS``), the
    shape ``_HOLDER_NEW`` reads."""
    if "new" not in said.casefold():
        return said
    said = _POST_HAS_NEW.sub(lambda m: f"{m[3]} is {m[1]}'s {m[2]}", said)
    return _POST_NEW_IS.sub(lambda m: f"{m[3]} is {m[1]} {m[2]}", said)


def change_said(text: str, earlier_words: frozenset[str]) -> Change:
    """How ``text`` says that something changed: ``ENDED`` (``_ENDED``), ``ADDED``
    (``_CHANGED``), ``BESIDE`` (``_NOW``, or "new" before one of ``earlier_words``,
    casefolded) or ``NONE``, in its told sentences (``told``); the clause of that word, up
    to it ("Sara's son "); the word; and what it tells after its ending or first verb of
    change (what a thing changed to: "changed from Priya to Daniel"). A holder named after its
    new post is told first (``_holder_first``)."""
    said = _holder_first(told(text))

    def clause(start: int) -> str:
        opened = [m.end() for m in _CLAUSE_START.finditer(said, 0, start)]
        return said[opened[-1] if opened else 0 : start]

    ended = _ENDED.search(said)
    if ended is not None:
        return Change(ENDED, clause(ended.start()), ended[0], said[ended.end() :])
    changed = _CHANGED.search(said)
    if changed is not None:
        return Change(ADDED, clause(changed.start()), changed[0], said[changed.end() :])
    now = _NOW.search(said)
    if now is not None:
        return Change(BESIDE, clause(now.start()), now[0], said[now.end() :])
    for m in _NEW.finditer(said):
        if m[1].casefold() in earlier_words:
            # What follows names the post a new holder holds ("new keeper of the lighthouse"),
            # and the thing told before "new" too ("the climbing wall's new manager").
            thing = _THING_OF.search(said, 0, m.start())
            post = said[m.start(1) :]
            return Change(BESIDE, clause(m.start()), m[0], f"{thing[1]} {post}" if thing else post)
    return Change(NONE, "", "", "")


def may_be_strict(text: str) -> bool:
    """Whether ``text`` says a change in words a ``STRICT`` shape needs (``update_shape``):
    an ending, or a new holder before its verb ("Irene has taken over"). Regular
    expressions alone, no ``details.values``: most notes alike enough only for
    ``update_alike_strict`` are passed over on it."""
    how, clause, word, _ = change_said(text, frozenset())
    if how == ENDED or _holder(clause, word):
        return True
    # "new" says a change only of a word of the earlier, unknown here: a holder before it.
    said = _holder_first(told(text))
    return any(_holder(said[: m.start()], m[0]) for m in _NEW.finditer(said))


def says_change(text: str, earlier_words: frozenset[str]) -> bool:
    """Whether ``text`` says that something changed (``change_said``)."""
    return change_said(text, earlier_words).how != NONE


def may_update(earlier: Details, later: Details, later_text: str, earlier_text: str) -> bool:
    """Whether a note may update an earlier one alike to it in meaning (``update_shape``)."""
    return update_shape(earlier, later, later_text, earlier_text) != NO_UPDATE


#: How a later note may update an earlier one (``update_shape``): not at all; in any way the
#: rule reads; or in a strict shape (``STRICT``), which the model finds less alike.
NO_UPDATE, UPDATE, STRICT = 0, 1, 2


def update_shape(earlier: Details, later: Details, later_text: str, earlier_text: str) -> int:
    """How a note may update an earlier one alike to it in meaning: ``NO_UPDATE``,
    ``UPDATE``, or ``STRICT`` for an ending naming the earlier's thing in its words alone, or
    a new holder; by how the later (``later_text``) says a change (``change_said``) and the
    values (``details.values``) of each (``earlier``, ``later``). Each saying a value that is
    no word of the other, and any word of a change ("now" in a sentence naming a word of the
    earlier, a day aside: ``_names_a_word_of``). Or one that ended what the earlier told,
    naming a value of it ("The café no longer closes on Mondays") or its thing in its words
    alone ("The yoga class was cancelled"; not if the earlier, ``earlier_text``, told that
    ending too). Or one of a verb of change naming after it a value that is no word of the
    earlier, which names values ("The on-call lead changed from Priya to Daniel"), or a new
    holder before it ("Ben took over the team from Nora"; ``_new_holder``: "Irene has taken
    over as club treasurer" after "Paul is the club treasurer"). A time both name ("Monday")
    names a value of the earlier only with the later's subject in the earlier's words. None
    that tells of another person's change ("Sara's son upgraded …"), of the earlier's holder
    replaced in another post ("Elena took over from Victor as physio"), of another kind of
    its thing after a verb of change (``_another_kind``: "Upgraded our mobile plan" after
    "Our broadband plan is 100 Mbps"), or of another side of what the earlier counts ("The
    cluster has 3 nodes", "… was upgraded to Kubernetes 1.30")."""
    how, clause, word, after = change_said(later_text, earlier[1] | _held_as(earlier_text))
    if (
        how == NONE
        or _another_person(clause, earlier[1])
        or _another_side(earlier, later, earlier_text, later_text, word)
        or (how == ADDED and _another_kind(after, earlier_text, earlier[1]))
    ):
        return NO_UPDATE
    # "now" alone as often opens another thing's news ("The store now opens at 9am on
    # Saturdays" after "The weekly Friday film screening starts at 9pm"): its sentence names
    # a word of the earlier's, a day aside.
    if (
        not _said_in(earlier[0], later[1])
        and not _said_in(later[0], earlier[1])
        and (how != BESIDE or _names_a_word_of(f"{clause} {word}", after, earlier[1]))
    ):
        return UPDATE
    if how == ENDED:
        shared = _one_day(earlier[0]) & _one_day(later[0])
        # A time both name ("Monday") says which thing it was only with the later's subject
        # in the earlier's words: "The Monday pottery studio" is no pottery class.
        named = bool(shared - _TIMES) or (bool(shared) and _in_words(_things(clause), earlier[1]))
        # All its words first (cheaper than its told ones, and no fewer).
        if not named and not _names_only_the_thing(clause, after, earlier[1]):
            return NO_UPDATE
        earlier_told = told(earlier_text)
        if _ENDED.search(earlier_told) is not None:
            return NO_UPDATE
        if named:
            return UPDATE
        # Its words as told: "How's the store?" names no store a later ending could end.
        if earlier_told == earlier_text or _names_only_the_thing(
            clause, after, words_in_order(earlier_told)
        ):
            return STRICT
        return NO_UPDATE
    holder = _holder(clause, word)
    if holder:
        if _new_holder(holder, word, after, earlier, later, earlier_text):
            return STRICT
        # The earlier's holder replaced in another post: "Elena took over from Victor as
        # physio" after "Victor is the head coach".
        if _replaced(word, after, earlier_text):
            return NO_UPDATE
    if how != ADDED:
        return NO_UPDATE
    # A value said after the verb, or its new holder before it, is what the thing changed
    # to; the earlier's values, or one of its words the later names as a value ("from
    # Priya"), say which thing it was.
    which = bool(earlier[0]) or not later[0].isdisjoint(earlier[1])
    changed = not ((later[0] | holder) - earlier[1]).isdisjoint(_words(after) | holder)
    return UPDATE if which and changed else NO_UPDATE


def _holder(clause: str, word: str) -> frozenset[str]:
    """The new holder before a verb of ``_HOLDER_VERBS`` (``word``), or told new ("Ida is the
    new keeper": ``_HOLDER_NEW``): the words of its ``clause`` when they are a name and a
    "has" at most ("Ben", "Ms Okafor"), casefolded; none otherwise."""
    verb = " ".join(word.casefold().split())
    if verb.startswith("new "):
        named = _HOLDER_NEW.fullmatch(clause.lstrip())
        if named is None:
            return frozenset()
    elif verb not in _HOLDER_VERBS:
        return frozenset()
    else:
        named = _HOLDER.fullmatch(clause.lstrip())
        if named is None or (named[2] == "is" and verb not in _HOLDER_IS):
            return frozenset()
    names = named[1].split()
    if not name_first(names[0].casefold()):
        return frozenset()
    return frozenset(_POSSESSIVE_END.sub("", n.casefold()) for n in names)


def _new_holder(
    holder: frozenset[str],
    word: str,
    after: str,
    earlier: Details,
    later: Details,
    earlier_text: str,
) -> bool:
    """Whether a later note's ``holder`` (``_holder``) is a new holder of the thing an
    earlier one gives its own holder, opening it, and names no value besides: "Irene has
    taken over as club treasurer" after "Paul is the club treasurer", "Ms Okafor is now our
    head of sales" (its ``word``) after "Mr Reed is our head of sales", "Marco is now in
    charge of the front desk" after "Dana runs the front desk" (``_holds``; or "the front
    desk's manager" after "Dana manages …": ``_held_as``), "Marco is now team lead" after
    "The team lead is Dana" (``_POST_FIRST``; in the post's words alone, not "in charge of"
    it). What follows the verb (``after``, to its sentence's end) names the thing in the
    earlier's words alone, and the holder is no word of the earlier nor holds it beside the
    earlier's ("also", "too", "a team lead": ``_JOINING``). The earlier names no
    value but its holder, a time or a place (``_holder_alone``), or the later names that
    holder as the one it replaced ("Elena replaced Victor as our account manager" after
    "Victor is our account manager at Stripe": ``_replaced``)."""
    opened_text = earlier_text.lstrip()
    opened = _HOLDER.match(opened_text)
    verb = " ".join(word.casefold().split())
    post_first = None
    if opened is None or not name_first(opened[1].split()[0].casefold()):
        # The post first, its holder after it: "The team lead is Dana".
        post_first = _POST_FIRST.match(opened_text)
        if post_first is None or not _TIMES.isdisjoint(post_first[1].casefold().split()):
            return False
        names = post_first[1].split()
    # "is now" only after an earlier "is" or a verb of holding ("Dana runs the front
    # desk"): "Paul works at the bakery" holds no post.
    elif (
        (verb in _HOLDER_IS or verb.startswith("new "))
        and opened[2] != "is"
        and not _holds(opened[2], opened_text[opened.end() :])
    ):
        return False
    else:
        names = opened[1].split()
    earlier_holder = {_POSSESSIVE_END.sub("", n.casefold()) for n in names}
    told_after = _to_sentence_end(after)
    # The holder it replaced, named ("Elena replaced Victor as our account manager"), says
    # which post it was: the earlier may name more of it ("… at Stripe").
    if not later[0] <= holder | earlier[1] or not (
        _holder_alone(earlier[0] - earlier_holder - later[0], earlier_text)
        or _replaced(word, after, earlier_text)
    ):
        return False
    if holder <= earlier[1] or _JOINING.search(told_after) is not None:
        return False
    thing = _things(told_after) - _stems(set(holder))
    if post_first is not None:
        # The later holds the post itself: none is "in charge of" a post ("Marco is now in
        # charge of the venue" after "The venue is Lisbon" holds no post of Lisbon's).
        return bool(thing) and _in_words(thing, earlier[1])
    thing -= _HOLDING_WORDS
    return bool(thing) and _in_words(thing, earlier[1] | _held_as(earlier_text))


def _holder_alone(besides: frozenset[str], earlier_text: str) -> bool:
    """Whether the values an earlier note names besides its holder and the later's values
    (``besides``) name no other post: none, or each a time (a day, a month, a season, "7am",
    "18:00") or a place it is held at or in ("at Riverside Park"), which the later need not
    repeat ("Thaddeus is now the calligraphy class's teacher" after "Perpetua teaches the
    Saturday calligraphy class")."""
    if not besides:
        return True
    places = {
        _POSSESSIVE_END.sub("", w.casefold())
        for m in _PLACE.finditer(earlier_text)
        for w in m[1].split()
    }
    return all(
        w in places or _CLOCK.fullmatch(w) is not None or _one_day(frozenset({w})) & _TIMES
        for w in besides
    )


def _names_a_word_of(clause: str, after: str, earlier_words: frozenset[str]) -> bool:
    """Whether the sentence of a later's word of change (its ``clause``, to the word and
    with it: "New office wifi password"; and ``after``, to the sentence's end) names a thing
    in a word of the earlier (``earlier_words``), a day, a month or a season aside
    (``_TIMES``)."""
    thing = _things(f"{clause} {_to_sentence_end(after)}") - _TIMES
    # The words as they are first: most updates say one so, and stemming is the dearer pass.
    return not thing.isdisjoint(earlier_words) or not thing.isdisjoint(_stems(earlier_words))


def _held_as(earlier_text: str) -> frozenset[str]:
    """The nouns of the post an earlier note's holder holds by a verb of holding
    (``_HOLDING``): "coach" of "Siobhan coaches the rowing crew"; none otherwise."""
    opened_text = earlier_text.lstrip()
    opened = _HOLDER.match(opened_text)
    if opened is None or not _holds(opened[2], opened_text[opened.end() :]):
        return frozenset()
    return _HOLDING[opened_text[opened.end() :].split(maxsplit=1)[0].casefold()]


def _holds(auxiliary: str | None, rest: str) -> bool:
    """Whether an earlier note's holder, before ``rest`` (with no ``auxiliary``: "has",
    "is"), holds a post: a verb of holding before a definite thing (``_HOLDING``,
    ``_DEFINITE``: "runs the front desk", "leads our choir", "edits Acme's newsletter")."""
    following = rest.split(maxsplit=2)
    if auxiliary is not None or len(following) < 2 or following[0].casefold() not in _HOLDING:
        return False
    thing = following[1].casefold()
    return thing in _DEFINITE or _POSSESSIVE_END.search(thing) is not None


def _replaced(word: str, after: str, earlier_text: str) -> bool:
    """Whether a later's verb of replacing (``word``, of ``_REPLACING``) names after it, in
    its sentence (``after``), the holder opening the earlier (``earlier_text``): "took over
    from Victor" after "Victor is the head coach"."""
    if " ".join(word.casefold().split()) not in _REPLACING:
        return False
    opened = _HOLDER.match(earlier_text.lstrip())
    if opened is None or not name_first(opened[1].split()[0].casefold()):
        return False
    earlier_holder = {_POSSESSIVE_END.sub("", n.casefold()) for n in opened[1].split()}
    return earlier_holder <= _words(_to_sentence_end(after))


def _to_sentence_end(after: str) -> str:
    """What follows a later's word of change (``after``) up to the end of its sentence."""
    closed = _SENTENCE_START.search(after)
    return after[: closed.start()] if closed else after


def _said_in(found: frozenset[str], words: frozenset[str]) -> bool:
    """Whether each value of ``found`` is one of ``words``, a day also in its plural
    ("Monday" and "Mondays" are one value)."""
    return found <= words or _one_day(found) <= _one_day(words)


def _one_day(found: frozenset[str]) -> frozenset[str]:
    """``found`` with each plural day also as its day ("mondays": "monday")."""
    if found.isdisjoint(_DAYS):
        return found
    return found | {_DAYS[w] for w in found if w in _DAYS}


def _things(text: str) -> set[str]:
    """The words of ``text`` that name things, stemmed: no function words, nor those an
    ending says beside the thing it ends (``_ENDING_WORDS``)."""
    return _stems(
        {w for w in words_in_order(text) if w not in _FUNCTION_WORDS and w not in _ENDING_WORDS}
    )


def _in_words(thing: set[str], earlier_words: frozenset[str] | tuple[str, ...]) -> bool:
    """Whether each of ``thing`` (stemmed) is a word of the earlier (``earlier_words``)."""
    return thing <= _stems(set(earlier_words))


def _another_person(clause: str, earlier_words: frozenset[str]) -> bool:
    """Whether ``clause``, before its word of change, tells of another person of the
    subject's (``_KIN``: "Sara's son upgraded…") whom the earlier note (its words,
    ``earlier_words``) does not name."""
    return any(_stem(m[1]) not in _stems(earlier_words) for m in _KIN.finditer(clause))


def _another_side(
    earlier: Details, later: Details, earlier_text: str, later_text: str, word: str
) -> bool:
    """Whether the later note (``later_text``) tells another side of what the earlier
    counts: each of the earlier's values a number of a thing ("The cluster has 3 nodes"),
    and the later names none of those things and says a name ("… upgraded to Kubernetes
    1.30"); a count changes by a number ("… scaled to 5 nodes", "… now sleeps 4"), and by a
    decimal after a verb of quantity, its ``word`` of change ("Raised the pump's flow to
    32.5"), or told as the earlier told its measure (``_measured_again``: "The tank now holds
    45.5" after "The tank holds 40 litres")."""
    # The cheap tests first: most pairs are no count and a name.
    if not earlier[0] or any(_NUMBER.fullmatch(value) is None for value in earlier[0]):
        return False
    # A number alone is the count's change; a version ("1.30") after a whole count is none
    # ("$9.99" to "$12.99" is).
    whole = all("." not in value for value in earlier[0])
    quantity = _QUANTITY.fullmatch(" ".join(word.split())) is not None

    def version(value: str) -> bool:
        if _VERSION.fullmatch(value) is None:
            return False
        # "v3.7.2" is a version whatever is told around it.
        return _DECIMAL.fullmatch(value) is None or not (
            quantity or _measured_again(value, earlier_text, later_text, earlier[0])
        )

    if all(
        any(c.isdigit() for c in value) and not (whole and version(value)) for value in later[0]
    ):
        return False
    counted = _counted(earlier_text, earlier[0])
    return counted is not None and counted.isdisjoint(_stems(later[1]))


def _another_kind(after: str, earlier_text: str, earlier_words: frozenset[str]) -> bool:
    """Whether what a later's verb of change acts on (``after`` it: a definite thing, "our
    mobile plan") is another kind of the earlier's thing: the earlier (``earlier_text``, its
    words ``earlier_words``) names its last word after another word ("Our broadband plan is
    100 Mbps"), and the later names a word before it the earlier lacks. "Upgraded our fibre
    plan" after "Our plan is 100 Mbps" names that plan more closely."""
    opened = _DEFINITE_OPENING.match(after)
    if opened is None:
        return False
    phrase: list[str] = []
    for found in _PHRASE_WORD.finditer(after, opened.end()):
        word = found[0]
        # A name, a number or a mark ends the thing; so does a function word ("to", "off").
        if not word[0].islower() or word in _FUNCTION_WORDS or word in _PHRASE_ENDS:
            break
        phrase.append(word)
    if len(phrase) < 2:
        return False
    stems = _stems(earlier_words)
    head, kind = _stem(phrase[-1]), _stems(tuple(phrase[:-1]))
    if head not in stems or kind <= stems:
        return False
    # Which word the earlier names before it: the in-order pass only for the few left.
    told = words_in_order(earlier_text)
    return any(
        _stem(w) == head
        and told[i - 1].isalpha()
        and told[i - 1] not in _FUNCTION_WORDS
        and _stem(told[i - 1]) not in kind
        for i, w in enumerate(told)
        if i > 0
    )


def _measured_again(
    decimal: str, earlier_text: str, later_text: str, found: frozenset[str]
) -> bool:
    """Whether a later's ``decimal`` is the new measure of an earlier's number (of its values,
    ``found``) before a unit (``_MEASURES``): the later tells it after the word the earlier
    told the number after, "now" aside ("holds 40 litres" … "now holds 45.5"; not "runs
    firmware 2.1"), or "at" or "to" it (``_LEVEL_WORDS``) naming the earlier's thing alone
    ("The tank is now at 45.5", "The heater is now set to 22.5")."""
    told = _word_before(later_text, decimal)
    if told is None:
        return False
    measured = [
        number
        for number, unit in _COUNT.findall(earlier_text)
        if number in found and _stem(unit) in _MEASURES
    ]
    if any(_word_before(earlier_text, number) == told for number in measured):
        return True
    # A level its thing is at, or set to, naming no other thing: "The tank is now at 45.5"
    # (not "The tank's pump is now at 2.5", "… at Python 3.13").
    if not measured or told not in _LEVEL_WORDS:
        return False
    thing = {w for w in _things(later_text) if not any(c.isdigit() for c in w)}
    return _in_words(thing - _SETTING_WORDS, words_in_order(earlier_text))


def _word_before(text: str, number: str) -> str | None:
    """The word ``number`` follows in ``text``, casefolded, "now" or a currency's sign between
    them aside ("is now $1250.50": "is"); None when it follows none."""
    before = re.search(
        rf"\b([^\W\d_]+)\s+(?:now\s+)?[$£€¥]?{re.escape(number)}(?!\d|\.\d)", text, re.IGNORECASE
    )
    return before[1].casefold() if before else None


def _counted(text: str, found: frozenset[str]) -> set[str] | None:
    """The things a text's values (``found``) count ("3 nodes": "node"), stemmed, when each
    of them is a number before a word that names a thing; None otherwise, or when it says
    no value."""
    counted: set[str] = set()
    numbers: set[str] = set()
    for number, thing in _COUNT.findall(text):
        folded = thing.casefold()
        if number in found and folded not in found and folded not in _FUNCTION_WORDS:
            numbers.add(number)
            counted.add(_stem(folded))
    return counted if found and numbers == found else None


def _names_only_the_thing(
    clause: str, after: str, earlier_words: frozenset[str] | tuple[str, ...]
) -> bool:
    """Whether the clause of the later's ending (``clause``, to it, and ``after``, what
    follows it, to the sentence's end) names a thing, in words of the earlier note
    (``earlier_words``, of its told sentences) and no others but an ending's
    (``_ENDING_WORDS``): "The yoga class was cancelled" after "Yoga class is on Thursdays
    at 6pm", "The farmers market shut down for good" after "The Saturday farmers market
    runs from 8 to 1"; not "The spin class was cancelled"."""
    thing = _things(f"{clause} {_to_sentence_end(after)}")
    return bool(thing) and _in_words(thing, earlier_words)


def _stem(word: str) -> str:
    """A word, casefolded, without a plural's or a possessive's "s": "Fridays" is
    "friday", "kids'" "kid"."""
    word = _POSSESSIVE_END.sub("", word.casefold()).rstrip("'\u2019")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _stems(words: frozenset[str] | set[str] | tuple[str, ...]) -> set[str]:
    """``_stem`` of each word."""
    return {_stem(w) for w in words}


def _words(text: str) -> set[str]:
    """A text's words, casefolded, each possessive also as its name ("Lisbon's": "lisbon"),
    as ``details.values`` reads them: a regular expression's pass, not ``values``' four
    times longer one (a recall checks several pairs)."""
    words = set(words_in_order(text))
    return words | {_POSSESSIVE_END.sub("", w) for w in words}


def candidates(
    similarity: npt.NDArray[np.float32] | None,
    allowed: BoolArray,
    found_by_text: Sequence[int],
    count: int,
) -> npt.NDArray[np.int64]:
    """Rows that may hold a later note of a recall's results: the ``count`` most alike to
    the query among those ``allowed`` (a note that updates a result is about what it is
    about), and those found by its words."""
    rows: list[npt.NDArray[np.int64]] = [
        np.array([r for r in found_by_text if r < len(allowed) and allowed[r]], dtype=np.int64)
    ]
    if similarity is not None and count > 0:
        n = min(len(similarity), len(allowed))
        masked = np.where(allowed[:n], similarity[:n], np.float32(-np.inf))
        if n > count:
            top = np.argpartition(masked, n - count)[n - count :]
        else:
            top = np.arange(n, dtype=np.int64)
        rows.append(top[np.isfinite(masked[top])])
    return np.unique(np.concatenate(rows)).astype(np.int64)


def later_notes(
    working: WorkingMemory,
    shown: Sequence[int],
    among: npt.NDArray[np.int64],
    alike: float,
    alike_strict: float,
) -> dict[int, list[int]]:
    """Per row of ``shown`` (a recall's results) that is a plain note, the rows of ``among``
    and ``shown`` that may update it (``update_shape``): plain notes observed after it, at
    least ``alike`` to it (cosine), or ``alike_strict`` in a ``STRICT`` shape, newest first,
    at most ``MOST_LATER``. None at ``alike`` 0; ``alike_strict`` 0 is ``alike``."""
    if alike <= 0:
        return {}
    notes = [row for row in shown if _plain(working, row)]
    if not notes:
        return {}
    pool = np.unique(np.concatenate([among, np.array(notes, dtype=np.int64)]))
    pool = pool[[_plain(working, int(row)) for row in pool]]
    entries = working.entries
    observed = np.array([micros(entries[int(row)].observed_at) for row in pool], dtype=np.int64)
    vectors = working.embeddings.vectors(pool)
    place = {int(row): i for i, row in enumerate(pool)}
    mine = vectors[[place[row] for row in notes]]
    likeness = mine @ vectors.T
    # 0 leaves the strict shapes to ``alike``.
    strict = alike_strict if alike_strict > 0 else alike
    least = min(alike, strict)
    said: dict[int, Details] = {}
    strict_words: dict[int, bool] = {}

    def values_of(row: int) -> Details:
        if row not in said:
            said[row] = values(entries[row].text)
        return said[row]

    def strictly(row: int) -> bool:
        if row not in strict_words:
            strict_words[row] = may_be_strict(entries[row].text)
        return strict_words[row]

    found: dict[int, list[int]] = {}
    for i, row in enumerate(notes):
        close = np.flatnonzero((likeness[i] >= least) & (observed > observed[place[row]]))
        later: list[int] = []
        for j in close[np.argsort(-observed[close], kind="stable")]:
            other = int(pool[j])
            # Below ``alike`` only a strict shape may pass: its words first, four times
            # cheaper than the values (LoCoMo's recalls checked 4.4 times the pairs).
            if likeness[i, j] < alike and not strictly(other):
                continue
            how = update_shape(
                values_of(row), values_of(other), entries[other].text, entries[row].text
            )
            # A strict shape needs only ``strict``; any other ``alike``.
            if how == NO_UPDATE or likeness[i, j] < (strict if how == STRICT else alike):
                continue
            later.append(other)
            if len(later) == MOST_LATER:
                break
        if later:
            found[row] = later
    return found


def newer_first(ranked: list[Ranked], later: dict[int, list[int]]) -> list[Ranked]:
    """``ranked`` with the later notes of each result (``later_notes``) that are among them
    moved up to stand right before it, newest first, and theirs before them: a note that
    may be out of date is never read above what may update it. The rest keep their order."""
    by_row = {r.row: r for r in ranked}
    ordered: list[Ranked] = []
    placed: set[int] = set()
    for r in ranked:
        # A stack, not recursion: what waits is each note after its later notes.
        stack: list[tuple[int, bool]] = [(r.row, False)]
        while stack:
            row, ready = stack.pop()
            if row in placed:
                continue
            if ready:
                placed.add(row)
                ordered.append(by_row[row])
                continue
            stack.append((row, True))
            for newer in reversed(later.get(row, [])):
                if newer in by_row and newer not in placed:
                    stack.append((newer, False))
    return ordered


def _plain(working: WorkingMemory, row: int) -> bool:
    """Whether the row is a plain note: no fact, no record."""
    entry = working.entries[row]
    return entry.subject is None and entry.record is None
