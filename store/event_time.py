"""Event time: when the thing an observation tells of happened, read from its own words.

An observation is stamped with when it was said (``observed_at``). Its text often places the
event itself relative to that moment: "yesterday I finally fixed the roof", "two weeks ago",
"last Tuesday", "next month", "for five years now", "since September", "from May to July".
:func:`event_times` reads those expressions (plain English, no LLM) and resolves each against
``said_at`` into an exact interval with its precision; :func:`event_time` picks the one to store
with the observation.

The spans are exact calendar units ("two weeks ago" is the Monday-to-Sunday week that held the
day fourteen days back, "last month" the previous calendar month); any slack for matching a
question's time against them belongs to the matcher, not here.

Being wrong is worse than saying nothing, so the reading is conservative: a month name is read
only with a day, a year or a cue word ("in May", not "I may go"); a short weekday only after
last/next/this past ("last Fri", not "on Sun Street"); a full weekday alone only in a sentence
whose tense says which way ("we went hiking Saturday", not "Saturday is my favourite day") and
never after a word that makes it a name ("Black Friday"); a day of the month alone only as "on
the 15th" before a word that cannot be its noun ("on the 3rd floor" is no date); a holiday
only after a cue word ("for Christmas", not "the Christmas tree"); a season only after
last/this/next/in/during/over, with a year, or counted back ("two summers ago", "the summer
before last"; "the fall of Rome" is no autumn, and "winter 2022" could be either end of a
winter); "for three months" only when it runs up to now ("for three
months now", "I've lived here for three months"); "in two weeks" only when it cannot be a past
duration ("I learned it in two weeks"); days of one month ("from 3 to 10 June", "3-10 June",
"June 3 to 10") only in order, with "and" only after "between" ("on 3 and 10 June" is no
span); ordinal days with no month ("from the 20th to the 23rd", "20th-23rd") only in order or
across a month's end within three weeks ("from the 28th to the 3rd"), before no noun of
theirs ("from the 1st to the 3rd floor"), joined by a word only after "the"; an expression
after "until", "by", "before", "after" or "every" is dropped, but for a deadline to come ("by
Friday", "by 15 December", "by the end of March": from today through it), "by the end of
the month" and a state that holds until a time to come ("I'm in Berlin until Friday", "her
contract was extended to June": from today through it; "postponed until Friday" is Friday);
a day or month of a year said relative to this one is of it ("in May last year");
habitual sentences ("I usually go in May") give no date for words whose year or week they
leave open.

Where an expression leaves the direction open ("in May", "on Tuesday", "3 May", "in the
summer") the past is taken, the latest one that began on or before ``said_at``, unless the
sentence speaks of the future ("will", "'ll", "going to", "can't wait" ...), when it is the
next one, or tells of a plan in the present ("my flight leaves on 3 June", "the appointment
is on 14 May"), when a day later in the year it was said is that year's. Before either, a
weekday said with a day chooses its year ("Tuesday 14 May": the nearest year, within two, in
which 14 May is a Tuesday), and so does a time the memory states outright (a fact's
``valid_from`` or ``valid_until``) on that day or in that month: "from 11 June", told of a
fact valid from 11 June 2024, is that day.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from calendar import monthrange
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Literal, cast, get_args

from doxa.store.timewords import (
    BY_WEEKDAY,
    COUNT_WORDS,
    COUNTS,
    DUE_WORDS,
    END_OF_THE_MONTH,
    MONTHS,
    NO_ORDINAL_NOUN,
    OF_RELATIVE_YEAR,
    ORDINAL_DAYS,
    SEASONS,
    UNTIL_NEXT_WHICH,
    first_saturday_to_come,
    month_of_its_end,
    ordinal_days,
    ordinal_days_span,
    relative_year,
    season_window,
    weekday_dates,
)


class _LazyPattern:
    """A pattern compiled on first use. The module's patterns take some 15 ms to compile:
    paid by the first text read, not by every start of a server that may never read one."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int) -> None:
        self._source, self._flags = source, flags
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> object:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return getattr(self._compiled, name)


def _lazy(source: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile``, deferred to the pattern's first use (see ``_LazyPattern``)."""
    return cast("re.Pattern[str]", _LazyPattern(source, flags))


__all__ = [
    "EventTime",
    "Precision",
    "event_time",
    "event_times",
    "holds_until",
    "loaded",
    "loaded_strictly",
    "most_specific",
    "overlaps",
    "shown",
    "stored",
]

Precision = Literal["day", "week", "weekend", "month", "season", "year", "span", "open"]


@dataclass(frozen=True, slots=True)
class EventTime:
    """When an event happened, as its words placed it.

    Attributes:
        start: aware UTC, inclusive.
        end: aware UTC, exclusive; for an open interval ("since September") it is ``said_at``.
        precision: the unit the words named ("day", "week", "weekend", "month", "season",
            "year"), "span" for a stretch between two times or up to now ("from May to
            July", "for five years now"), "open" for "since ...".
        phrase: the words matched, as written ("two days ago").
    """

    start: datetime
    end: datetime
    precision: Precision
    phrase: str


# --- vocabulary -------------------------------------------------------------------------------

_WEEKDAYS = {
    name: index
    for index, name in enumerate(
        ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
    )
}
# Short forms, read only after last / next / this past / this coming ("last Fri"): alone, or
# after "on", "sat", "sun" and "wed" are other words ("I sat on Sun Street").
_WEEKDAY_SHORT = {
    "mon": 0,
    "tue": 1,
    "tues": 1,
    "wed": 2,
    "weds": 2,
    "thu": 3,
    "thur": 3,
    "thurs": 3,
    "fri": 4,
    "sat": 5,
    "sun": 6,
}
_WEEKDAY_INDEX = {**_WEEKDAYS, **_WEEKDAY_SHORT}

_MONTH = r"(?P<m>{})".format("|".join(sorted(MONTHS, key=len, reverse=True)))
# "may" is also a verb: not when a verb or pronoun follows ("May I ask", "5 may be enough").
_MAY_VERBS = (
    r"be|have|has|not|also|well|just|still|never|even|take|get|go|come|need|want|help|seem"
    r"|sound|look|feel"
)
_MAY_VERB_AFTER = rf"(?!(?<=may)\s+(?:{_MAY_VERBS}|i|you|we|they|he|she|it|this|that)\b)"
# After a cue ("in May I went", "in early May we met") a pronoun starts the clause; only a
# verb still makes it the verb ("what's in may be lost").
_MAY_VERB_AFTER_CUE = rf"(?!(?<=may)\s+(?:{_MAY_VERBS})\b)"
_WEEKDAY = r"(?P<wd>{})".format("|".join(_WEEKDAYS))
_WEEKDAY_ABBREVIATED = r"(?P<wd>{})".format("|".join(sorted(_WEEKDAY_SHORT, key=len, reverse=True)))
_SEASON = r"(?P<season>{})".format("|".join(SEASONS))
_COUNT = rf"(?P<n>\d{{1,4}}|{COUNT_WORDS})"
# "two years and a half" is not two years: such a count is left unread.
_UNIT = r"(?P<unit>day|week|month|year|decade)s?(?!\s+and\s+a\s+half)"
_UNIT_OR_HOUR = r"(?P<unit>minute|hour|day|week|month|year|decade)s?(?!\s+and\s+a\s+half)"
_DAY = r"(?P<d>\d{1,2})(?P<o>st|nd|rd|th)?"
_YEAR = r"(?P<y>\d{4})"
# A year said alone ("in 2019") is a year of 1900-2099 that is not a count of something.
_COUNTED = (
    r"minutes?|hours?|days?|weeks?|months?|years?|decades?|people|persons|times|pieces|steps|words"
    r"|pages|miles|km|kilometers|meters|metres|feet|calories|dollars|euros|pounds|points"
    r"|members|followers|views|likes|users"
)
_LONE_YEAR = (
    r"(?P<y>(?:19|20)\d{2})\b(?![-\u2013/]\d)(?!['\u2019]?s\b)"
    rf"(?!\s*(?:%|percent\b|(?:{_COUNTED})\b))"
)

# A cue that makes a bare month or year a time: "in May", "early June", "back in 2019".
_CUE = (
    r"(?P<cue>back\s+in|in\s+early|in\s+mid|in\s+late|the\s+end\s+of|the\s+beginning\s+of"
    r"|the\s+start\s+of|the\s+middle\s+of|end\s+of|beginning\s+of|start\s+of|middle\s+of"
    r"|the\s+month\s+of|in|during|early|late|mid|around|last|this|next)"
)

_FUTURE = _lazy(
    r"\b(?:will|shall|gonna|going\s+to|about\s+to|plan(?:s|ning)?\s+(?:to|on)"
    r"|intend(?:s|ing)?\s+to|look(?:s|ing)?\s+forward|can['\u2019]?t\s+wait|cannot\s+wait"
    r"|upcoming|hop(?:e|es|ing)\s+to|see\s+you|won['\u2019]t)\b|['\u2019]ll\b",
    re.IGNORECASE,
)
# "was going to" is a plan in the past, not a future.
_PAST_PLAN = _lazy(
    r"\b(?:was|were)\s+(?:going|about|planning|hoping)\s+to\b|\bplanned\b", re.IGNORECASE
)
_ED_ADJECTIVES = (
    "excited|interested|tired|married|scared|worried|bored|pleased|thrilled|amazed|surprised"
    "|stressed|relieved|blessed|obsessed|overwhelmed|motivated|inspired|supposed|used"
    "|determined|prepared|committed|dedicated|engaged|focused|involved|concerned|delighted"
)
_PAST = _lazy(
    r"\b(?:was|were|did|didn['\u2019]?t|had|went|came|saw|got|made|took|gave|told|said|met|found"
    r"|left|felt|thought|bought|brought|ran|began|wrote|spent|won(?!['\u2019])|lost|ate|drank"
    r"|knew|heard|kept|held|paid|sent|built|taught|caught|sold|slept|drove|flew|rode|swam"
    # Irregular pasts that name nothing else ("Maya fell on 20 August"; not "a bit", "a flu
    # shot", "Rose", "Drew", "I'm stuck", "I'm broke", "LED", "Lent", "first-born", "led by").
    r"|became|hurt|fell|forgot|forgave|chose|threw|stole|grew|hid|sang|sank|shook|stood"
    r"|struck|swore|tore|wore|woke|fought|bent|dug|fled|froze|rang|spun|swept|swung"
    r"|understood|wept|withdrew|overslept"
    r"|ago|yesterday)\b"
    # "Born in June" (said in May) was the June to come; not "first-born", "newborn".
    r"|(?<![-\w])born\b"
    rf"|\b(?!(?:{_ED_ADJECTIVES})\b)\w+[^e\W]ed\b",
    re.IGNORECASE,
)
_HABITUAL = _lazy(
    r"\b(?:always|usually|every|often|each|typically|generally|normally|whenever|sometimes"
    r"|tends?\s+to|most\s+years)\b",
    re.IGNORECASE,
)
# What one has or there is on a day that is an event to come, not a thing ("I have a
# sunburn from the beach on Saturday" is no plan).
_EVENT_NOUNS = (
    "appointment|meeting|interview|exam|test|flight|haircut|date|call|session|class|lesson"
    "|party|wedding|trip|visit|concert|game|match|shift|deadline|check-?up|surgery|operation"
    "|drill|inspection|conference|workshop|presentation|review|recital|show|event|dinner"
    "|lunch|breakfast|brunch|dentist|doctor|offsite|off-site|stand-?up|demo|launch|release"
    "|holiday|vacation|gig|play|ceremony|celebration|reunion|hearing|trial|race|marathon"
    "|tournament|practice|rehearsal|training|picnic|barbecue|bbq|sleepover|playdate"
    "|kickoff|kick-off|check-?in|standup|stand-up|retro|sprint|deadline"
)
# Words in -ing that are no verb after "is": "the view is amazing on Friday", "there is
# nothing on Friday", "the wedding".
_NOT_PROGRESSIVE = (
    "being|nothing|something|anything|everything|thing|morning|evening|during|king|ring"
    "|spring|string|wedding|building|ceiling|sibling|darling|amazing|interesting|boring"
    "|exciting|annoying|confusing|surprising|disappointing|relaxing|charming|stunning"
    "|missing|willing|worth\\w*|tiring|fascinating|shocking|terrifying|touching|inspiring"
    "|frustrating|embarrassing|pleasing|satisfying|refreshing|rewarding|challenging|thriving"
)
# Weekdays (also short) and months: a day something was moved to names one.
_DAY_NAMES = "|".join(
    [
        *sorted({*_WEEKDAY_INDEX, *MONTHS} - {"sat", "sun"}, key=len, reverse=True),
        # "moved the plants to the sun" (or "to the Sun room") names no day
        r"(?<!the\s)(?-i:Sat|Sun)",
    ]
)
# A plan told in the present: "my flight leaves on 3 June", "the appointment is on 14 May".
_PRESENT_PLAN = _lazy(
    # "'s" after a pronoun only: "Bob's due diligence report of 3 June" is no plan.
    r"\b(?:is|are|(?:it|that|this|there|he|she|what|which)['\u2019]s|(?:they|we|you)['\u2019]re)"
    r"\s+(?:on|due|scheduled|booked|set|planned)\b"
    r"|\b(?:leaves|departs|starts|begins|opens|arrives|lands|takes\s+place|kicks\s+off"
    # "Sam turns 40 on 9 December", "Mia moves to Geneva on 3 January".
    r"|turns|moves|returns|ends|closes|finishes|graduates|retires|flies|expires|renews"
    r"|lapses)\b"
    # A day said to be what is due: "the deadline is 15 December".
    r"|\b(?:is|are)\s+(?=[0-9])"
    # An appointment had, a visit or a meeting to come: "I have a dentist appointment on 9
    # December", "the plumber comes on Friday", "there is a fire drill on Wednesday", "Tom
    # is back on the 9th", "Mia gets married on 3 June".
    rf"|\b(?:(?:have|has)\s+(?:a|an|my|our|his|her|their)|there\s+(?:is|are)\s+(?:a|an))"
    rf"\s+(?:[\w-]+\s+){{0,2}}?(?:{_EVENT_NOUNS})\b"
    r"|\b(?:comes|gets\s+married|meets|visits|(?:is|are|comes|come)\s+back)\b"
    r"|\b(?:we|they|you|i)\s+meet\b|\b(?:booked|scheduled|planned)\s+(?:for|on)\b"
    # What is to be done, or reminded of: "the user needs to renew the passport on 20 May",
    # "remind me to call mum on Sunday" ("that reminds me of the picnic" is none).
    r"|\b(?:needs?|ha(?:ve|s)|got)\s+to\b|\bmust\b|\bremind\s+(?:[\w-]+\s+){1,2}?to\b"
    # "we should ship on Friday" (it was the Friday gone), not "should have shipped".
    r"|\bshould\b(?!\s+have\b)"
    r"|\breminder\b"
    # An errand told by its verb, opening the sentence: "Call the plumber on Monday", "Pay
    # the rent on the 20th" (a to-do's day, which was the one gone); not a call had ("Call
    # with Ana on Friday", "Call on Friday went well").
    # After a list's label too: "Note: call the plumber on Monday", "TODO: pay the rent".
    r"|^\W*(?:(?:note|todo|to-do|to\s+do|tasks?)\s*:\s*)?(?:please\s+)?"
    r"(?:call|phone|email|e-mail|buy|pay|send|renew|submit|cancel|bring"
    r"|collect|confirm|pick\s+up|drop\s+off|follow\s+up\s+with)\b(?!-)"
    # nor a name or a noun it begins ("Call of Duty", "Pay rise", "Cancel culture").
    r"(?!\s+(?:with|from|on|at|in|is|was|went|about|of|rise|raise|cut|culture)\b)"
    # An errand whose verb is also a noun, told with its object's determiner: "Book a table
    # by Thursday", "Order the cake by Friday", "Get the car serviced on Friday" (a to-do's
    # day: no day, or the one gone); not "Book club on Friday", "Order 17 shipped on Friday".
    r"|^\W*(?:(?:note|todo|to-do|to\s+do|tasks?)\s*:\s*)?(?:please\s+)?"
    r"(?:book|order|reserve|return|schedule|get|fix|file|sign|clean|print|finish)"
    r"\s+(?:a|an|the|my|our|his|her|their|your|some|this|that|these|those|it|them)\b"
    # Being somewhere, told in the present: "I'm in Rome from 3 to 10 June", "Sam is flying
    # to Lisbon on Tuesday", "the user is in Rome from 10 to 14 December" (notes name whom
    # they tell of); "'s" after a pronoun only ("Sam's flying lessons" is no plan).
    r"|\b(?:i['\u2019]m|i\s+am|(?:we|they|you)['\u2019]re|(?:he|she)['\u2019]s|is|are)"
    r"\s+(?:in|at|away|off|out|visiting|staying|travell?ing|flying|driving|working|hosting"
    # Booked told of a person: "I'm booked on the flight on Friday", "she's scheduled".
    r"|booked|scheduled|due)\b"
    # A plan moved to a new day, though told in the past tense: "the offsite was moved to 18
    # December", "the call is postponed until Friday" ("we moved to Berlin" is no plan).
    r"|\b(?:was|were|is|are|has\s+been|have\s+been|got|been|be)\s+(?:moved|rescheduled"
    r"|postponed|pushed\s+back|delayed|brought\s+forward|put\s+off|bumped|extended)"
    r"\s+(?:to|until|till|for)\b"
    r"|\b(?:rescheduled|postponed)\s+(?:to|until|till|for)\b"
    # Someone moved an event, or moved it to a day: "the dentist moved my appointment to
    # Thursday", "they pushed the meeting back to Monday", "moved it to Friday", "dinner got
    # pushed to Saturday" ("we moved the sofa to …" or "to Berlin" is none).
    r"|\b(?:moved|rescheduled|postponed|pushed|delayed|brought|put|shifted|bumped|extended)\s+"
    rf"(?:(?:the|my|our|his|her|their|your|a|an)\s+)?(?:[\w-]+\s+){{0,2}}?(?:{_EVENT_NOUNS})"
    r"\s+(?:back\s+|forward\s+|off\s+)?(?:to|until|till|for)\b"
    # "The launch slipped to March 17", "the release slips to …", "was bumped", "extended".
    r"|\b(?:(?:was|were|got|been|be)\s+)?(?:moved|rescheduled|postponed|pushed|delayed"
    r"|shifted|slipped|slips|slid|bumped|extended)\s+(?:[\w'\u2019-]+\s+){0,4}?(?:back\s+|forward\s+|off\s+)?(?:to|until|till|for)\s+"
    r"(?=(?:(?:next|this|the|on)\s+)?(?:\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?)?"
    # Not a name's: "moved my things to May's flat" moved nothing to May.
    rf"(?:{_DAY_NAMES})\b(?!['\u2019]s\b))",
    re.IGNORECASE,
)
# The present progressive, said of a day: "the user is meeting Ana on 9 May", "I'm seeing the
# doctor on Friday", "we are having a party on Saturday"; not "still" so ("I'm still thinking
# about the concert on 28 December" tells of one gone), nor of a day said of a thing it comes
# from (``_TOLD_OF``).
_PROGRESSIVE = _lazy(
    r"\b(?:am|is|are|(?:i|we|they|you)['\u2019](?:m|re)|(?:he|she|it|that)['\u2019]s)"
    rf"\s+(?:(?:also|just|not|finally|now)\s+)?(?!(?:{_NOT_PROGRESSIVE})\b)[a-z]+ing\b"
    # A plan kept ("we're still meeting on Friday", "still on for Friday"); "I'm still
    # thinking about the concert on 28 December" tells of one gone.
    r"|\b(?:am|is|are|(?:i|we|they|you)['\u2019](?:m|re)|(?:he|she|it|that)['\u2019]s)"
    r"\s+still\s+(?:on\b|meeting|coming|seeing|visiting|flying|leaving|driving"
    r"|travell?ing|hosting|playing|getting\s+together)"
    # "is" contracted after a name or a noun ("Sam's coming Thursday", "my sister's arriving
    # Monday"): only a verb of coming or going, and not one that names a thing ("Sam's flying
    # lessons", "Sam's leaving party", "Sam's coming-out"), which a pronoun's "'s" never does.
    r"|\b\w+['\u2019]s\s+(?:(?:also|just|finally|now)\s+)?(?:coming|arriving|leaving|going"
    r"|heading|visiting|flying|driving|staying|returning|moving)\b(?!-)"
    r"(?!\s+(?:of|out|party|parties|do|lessons?|tests?|hours|licen[cs]es?|school|instructor"
    r"|exams?|range|age|plans?|notes|schedule|time|days?|away\s+part(?:y|ies))\b)",
    re.IGNORECASE,
)
# A weekday's mornings or evenings, after it or after a second one ("Maya runs on Tuesday and
# Thursday mornings"): every such morning, no one day (of that weekday alone: "I met Maya on
# Tuesday and she swims on Thursday mornings" met her on a Tuesday).
_PARTS_OF_DAYS = _lazy(
    r"(?:\s*(?:,|and|or|&)\s*(?:mon|tues|wednes|thurs|fri|satur|sun)day)*"
    r"\s+(?:mornings|afternoons|evenings|nights)\b",
    re.IGNORECASE,
)
# Cues of a plan that tell of a finished event as often ("Dinner with Ana on 30 December: lovely
# evening"): a day of a month they name is the nearer of the one gone and the one to come
# (``_day_direction``), and none said of a thing it comes from (``_TOLD_OF``) is a plan's.
_WEAK_PLAN = _lazy(
    # Meals, lessons, work had on a day: "Sam has lunch with Ana on Friday".
    r"\b(?:have|has)\s+(?:lunch|dinner|breakfast|brunch|class|classes|practice|school"
    r"|training|rehearsal|therapy|work)\b"
    # A note of an event, without a verb: "Lunch with Ana on 9 May.", "Dentist on Friday at
    # 10", "Team offsite on 20 May" (a past tense in it tells of one gone).
    r"|^\W*(?:(?:the|a|an|my|our|his|her|their|team|[\w-]+['\u2019]s)\s+)?"
    rf"(?:[\w-]+\s+){{0,2}}(?:{_EVENT_NOUNS})s?\s+(?:with|on|at|in|for|this|next|tomorrow|tonight"
    r"|\d)\b",
    re.IGNORECASE,
)
# An outcome told after a note's day, past a colon or a dash ("Dentist on Friday: no
# cavities!", "Dinner with Ana on Friday - lovely evening"): the event was, though the note
# has no verb. Only words that tell how it went, ending the clause ("Party on Saturday: great
# food and music" may be the plan's), though an emoji or a smiley may follow ("no cavities
# \U0001f389", "all clear :)"). A dash may be set close ("Friday\u2014all clear"); a hyphen
# set close joins words.
_OUTCOME = _lazy(
    r"(?::|\s[-\u2013\u2014]|[\u2013\u2014])\s*(?:no\s+(?:cavities|issues|problems|complications|injuries"
    r"|fractures|surprises|concerns)|all\s+(?:clear|good|went\s+well)|clean\s+bill\s+of\s+health"
    r"|nailed\s+it|great\s+fun|(?:a\s+)?(?:(?:really|very|so)\s+)?(?:great|good|lovely|fun"
    r"|wonderful|fantastic|amazing|awesome|brilliant|terrible|awful|horrible)\s+(?:time|evening"
    r"|night|day|afternoon|morning)|(?:a|an)\s+(?:[\w-]+\s+)?(?:success|blast|disaster|flop))"
    # Emoji (with their joiners and variation selectors), not any symbol ("no cavities \u20ac"),
    # and not crossed fingers or folded hands: "no cavities \U0001f91e" hopes for it.
    r"(?:\s*(?:[:;]-?[)D]|[\u2600-\u27bf\U0001f300-\U0001f64e\U0001f650-\U0001f91d"
    r"\U0001f91f-\U0001faff\ufe0f\u200d]))*\s*(?:[.!;)]|$)",
    re.IGNORECASE,
)
# A thing booked, reserved or scheduled, with its day ("Maya booked a flight to Osaka on 12
# December", said in November): the day is the flight's, no booking's, and the nearer of the
# one gone and the one to come.
_ARRANGED = _lazy(
    r"\b(?:booked|reserved|scheduled|arranged|got\s+tickets|bought\s+tickets|signed\s+up"
    r"|registered)\b",
    re.IGNORECASE,
)
# A week or weekend to come planned, in the past: "We planned a trip for the coming week"
# arranged it, as "booked" does (``_told_in_the_past_of_one_to_come``). Only there: "I
# planned the trip on Sunday" may tell of the day of the planning.
_PLANNED = _lazy(r"\b(?:planned|organi[sz]ed)\b", re.IGNORECASE)
# Booked told in the present: the thing's day is ahead however far ("the surgery is booked for
# 15 September", said in March), where "I booked the flight on 30 December" tells of the day
# of the booking.
_BOOKED_NOW = _lazy(
    r"\b(?:is|are|am|(?:i|we|they|you)['\u2019](?:m|re)|(?:he|she|it)['\u2019]s)\s+"
    r"(?:booked|reserved|scheduled|arranged|registered|signed\s+up)\b",
    re.IGNORECASE,
)
# What is to be done or comes: a record of a day it names is still to be sent, written, met;
# a deadline said with it is one to come (a question reads it so too).
_DUE = _lazy(DUE_WORDS, re.IGNORECASE)
#: How far ahead a day of a month told with no cue of a plan nor a past tense may be read.
_NO_CUE_AHEAD = timedelta(days=92)
# A day said of a thing something comes from: "recovering from the party on 31 December", "the
# photos from the reunion on 28 December" (what the sentence's verb does is not on that day).
_TOLD_OF = _lazy(
    r"\bfrom\s+(?:the|my|our|his|her|their|that|this|those|these|a|an)\s+"
    r"(?:[\w'\u2019-]+\s+){1,3}(?:on\s+)?$",
    re.IGNORECASE,
)
# A record of a day ("wedding photos from 3 June", "the report of 3 June", "minutes of 2
# May"): of a day gone, whatever the tense.
_RECORD_OF = _lazy(
    r"\b(?:photos?|pictures?|pics|notes|minutes|recordings?|videos?|reports?|receipts?"
    r"|invoices?|emails?|letters?|messages?|logs?|slides|transcripts?|summary|summaries)"
    r"\s+(?:from|of|dated)\s+(?:the\s+)?$",
    re.IGNORECASE,
)
# How far before a day ``_TOLD_OF`` and ``_RECORD_OF`` are looked for (both end at it).
_OF_REACH = 120
# Present perfect: the state runs up to now ("I've lived here for five years").
_PERFECT = _lazy(
    r"(?:\b(?:have|has|haven['\u2019]?t|hasn['\u2019]?t)|['\u2019]ve|\w['\u2019]s)\s+"
    r"(?:(?:not|never|always|just|already|only|really|actually|also|now|probably)\s+)*"
    r"(?:been|had|known|got|gotten|done|seen|taken|gone|grown|kept|held|run|taught|found|felt"
    r"|made|spent|\w+ed)\b",
    re.IGNORECASE,
)
# "is closed", "are booked", "'s delayed": a state told in the present, no past tense.
_PRESENT_STATE = _lazy(
    r"(?:\b(?:is|are|am|be|being|remains?|stays?)|['\u2019](?:s|re|m))\s+"
    r"(?:(?:not|still|fully|completely|temporarily)\s+)?\w+ed\b",
    re.IGNORECASE,
)
# Words after which an expression is not when the event happened ("until May", "every summer").
_BLOCKERS = _lazy(
    r"\b(?:until|till|til|by|before|after|through|thru|throughout|every|each|per)\s*$",
    re.IGNORECASE,
)
# A day with a month and neither ordinal nor year ("May 5", "5 may") is read only after one of
# these: "I may 5x it", "we march 5 miles" are not dates.
_DATE_CUE_BEFORE = _lazy(
    r"(?:\b(?:on|since|from|to|and|in|of|the|till|until|by|before|after|through)|,"
    # "the release is planned for 15 May", "booked for 13 May".
    r"|\b(?:planned|booked|scheduled|set|due|moved|postponed|rescheduled)\s+for)\s*$",
    re.IGNORECASE,
)
_SENTENCE_MARKS = ".!?;\n"
_SENTENCE_BREAK = _lazy(r"[.!?;\n]")
#: A full stop that ends no sentence: inside a word or a number ("10.30", "a.m", "v2.1"), or
#: after a title ("Dr. Kim"). Read as an end, "an appointment with Dr. Kim on Monday" lost
#: its plan's words ("has an appointment"), and Monday was the one gone.
_TITLE = _lazy(
    r"(?:^|(?<=[\s(\[\"']))(?:dr|mr|mrs|ms|mx|st|prof|rev|gen|col|capt|lt|sgt|mt)$",
    re.IGNORECASE,
)
#: ... and a short form, when the sentence goes on in lower case or a digit ("10 a.m. on
#: Tuesday"; "at 10 a.m. I have a dentist appointment" is two sentences).
_SHORT_FORM = _lazy(
    r"(?:^|(?<=[\s(\[\"']))(?:jr|sr|ave|rd|vs|approx|appt|dept|tel|ext|ref|fig|vol|cf|a\.m"
    r"|p\.m|e\.g|i\.e)$",
    re.IGNORECASE,
)


#: An initial ("A. Patel", "J. Smith"): a capital alone, not after a word it grades or names
#: ("I got a B.", "Plan B.", "vitamin C.").
_INITIAL = _lazy(
    r"(?<!\ba\s)(?<!\ban\s)(?<!\bthe\s)(?<!\bplan\s)(?<!\bgrade\s)(?<!\bvitamin\s)"
    r"(?<!\btype\s)(?<!\boption\s)(?<!\bpart\s)(?<!\bstep\s)(?<!\bclass\s)"
    r"(?:^|(?<=\s))[A-Z]$",
    re.IGNORECASE,
)
#: A weekday or a month named after a short form: "at 9 a.m. Tuesday" goes on.
_DAY_NAME = _lazy(
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct"
    r"|nov|dec)[a-z]*\b",
    re.IGNORECASE,
)


def _ends(text: str, at: int) -> bool:
    """Whether the mark at ``at`` ends a sentence (a full stop may not: inside a word or a
    number, after a title, or after a short form the sentence goes on from)."""
    if text[at] != ".":
        return True
    after = text[at + 1 : at + 2]
    if after and not after.isspace():
        return not (after.isalnum() or after == ",")  # '."' and '.)' end one
    before = text[max(0, at - 8) : at]
    if _TITLE.search(before):
        return False
    if _INITIAL.search(text[max(0, at - 20) : at]):
        return False
    if _SHORT_FORM.search(before):
        goes_on = text[at + 1 :].lstrip()
        return not (goes_on[:1].islower() or goes_on[:1].isdigit() or _DAY_NAME.match(goes_on))
    return True


# How far back a cue or blocker word is looked for.
_LOOK_BACK = 40

_Span = tuple[datetime, datetime, Precision]


# --- calendar arithmetic ----------------------------------------------------------------------


def _date(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def _days(start: datetime, count: int = 1) -> _Span:
    return start, start + timedelta(days=count), "day"


def _week(day: datetime) -> _Span:
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=7), "week"


def _weekend(saturday: datetime) -> _Span:
    return saturday, saturday + timedelta(days=2), "weekend"


def _this_saturday(today: datetime) -> datetime:
    """The Saturday of the Monday-to-Sunday week holding ``today``."""
    return today - timedelta(days=today.weekday()) + timedelta(days=5)


def _weekday_before(today: datetime, weekday: int, *, or_today: bool) -> datetime:
    """The latest ``weekday`` (0 Monday) before ``today``, or on it when ``or_today``."""
    back = (today.weekday() - weekday) % 7 if or_today else (today.weekday() - weekday - 1) % 7 + 1
    return today - timedelta(days=back)


def _weekday_after(today: datetime, weekday: int, *, or_today: bool) -> datetime:
    """The first ``weekday`` (0 Monday) after ``today``, or on it when ``or_today``."""
    ahead = (weekday - today.weekday()) % 7 if or_today else (weekday - today.weekday() - 1) % 7 + 1
    return today + timedelta(days=ahead)


def _add_months(year: int, month: int, count: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + count
    return index // 12, index % 12 + 1


def _month(year: int, month: int) -> _Span:
    end_year, end_month = _add_months(year, month, 1)
    return _date(year, month, 1), _date(end_year, end_month, 1), "month"


def _year(year: int) -> _Span:
    return _date(year, 1, 1), _date(year + 1, 1, 1), "year"


def _season(name: str, year: int) -> _Span:
    start, end = season_window(name, year)
    return start, end, "season"


def _shift(moment: datetime, unit: str, count: int) -> datetime:
    """``moment`` moved by ``count`` units (negative: back), months clamped to the month's end."""
    if unit == "minute":
        return moment + timedelta(minutes=count)
    if unit == "hour":
        return moment + timedelta(hours=count)
    if unit == "day":
        return moment + timedelta(days=count)
    if unit == "week":
        return moment + timedelta(weeks=count)
    if unit == "decade":
        unit, count = "year", 10 * count
    year, month = _add_months(moment.year, moment.month, count * (12 if unit == "year" else 1))
    return moment.replace(year=year, month=month, day=min(moment.day, monthrange(year, month)[1]))


def _unit_around(moment: datetime, unit: str) -> _Span:
    """The calendar unit (day, Monday-to-Sunday week, month, year) holding ``moment``; for a
    decade, the year ("a decade ago" names a year, not the 2010s)."""
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit in ("minute", "hour", "day"):
        return _days(day)
    if unit == "week":
        return _week(day)
    if unit == "month":
        return _month(day.year, day.month)
    return _year(day.year)


def _count(words: str) -> int:
    words = " ".join(words.casefold().split())
    return COUNTS[words] if words in COUNTS else int(words)


def _unit(match: re.Match[str]) -> str:
    return match["unit"].casefold()


# --- the sentence around an expression --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Context:
    """The text being read, when it was said, and what its sentences say of time.

    A text of thousands of expressions ("on Saturday on Saturday ...", up to the 32,000
    characters a memory may hold) is read in linear time: the sentence marks are found once,
    and each sentence's tense is read once, not once per expression in it.
    """

    text: str
    said_at: datetime
    today: datetime
    marks: tuple[int, ...] = ()  # where the sentence marks are, in order
    tenses: dict[tuple[int, str], bool] = field(default_factory=dict)
    stated: tuple[datetime, ...] = ()  # days the memory states outright, aware UTC
    outcomes: dict[int, int] = field(default_factory=dict)  # sentence start -> ``_OUTCOME``'s

    @classmethod
    def of(cls, text: str, said_at: datetime, stated: Sequence[datetime] = ()) -> _Context:
        today = said_at.replace(hour=0, minute=0, second=0, microsecond=0)
        marks = tuple(m.start() for m in _SENTENCE_BREAK.finditer(text) if _ends(text, m.start()))
        days = tuple(
            moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
            for moment in stated
        )
        return cls(text, said_at, today, marks, stated=days)

    def stated_year(self, month: int, day: int | None) -> int | None:
        """The year of the first stated day that falls on ``day`` of ``month`` (in
        ``month`` when ``day`` is None), or None. A stated time is kept in UTC: midnight of
        11 June at +02:00 is 10 June 22:00Z, so a time that is no UTC midnight also counts
        on the day it is 14 hours later (east of UTC, the local day begins before the UTC
        one; west of it, its midnight is on the UTC day already)."""
        for shift in (0, 14):
            for stated in self.stated:
                if shift and stated == stated.replace(hour=0, minute=0, second=0, microsecond=0):
                    continue
                moment = stated + timedelta(hours=shift)
                if moment.month == month and (day is None or moment.day == day):
                    return moment.year
        return None

    def _bounds(self, match: re.Match[str]) -> tuple[int, int]:
        before = bisect_left(self.marks, match.start())
        after = bisect_left(self.marks, match.end())
        left = self.marks[before - 1] + 1 if before else 0
        right = self.marks[after] if after < len(self.marks) else len(self.text)
        return left, right

    def _says(self, match: re.Match[str], tense: str, read: Callable[[str], bool]) -> bool:
        left, right = self._bounds(match)
        key = (left, tense)
        if key not in self.tenses:
            self.tenses[key] = read(self.text[left:right])
        return self.tenses[key]

    def future(self, match: re.Match[str]) -> bool:
        return self._says(match, "future", lambda s: bool(_FUTURE.search(_PAST_PLAN.sub(" ", s))))

    def past(self, match: re.Match[str]) -> bool:
        return self._says(match, "past", lambda s: bool(_PAST.search(s)))

    def future_besides(self, match: re.Match[str]) -> bool:
        """A future cue in the sentence outside ``match`` ("upcoming" in "the upcoming week"
        is no tense of the sentence's)."""
        left, right = self._bounds(match)
        rest = f"{self.text[left : match.start()]} {self.text[match.end() : right]}"
        return bool(_FUTURE.search(_PAST_PLAN.sub(" ", rest)))

    def plans(self, match: re.Match[str]) -> bool:
        return self.firm_plan(match) or self.weak_plan(match)

    def firm_plan(self, match: re.Match[str]) -> bool:
        """A plan told in the present (``_PRESENT_PLAN``, or ``_PROGRESSIVE`` of the day)."""
        if self._says(match, "plans", lambda s: bool(_PRESENT_PLAN.search(s))):
            return True
        progressive = self._says(match, "progressive", lambda s: bool(_PROGRESSIVE.search(s)))
        return progressive and not self.told_of(match)

    def weak_plan(self, match: re.Match[str]) -> bool:
        """A cue of ``_WEAK_PLAN`` in the sentence, the day not said of a thing told of nor
        followed by how it went (``reported``)."""
        weak = self._says(match, "weak plan", lambda s: bool(_WEAK_PLAN.search(s)))
        return weak and not self.told_of(match) and not self.reported(match)

    def reported(self, match: re.Match[str]) -> bool:
        """An outcome (``_OUTCOME``) follows the day in its sentence: "Dentist on Friday: no
        cavities!" tells of the Friday gone. Found once per sentence, as its tenses are."""
        left, right = self._bounds(match)
        if left not in self.outcomes:
            found = _OUTCOME.search(self.text, left, right)
            self.outcomes[left] = -1 if found is None else found.start()
        return self.outcomes[left] >= match.end()

    def told_of(self, match: re.Match[str]) -> bool:
        """The day is said of a thing something comes from, or of a record of what was
        (``came_from``, ``record_of``)."""
        return self.came_from(match) or self.record_of(match)

    def came_from(self, match: re.Match[str]) -> bool:
        """The day is of a thing something comes from (``_TOLD_OF``): "the photos from the
        wedding on 3 June" are to be sent, the wedding was."""
        return bool(_TOLD_OF.search(self.text, *self._just_before(match)))

    def record_of(self, match: re.Match[str]) -> bool:
        """The day is of a record of what was (``_RECORD_OF``): "the minutes of 2 May"."""
        return bool(_RECORD_OF.search(self.text, *self._just_before(match)))

    def _just_before(self, match: re.Match[str]) -> tuple[int, int]:
        """Where the sentence's last ``_OF_REACH`` characters before ``match`` are: what a
        day is of ends just before it, and a search of all the words before each day of a
        sentence of thousands took quadratic time."""
        left, _ = self._bounds(match)
        return max(left, match.start() - _OF_REACH), match.start()

    def booked_now(self, match: re.Match[str]) -> bool:
        """Booked told in the present ("the surgery is booked for", "we're scheduled to")."""
        return self._says(match, "booked now", lambda s: bool(_BOOKED_NOW.search(s)))

    def arranged(self, match: re.Match[str]) -> bool:
        """The day is of a thing booked (``_ARRANGED``), not of the booking."""
        return self._says(match, "arranged", lambda s: bool(_ARRANGED.search(s)))

    def past_besides_arranging(self, match: re.Match[str]) -> bool:
        """A past tense other than the booking's ("we arranged it and the party was on …")."""
        return self._says(
            match, "past besides", lambda s: bool(_PAST.search(_ARRANGED.sub(" ", s)))
        )

    def past_besides_planning(self, match: re.Match[str]) -> bool:
        """``past_besides_arranging``, planning aside too ("we planned a trip for …")."""
        return self._says(
            match,
            "past besides planning",
            lambda s: bool(_PAST.search(_PLANNED.sub(" ", _ARRANGED.sub(" ", s)))),
        )

    def due(self, match: re.Match[str]) -> bool:
        """A cue of what is to be done (``_DUE``): "the report of 10 December is due"."""
        return self._says(match, "due", lambda s: bool(_DUE.search(s)))

    def habitual(self, match: re.Match[str]) -> bool:
        if _PARTS_OF_DAYS.match(self.text, match.end()):
            return True
        return self._says(match, "habitual", lambda s: bool(_HABITUAL.search(s)))

    def told_past(self, match: re.Match[str]) -> bool:
        """``past``, a plan's own words aside ("is booked", "is planned" are no past tense)."""
        return self._says(
            match, "told past", lambda s: bool(_PAST.search(_PRESENT_PLAN.sub(" ", s)))
        )

    def told_past_of_a_state(self, match: re.Match[str]) -> bool:
        """``told_past``, a state told in the present aside ("the office is closed until
        Monday" is no past tense)."""
        return self._says(
            match,
            "told past of a state",
            lambda s: bool(_PAST.search(_PRESENT_STATE.sub(" ", _PRESENT_PLAN.sub(" ", s)))),
        )

    def ahead(self, match: re.Match[str]) -> bool:
        """The sentence looks ahead, or tells of a plan in the present and of no past ("my
        flight leaves on Friday", "I'm in Rome from Monday to Wednesday", "the appointment
        is booked for Friday"): a weekday it names is one to come."""
        return self.future(match) or (self.plans(match) and not self.told_past(match))

    def perfect(self, match: re.Match[str]) -> bool:
        return self._says(match, "perfect", lambda s: bool(_PERFECT.search(s)))


Mode = Literal["past", "future", "since", "last", "next", "this"]


def _direction(match: re.Match[str], ctx: _Context) -> Mode | None:
    """Past unless the sentence speaks of the future; None for a habit ("usually in May")."""
    if ctx.habitual(match):
        return None
    return "future" if ctx.future(match) else "past"


# --- dates: a day, a month or a year, with or without its year ---------------------------------


@dataclass(frozen=True, slots=True)
class _Date:
    year: int | None
    month: int | None  # None: the whole year
    day: int | None  # None: the whole month
    weekday: int | None = None  # said with the day ("Tuesday 14 May"), 0 Monday


def _parse_date(match: re.Match[str]) -> _Date:
    groups = match.groupdict()
    year = int(groups["y"]) if groups.get("y") else None
    if groups.get("mn"):
        month: int | None = int(groups["mn"])
    elif groups.get("m"):
        month = MONTHS[groups["m"].casefold()]
    else:
        month = None
    day = int(groups["d"]) if groups.get("d") else None
    weekday = _WEEKDAYS[groups["wd"].casefold()] if groups.get("wd") else None
    return _Date(year, month, day, weekday)


def _date_span(date: _Date, ctx: _Context, mode: Mode) -> _Span | None:
    """The span ``date`` names. A missing year is, where the words leave the direction to
    guess (``mode`` past, future or since), the one a weekday said with the day gives
    (``_weekday_year``), else that of a day the memory states in that month or on that day
    (``_Context.stated``); otherwise, and for last / next / this, it is chosen by ``mode``."""
    if date.year is not None:
        if date.month is None:
            return _year(date.year)
        if date.day is None:
            return _month(date.year, date.month)
        return _days(_date(date.year, date.month, date.day))
    if date.month is None:
        return None
    if mode in ("past", "future", "since"):
        year = _weekday_year(date, ctx)
        if year is None:
            year = ctx.stated_year(date.month, date.day)
        if year is not None:
            return _date_span(_Date(year, date.month, date.day), ctx, mode)
    this = ctx.said_at.year
    if date.day is None:
        month = date.month
        current = ctx.said_at.month
        year = {
            "past": this if month <= current else this - 1,
            "future": this if month >= current else this + 1,
            "since": this if _date(this, month, 1) < ctx.said_at else this - 1,
            "last": this - 1 if month >= current else this,
            "next": this + 1 if month <= current else this,
            "this": this,
        }[mode]
        return _month(year, month)
    # A day without a year: the nearest such day in the direction asked (a 29 February may be
    # years away, and 31 April is never).
    step = 1 if mode in ("future", "next") else -1
    for offset in range(9):
        year = this + step * offset
        if not 1 <= year <= 9999 or date.day > monthrange(year, date.month)[1]:
            continue
        day = _date(year, date.month, date.day)
        if mode in ("future", "next") and day >= ctx.today + timedelta(days=mode == "next"):
            return _days(day)
        if mode in ("past", "last") and day <= ctx.today - timedelta(days=mode == "last"):
            return _days(day)
        if mode == "since" and day < ctx.said_at:
            return _days(day)
    return None


#: How many years either side of when it was said a weekday may move a date's year.
_WEEKDAY_YEARS = 2


def _weekday_year(date: _Date, ctx: _Context) -> int | None:
    """The year, of those within ``_WEEKDAY_YEARS`` of ``said_at``, in which ``date`` (a day
    and month) falls on the weekday said with it, the nearest to ``said_at``; None without
    a weekday or when none fits. "Tuesday 14 May" said on 6 May 2024 is eight days ahead,
    though the sentence does not look ahead: 14 May 2023 was a Sunday. In five years
    running a date never falls on one weekday twice (each year moves it a day, two past a
    29 February), so at most one year fits."""
    if date.weekday is None or date.month is None or date.day is None:
        return None
    this = ctx.said_at.year
    fitting = [
        day
        for year in range(this - _WEEKDAY_YEARS, this + _WEEKDAY_YEARS + 1)
        if 1 <= year <= 9999 and date.day <= monthrange(year, date.month)[1]
        for day in [_date(year, date.month, date.day)]
        if day.weekday() == date.weekday
    ]
    if not fitting:
        return None
    return min(fitting, key=lambda day: abs(day - ctx.today)).year


#: Months whose names are no other word: "15 December" needs no cue ("the deadline is 15
#: December"); "5 may", "3 march", "5 June", "3 April" (June, April, August, July: names)
#: and the short forms do ("I called April 3 times").
_PLAIN_MONTHS = frozenset(("january", "february", "september", "october", "november", "december"))


def _day_needs_cue(match: re.Match[str], ctx: _Context) -> bool:
    """A day and month with neither ordinal, year nor weekday need a cue word before them,
    unless the month's name is no other word."""
    groups = match.groupdict()
    if groups.get("o") or groups.get("y") or groups.get("wd") or groups.get("on"):
        return False
    if (groups.get("m") or "").casefold() in _PLAIN_MONTHS:
        return False
    if groups.get("of"):
        return False
    return not _DATE_CUE_BEFORE.search(ctx.text[max(0, match.start() - _LOOK_BACK) : match.start()])


def _resolve_date(match: re.Match[str], ctx: _Context) -> _Span | None:
    if match.groupdict().get("d") and _day_needs_cue(match, ctx):
        return None
    date = _parse_date(match)
    if date.year is not None:
        return _date_span(date, ctx, "past")
    mode = _day_direction(date, match, ctx)
    return _date_span(date, ctx, mode) if mode else None


def _day_direction(date: _Date, match: re.Match[str], ctx: _Context) -> Mode | None:
    """``_direction``, but in a plan told in the present a day later this year is ahead ("my
    flight leaves on 3 June", said in May), and so is a day gone this year when next year's
    is nearer ("Mia moves to Geneva on 3 January", said on 3 December; "I'm in Rome from 3
    to 10 June", said on the 12th, is the stay just gone)."""
    mode = _direction(match, ctx)
    if mode != "past" or date.month is None:
        return mode
    if date.day is None:
        return _month_direction(date.month, match, ctx, mode)
    if ctx.came_from(match) or (ctx.record_of(match) and not ctx.due(match)):
        return mode
    arranged = ctx.arranged(match)
    plan = arranged or ctx.plans(match)
    if arranged or not plan:
        # Booked: the day is the thing's, unless a past tense of something else tells of it
        # ("the party was on 10 December"); no plan: only with no past tense at all.
        if ctx.past_besides_arranging(match) if arranged else ctx.past(match):
            return mode
    elif ctx.told_past(match):
        return mode
    today = ctx.today
    later = (date.month, date.day) > (today.month, today.day)
    if later and plan and (not arranged or ctx.booked_now(match)) and ctx.firm_plan(match):
        return "future"
    try:
        # The day gone and the one to come, of this year and the one before or after.
        gone, ahead = (
            _date(today.year + k, date.month, date.day) for k in ((-1, 0) if later else (0, 1))
        )
    except ValueError:  # 29 February, in a year without one
        return mode
    # A plan's day gone this year is next year's when that is nearer; a weak cue's day
    # (``_WEAK_PLAN``) is whichever is nearer ("I'm still thinking about the concert on 28
    # December", said on 3 January, was not the December to come). Told with no cue of a
    # plan, only a day within a season ahead: a past tense not known as one ("Maya fell
    # on 20 August", said in March) tells of one gone.
    if not plan and ahead - today > _NO_CUE_AHEAD:
        return mode
    return "future" if ahead - today < today - gone else mode


def _month_direction(month: int, match: re.Match[str], ctx: _Context, mode: Mode) -> Mode:
    """A month without a year, told in no past tense, is the nearer of the one gone and the
    one to come, as a day of a month is (``_day_direction``): "the next visit is in June",
    said in May, was the June a year back. With no cue of a plan, only a month beginning
    within a season ahead ("Concert in August", said in May); this month stays this one."""
    if ctx.came_from(match) or (ctx.record_of(match) and not ctx.due(match)):
        return mode
    plan = ctx.arranged(match) or ctx.plans(match)
    if ctx.told_past(match) if plan else ctx.past(match):
        return mode
    today = ctx.today
    if month == today.month:
        return mode
    later = month > today.month
    gone = _date(today.year - (1 if later else 0), month, 1)
    ahead = _date(today.year + (0 if later else 1), month, 1)
    if not plan and ahead - today > _NO_CUE_AHEAD:
        return mode
    return "future" if ahead - today < today - gone else mode


_CUE_MODES: dict[str, Mode] = {"last": "last", "next": "next", "this": "this", "back in": "past"}
_SEASON_MODES: dict[str, Mode] = {"last": "last", "this past": "last", "next": "next"}


def _resolve_cued_month(match: re.Match[str], ctx: _Context) -> _Span | None:
    cue = " ".join(match["cue"].casefold().split())
    if cue == "this" and match["m"].casefold() == "may":
        return None  # "this may be", "this may work"
    date = _parse_date(match)
    mode = _CUE_MODES.get(cue)
    if mode is None:
        mode = _direction(match, ctx)
        if mode == "past" and date.year is None and date.month is not None:
            mode = _month_direction(date.month, match, ctx, mode)
    return _date_span(date, ctx, mode) if mode else None


# --- relative words ---------------------------------------------------------------------------


def _resolve_words(match: re.Match[str], ctx: _Context) -> _Span | None:
    words = " ".join(match[0].casefold().split()).removeprefix("the ")
    offset = {
        "day before yesterday": -2,
        "yesterday": -1,
        "last night": -1,
        "day after tomorrow": 2,
        "tomorrow": 1,
    }.get(words, 0)
    return _days(ctx.today + timedelta(days=offset))


def _resolve_relative_unit(match: re.Match[str], ctx: _Context) -> _Span | None:
    which = " ".join(match["which"].casefold().split())
    which = {
        "earlier in the": "earlier this",
        "later in the": "later this",
        "this upcoming": "this coming",  # "this upcoming week", as "this coming week"
        "the coming": "this coming",  # "until the coming weekend" (``_UNTIL_NEXT_UNIT``)
        "the upcoming": "this coming",
    }.get(which, which)
    unit = match["unit"].casefold()
    today = ctx.today
    step = {"last": -1, "this past": -1, "next": 1, "this coming": 1}.get(which, 0)
    if unit == "weekend":
        if which == "this coming":
            return _coming_weekend(match, ctx)
        return _weekend(_this_saturday(today) + timedelta(days=7 * step))
    if which == "this coming" and _told_in_the_past_of_one_to_come(match, ctx):
        return None  # "I was nervous about this coming week", as about "the week ahead"
    if unit == "week":
        span = _week(today + timedelta(days=7 * step))
    elif unit == "month":
        span = _month(*_add_months(today.year, today.month, step))
    else:
        span = _year(today.year + step)
    start, end, precision = span
    if which == "earlier this":
        return start, today + timedelta(days=1), precision
    if which == "later this":
        return today, end, precision
    return span


def _resolve_before_last(match: re.Match[str], ctx: _Context) -> _Span | None:
    unit = _unit(match)
    today = ctx.today
    if unit == "weekend":
        return _weekend(_this_saturday(today) - timedelta(days=14))
    if unit == "week":
        return _week(today - timedelta(days=14))
    if unit == "month":
        return _month(*_add_months(today.year, today.month, -2))
    return _year(today.year - 2)


def _resolve_ago(match: re.Match[str], ctx: _Context) -> _Span | None:
    unit = _unit(match)
    return _unit_around(_shift(ctx.said_at, unit, -_count(match["n"])), unit)


def _resolve_from_now(match: re.Match[str], ctx: _Context) -> _Span | None:
    unit = _unit(match)
    return _unit_around(_shift(ctx.said_at, unit, _count(match["n"])), unit)


def _resolve_in_count(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "in two weeks" is from now only when it cannot be a past or habitual duration
    # ("I learned it in two weeks", "I usually finish in two days").
    if ctx.habitual(match) or (ctx.past(match) and not ctx.future(match)):
        return None
    return _resolve_from_now(match, ctx)


def _resolve_span_back(match: re.Match[str], ctx: _Context) -> _Span | None:
    count = _count(match["n"]) if match["n"] else 1
    return _shift(ctx.said_at, _unit(match), -count), ctx.said_at, "span"


def _resolve_span_ahead(match: re.Match[str], ctx: _Context) -> _Span | None:
    count = _count(match["n"]) if match["n"] else 1
    return ctx.said_at, _shift(ctx.said_at, _unit(match), count), "span"


def _resolve_the_coming(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "The coming week will be busy", "plans for the week ahead": the seven days from now
    # (a week said so runs from today, not from Monday: "this coming week" is the calendar
    # one), unless told in the past of a week then to come ("I was nervous about the week
    # ahead", "about the upcoming week": its "upcoming" is no future).
    if match["unit"].casefold() == "weekend":  # "the coming weekend": a weekend, not 7 days
        return _coming_weekend(match, ctx)
    if _told_in_the_past_of_one_to_come(match, ctx):
        return None
    return ctx.said_at, _shift(ctx.said_at, _unit(match), 1), "span"


def _coming_weekend(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "this coming weekend", "the upcoming weekend": the first not yet begun, unless told in
    # the past of one then to come ("I was nervous about this coming weekend"), as "the week
    # ahead" is.
    if _told_in_the_past_of_one_to_come(match, ctx):
        return None
    return _weekend(first_saturday_to_come(ctx.today))


def _told_in_the_past_of_one_to_come(match: re.Match[str], ctx: _Context) -> bool:
    # "I was nervous about the coming week" (weekend, month, year; the week ahead): a week
    # then to come, not now. "We booked a cabin for the coming week" (or planned a trip)
    # arranged it: no such past, nor is "upcoming" (the match's own) a future of the
    # sentence's.
    return ctx.past_besides_planning(match) and not ctx.future_besides(match)


def _resolve_span_back_bare(match: re.Match[str], ctx: _Context) -> _Span | None:
    if match["side"].casefold() == "last" and not match["n"]:
        return None
    return _resolve_span_back(match, ctx)


def _resolve_duration(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "for three months" runs up to now only with "now" or a present perfect; "I lived there
    # for three months" ended some time before, and "I'll be away for a week" is ahead.
    if not match["now"] and (not ctx.perfect(match) or ctx.future(match)):
        return None
    return _resolve_span_back(match, ctx)


def _resolve_weekday(match: re.Match[str], ctx: _Context) -> _Span | None:
    which = " ".join(match["which"].casefold().split())
    weekday = _WEEKDAY_INDEX[match["wd"].casefold()]
    today = ctx.today
    if which == "this":
        # "this Friday": the one ahead when the sentence looks ahead, the one just gone when
        # it looks back, else the Friday of this Monday-to-Sunday week.
        if ctx.habitual(match):
            return None
        if ctx.ahead(match):
            return _days(_weekday_after(today, weekday, or_today=True))
        if ctx.past(match):
            return _days(_weekday_before(today, weekday, or_today=True))
        return _days(today + timedelta(days=weekday - today.weekday()))
    if which == "on":
        if ctx.habitual(match):
            return None
        which = "next" if ctx.ahead(match) else "on"
    if which in ("last", "this past"):
        return _days(_weekday_before(today, weekday, or_today=False))
    if which in ("next", "this coming"):
        return _days(_weekday_after(today, weekday, or_today=False))
    return _days(_weekday_before(today, weekday, or_today=True))


def _deadline_to_come(match: re.Match[str], ctx: _Context) -> bool:
    """A deadline ("by Friday", "by 15 December", "by the end of March") is one to come when
    its sentence looks ahead or tells of what is to be done (``_DUE``: "please send it by
    Friday") and of nothing gone: "I finished it by Friday", "by Friday I was exhausted" and
    a habit are no time."""
    if ctx.habitual(match) or ctx.told_past(match):
        return False
    return ctx.ahead(match) or ctx.due(match)


def _resolve_by_weekday(match: re.Match[str], ctx: _Context) -> _Span | None:
    # From today to the end of the weekday to come, when ``_deadline_to_come``: "by Friday"
    # or "by this Friday", said on a Friday, is today ("send it by Friday", said on Friday,
    # asks for it that day, not a week later); "by next Friday" and "by this coming Friday"
    # are the one after.
    if not _deadline_to_come(match, ctx):
        return None
    which = " ".join((match["which"] or "").casefold().split())
    weekday = _WEEKDAYS[match["wd"].casefold()]
    last = _weekday_after(ctx.today, weekday, or_today=which in ("", "this"))
    return ctx.today, last + timedelta(days=1), "span"


# Words before a weekday that make it a name or another reading ("Black Friday", "every
# Monday") or that another pattern reads ("last Friday", "since Friday", "this coming
# Friday"); "coming" alone is a verb ("Sam is coming Thursday": the tense says which way).
_NOT_BEFORE_BARE_WEEKDAY = _lazy(
    r"\b(?:black|good|super|cyber|ash|holy|maundy|fat|the|a|an|every|each|on|last|next|this"
    r"|past|(?:this|the)\s+coming|since|until|till|by|before|after|from)\s+$",
    re.IGNORECASE,
)


def _resolve_bare_weekday(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "We went hiking Saturday", "I'll see you Sunday": read only when the sentence's tense
    # says which way, and only as a day just gone or just ahead.
    if _NOT_BEFORE_BARE_WEEKDAY.search(ctx.text[max(0, match.start() - 12) : match.start()]):
        return None
    if ctx.habitual(match):
        return None
    weekday = _WEEKDAY_INDEX[match["wd"].casefold()]
    if ctx.ahead(match):
        return _days(_weekday_after(ctx.today, weekday, or_today=False))
    if ctx.past(match):
        return _days(_weekday_before(ctx.today, weekday, or_today=True))
    return None


def _resolve_weekdays_ago(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "two Saturdays ago" is the Saturday before last; "the Friday before last" too.
    count = _count(match["n"]) if match.groupdict().get("n") else 2
    last = _weekday_before(ctx.today, _WEEKDAY_INDEX[match["wd"].casefold()], or_today=False)
    return _days(last - timedelta(days=7 * (count - 1)))


def _resolve_weekday_of_week(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "Tuesday of last week", "last week on Tuesday": that weekday of that week, not the
    # nearest Tuesday.
    shift = {"last": -7, "this": 0, "next": 7}[match["which"].casefold()]
    monday = ctx.today - timedelta(days=ctx.today.weekday() - shift)
    return _days(monday + timedelta(days=_WEEKDAY_INDEX[match["wd"].casefold()]))


def _resolve_the_past_weekend(match: re.Match[str], ctx: _Context) -> _Span | None:
    return _weekend(_this_saturday(ctx.today) - timedelta(days=7))


def _resolve_weekends_ago(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "two weekends ago" is the weekend before last, as "a weekend ago" is last weekend.
    return _weekend(_this_saturday(ctx.today) - timedelta(days=7 * _count(match["n"])))


def _resolve_the_weekend(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "over the weekend": the weekend just gone (or under way), or, looking ahead, the next.
    mode = _direction(match, ctx)
    if mode is None:
        return None
    saturday = _this_saturday(ctx.today)
    if mode == "past" and ctx.today < saturday:
        saturday -= timedelta(days=7)
    return _weekend(saturday)


#: Units said in words: "a fortnight ago", "half a year ago".
_WORD_UNITS = {
    "fortnight": ("day", 14, "week"),
    "half a year": ("month", 6, "month"),
    "half an hour": ("minute", 30, "day"),
}


def _resolve_word_unit_ago(match: re.Match[str], ctx: _Context) -> _Span | None:
    unit, count, around = _WORD_UNITS[" ".join(match["unit"].casefold().split())]
    return _unit_around(_shift(ctx.said_at, unit, -count), around)


def _resolve_the_other_day(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "the other day": some day of the week just gone, not today.
    return ctx.today - timedelta(days=7), ctx.today, "span"


def _resolve_end_of_the_month(match: re.Match[str], ctx: _Context) -> _Span | None:
    # The month whose end it is, as "the end of March" is March: looking ahead, this month;
    # in the past tense the latest whose last seven days have begun (said on 6 December,
    # November); "by" it, this month also when the sentence tells of what is to be done
    # (``_deadline_to_come``: "please send it by the end of the month"). A habit, or a
    # sentence with no direction ("I pay rent at the end of the month"), gives none.
    if ctx.habitual(match):
        return None
    ahead = ctx.ahead(match) or (match[0][:2].casefold() == "by" and _deadline_to_come(match, ctx))
    if not ahead and not ctx.past(match):
        return None
    start, end = month_of_its_end(ctx.today, past=not ahead)
    return start, end, "month"


def _resolve_by_date(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "by 15 December", "by December 15th": from today through the first such day from
    # today on (or the day of the year said, if it is not gone), when ``_deadline_to_come``.
    if not _deadline_to_come(match, ctx):
        return None
    day = _date_span(_parse_date(match), ctx, "future")
    if day is None or day[1] <= ctx.today:
        return None
    return ctx.today, day[1], "span"


def _resolve_by_month_end(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "by the end of March": from today through the first March from this month on (or the
    # March of the year said, if it is not gone), when ``_deadline_to_come``.
    if not _deadline_to_come(match, ctx):
        return None
    month = _date_span(_parse_date(match), ctx, "future")
    if month is None or month[1] <= ctx.today:
        return None
    return ctx.today, month[1], "span"


def _resolve_day_of_month(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "on the 15th": the nearest 15th in the sentence's direction, in this month or another
    # (ahead in a plan told in the present: "the new job starts on the 15th").
    mode = _direction(match, ctx)
    if mode is None:
        return None
    if mode == "past" and ctx.ahead(match):
        mode = "future"
    wanted, step = int(match["d"]), (1 if mode == "future" else -1)
    for offset in range(13):
        year, month = _add_months(ctx.today.year, ctx.today.month, step * offset)
        if wanted > monthrange(year, month)[1]:
            continue
        day = _date(year, month, wanted)
        if (day >= ctx.today) if mode == "future" else (day <= ctx.today):
            return _days(day)
    return None


#: Short weekdays that are words too, read as weekdays only capitalised: "she sat 3rd".
_WORDS_AS_WEEKDAYS = frozenset(("sat", "sun"))

#: "Friday the 13th" without "on": the name of the superstition or the film, no day.
_FRIDAY_13TH = re.compile(r"friday\s+the\s+13th", re.IGNORECASE)


def _resolve_weekday_day(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "Thursday the 19th": the 19th that is a Thursday, nearest to today either way (as a
    # weekday with a day and month chooses its year), not the weekday alone (the 12th, a
    # week early); a tie goes the sentence's way. Told in the past tense, or with how it
    # went, the latest gone ("I met Ana on Friday the 18th", said on 6 December 2026, was 18
    # September, not the 18 December to come). None when no month near has one.
    if ctx.habitual(match) or match["wd"] in _WORDS_AS_WEEKDAYS:
        return None
    if _FRIDAY_13TH.fullmatch(match[0]):
        return None  # the superstition's or the film's: "on Friday the 13th" is a day
    weekday = _WEEKDAY_INDEX[match["wd"].casefold()]
    fitting = weekday_dates(int(match["d"]), weekday, ctx.today)
    if not fitting:
        return None
    ahead = ctx.ahead(match)
    gone = [day for day in fitting if day <= ctx.today]
    if gone and not ahead and (ctx.told_past(match) or ctx.reported(match)):
        return _days(gone[-1])
    return _days(min(fitting, key=lambda day: (abs(day - ctx.today), (day < ctx.today) == ahead)))


def _nth_weekday(year: int, month: int, weekday: int, nth: int) -> datetime:
    """The ``nth`` given weekday of a month (``nth`` -1: the last)."""
    if nth < 0:
        last = _date(year, month, monthrange(year, month)[1])
        return last - timedelta(days=(last.weekday() - weekday) % 7)
    first = _date(year, month, 1)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (nth - 1))


def _easter(year: int) -> datetime:
    """Western Easter Sunday (the anonymous Gregorian computus)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = divmod(b, 4)
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    el = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * el) // 451
    month, day = divmod(h + el - 7 * m + 114, 31)
    return _date(year, month, day + 1)


#: Holidays with a fixed date: name -> (month, day).
_FIXED_HOLIDAYS = {
    "christmas eve": (12, 24),
    "christmas day": (12, 25),
    "christmas": (12, 25),
    "xmas": (12, 25),
    "new year's eve": (12, 31),
    "new years eve": (12, 31),
    "new year's day": (1, 1),
    "new years day": (1, 1),
    "new year's": (1, 1),
    "valentine's day": (2, 14),
    "valentine's": (2, 14),
    "valentines day": (2, 14),
    "st. patrick's day": (3, 17),
    "st patrick's day": (3, 17),
    "saint patrick's day": (3, 17),
    "independence day": (7, 4),
    "halloween": (10, 31),
}
#: Holidays on the nth weekday of a month (US dates): name -> (month, weekday, nth).
_WEEKDAY_HOLIDAYS = {
    "thanksgiving": (11, 3, 4),
    "mother's day": (5, 6, 2),
    "mothers day": (5, 6, 2),
    "father's day": (6, 6, 3),
    "fathers day": (6, 6, 3),
    "memorial day": (5, 0, -1),
    "labor day": (9, 0, 1),
    "labour day": (9, 0, 1),
}
_HOLIDAY_NAMES = sorted(
    [*_FIXED_HOLIDAYS, *_WEEKDAY_HOLIDAYS, "easter sunday", "easter"], key=len, reverse=True
)
_HOLIDAY = r"(?P<h>{})".format(
    "|".join(re.escape(n).replace("'", "['\u2019]").replace(r"\ ", r"\s+") for n in _HOLIDAY_NAMES)
)


def _holiday_in(name: str, year: int) -> datetime:
    if name in _FIXED_HOLIDAYS:
        month, day = _FIXED_HOLIDAYS[name]
        return _date(year, month, day)
    if name in _WEEKDAY_HOLIDAYS:
        return _nth_weekday(year, *_WEEKDAY_HOLIDAYS[name])
    return _easter(year)


_HOLIDAY_CUE_MODES: dict[str, Mode] = {"last": "last", "next": "next"}


def _resolve_holiday(match: re.Match[str], ctx: _Context) -> _Span | None:
    name = " ".join(match["h"].casefold().replace("\u2019", "'").split())
    if match["y"]:
        return _days(_holiday_in(name, int(match["y"])))
    cue = match["cue"].casefold()
    mode: Mode | None = _HOLIDAY_CUE_MODES.get(cue)
    if mode is None:
        mode = _direction(match, ctx)
        if mode is None:
            return None
        if cue == "this" and not ctx.past(match):
            mode = "future"
    days = [_holiday_in(name, ctx.today.year + offset) for offset in (-1, 0, 1)]
    if mode == "future":
        return _days(min(d for d in days if d >= ctx.today))
    if mode == "next":
        return _days(min(d for d in days if d > ctx.today))
    if mode == "last":
        return _days(max(d for d in days if d < ctx.today))
    return _days(max(d for d in days if d <= ctx.today))


def _season_candidates(name: str, ctx: _Context) -> list[_Span]:
    """The seasons called ``name`` from two years before ``said_at`` to the year after, those
    a datetime can hold (near year 1 or 9999 the list is shorter, possibly empty)."""
    spans: list[_Span] = []
    for year in range(ctx.said_at.year - 2, ctx.said_at.year + 2):
        try:
            spans.append(_season(name, year))
        except ValueError:
            continue
    return spans


def _start(span: _Span) -> datetime:
    return span[0]


def _this_season(spans: list[_Span], said: datetime) -> _Span:
    # The season holding said_at, else the nearest one: "this summer" in May is the coming
    # summer, in October the one just gone.
    def distance(span: _Span) -> timedelta:
        if span[0] <= said < span[1]:
            return timedelta(0)
        return span[0] - said if said < span[0] else said - span[1]

    return min(spans, key=distance)


def _resolve_season(match: re.Match[str], ctx: _Context, mode: Mode | None) -> _Span | None:
    name = match["season"].casefold()
    groups = match.groupdict()
    if groups.get("y"):
        # "winter 2022" could be either end of the winter that straddles the new year.
        return None if name == "winter" else _season(name, int(groups["y"]))
    said = ctx.said_at
    spans = _season_candidates(name, ctx)
    if not spans:
        return None
    if mode == "last":
        return max((s for s in spans if s[1] <= said), key=_start, default=None)
    if mode == "this":
        return _this_season(spans, said)
    if mode == "next":
        return _season(name, _this_season(spans, said)[0].year + 1)
    if mode == "past":
        return max((s for s in spans if s[0] <= said), key=_start, default=None)
    if mode == "since":
        return max((s for s in spans if s[0] < said), key=_start, default=None)
    if mode == "future":
        return min((s for s in spans if s[1] > said), key=_start, default=None)
    return None


def _resolve_seasons_ago(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "two summers ago" is the summer before last, as "a summer ago" is last summer.
    count = _count(match["n"]) if match.groupdict().get("n") else 2
    last = _resolve_season(match, ctx, "last")
    if last is None:
        return None
    return _season(match["season"].casefold(), last[0].year - (count - 1))


def _resolve_season_relative(match: re.Match[str], ctx: _Context) -> _Span | None:
    which = " ".join(match["which"].casefold().split())
    return _resolve_season(match, ctx, _SEASON_MODES.get(which, "this"))


def _resolve_season_in(match: re.Match[str], ctx: _Context) -> _Span | None:
    return _resolve_season(match, ctx, _direction(match, ctx))


def _resolve_season_since(match: re.Match[str], ctx: _Context) -> _Span | None:
    return _resolve_season(match, ctx, "since")


def _resolve_season_year(match: re.Match[str], ctx: _Context) -> _Span | None:
    return _resolve_season(match, ctx, "past")


# --- the patterns -----------------------------------------------------------------------------

_Resolver = Callable[[re.Match[str], _Context], _Span | None]


def _compile(pattern: str) -> re.Pattern[str]:
    return _lazy(pattern, re.IGNORECASE)


# Not inside a name joined by marks: "GPT-4o-2024-08-06", "results-2023-11-02.jsonl" and
# "step-2024-05-01" name a model, a file and a checkpoint, not when something happened.
_ISO = (
    # Another day may come before it after a "/" or ".." (an interval: 2024-05-01/2024-05-03).
    r"(?<![^\W\d_]-)(?<![^\W\d_]\d-)(?<!-\d-)(?<![.]-)(?<![\w_])(?<![^\d]/)(?<![^.]\.)"
    r"(?P<y>\d{4})-(?P<mn>\d{2})-(?P<d>\d{2})\b(?![-:]\d\d-)"
    r"(?!\w|/(?!\d{4}-)|-(?!\d{4}-)|[._]\w)"
)
# A weekday said before a day ("Tuesday 14 May"), which chooses its year.
_WEEKDAY_LEAD = r"(?:(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday),?\s+)?"
_WEEKDAY_PREFIX = rf"(?:(?P<on>on)\s+)?{_WEEKDAY_LEAD}"
_DMY = (
    rf"(?:the\s+)?{_DAY}(?P<of>\s+of)?\s+{_MONTH}\b{_MAY_VERB_AFTER}"
    rf"(?:\.?,?\s+{_YEAR}\b)?"
)
_MDY = (
    rf"{_MONTH}\.?\s+(?:the\s+)?{_DAY}\b(?!\s*(?:%|:\d|\.\d|,\d))"
    rf"(?:,?\s+{_YEAR}\b)?"
)
_MY = rf"{_MONTH}\.?,?\s+{_YEAR}\b"
_BARE_MONTH = rf"{_MONTH}\b{_MAY_VERB_AFTER}(?!['\u2019]s\b)"

_RELATIVE_WORDS = (
    r"\b(?:(?:the\s+)?day\s+before\s+yesterday|(?:the\s+)?day\s+after\s+tomorrow|yesterday"
    r"|today|tonight|tomorrow|last\s+night|this\s+(?:morning|afternoon|evening)"
    r"|earlier\s+today|later\s+today)\b"
)
_BEFORE_LAST = r"\bthe\s+(?P<unit>weekend|week|month|year)\s+before\s+last\b"
# "it's been two years since I moved": the moving was two years ago.
_BEEN_SINCE = (
    r"\b(?:it['\u2019]s|it\s+has)\s+been\s+(?:about\s+|almost\s+|nearly\s+|over\s+)?"
    rf"{_COUNT}\s+{_UNIT}\s+since\b"
)
_RELATIVE_UNIT = (
    r"(?<!\bthe\s)\b(?P<which>this\s+past|this\s+(?:up)?coming|earlier\s+this|later\s+this"
    r"|earlier\s+in\s+the|later\s+in\s+the|last|this|next)\s+(?P<unit>weekend|week|month|year)\b"
    r"(?!\s+of\b)"
)
_THE_PAST_WEEKEND = r"\bthe\s+past\s+weekend\b(?!\s+of\b)"
# "back" as "ago" ("a few weeks back"), not as a direction ("two days back to work").
_AGO_WORD = (
    r"(?:ago\b|back\b(?!\s+(?:to|from|at|in|on|into|home|then|when|and|up|down|out|off|here"
    r"|there|with|for)\b))"
)
# "half a year ago" is not a year ago (``_WORD_UNIT_AGO`` reads it).
# "a month or so ago", "a day or two ago": the first count.
_AGO = rf"(?<!\bhalf\s)\b{_COUNT}\s+{_UNIT_OR_HOUR}(?:\s+or\s+(?:so|two|three))?\s+{_AGO_WORD}"
_WEEKENDS_AGO = rf"\b{_COUNT}\s+weekends?\s+{_AGO_WORD}"
_WEEKDAYS_AGO = rf"\b{_COUNT}\s+{_WEEKDAY}s\s+{_AGO_WORD}"
_WEEKDAY_BEFORE_LAST = rf"\bthe\s+{_WEEKDAY}\s+before\s+last\b"
_WEEKDAY_OF_WEEK = rf"\b(?:on\s+)?{_WEEKDAY}\s+(?:of\s+)?(?P<which>last|this|next)\s+week\b"
_WEEK_ON_WEEKDAY = rf"\b(?P<which>last|this|next)\s+week\s+(?:on\s+)?{_WEEKDAY}\b"
_WORD_UNIT_AGO = (
    rf"\b(?:(?:a|one)\s+)?(?P<unit>fortnight|half\s+a\s+year|half\s+an\s+hour)\s+{_AGO_WORD}"
)
_THE_WEEKEND = r"\b(?:over|on|at|during)\s+the\s+weekend\b(?!\s+(?:of|before|after)\b)"
_THE_OTHER_DAY = r"\bthe\s+other\s+day\b"
# "by the end of March" (a deadline; "by" alone is dropped): its month, and year if said.
_BY_MONTH_END = (
    rf"\bby\s+(?:the\s+)?end\s+of\s+{_MONTH}\b{_MAY_VERB_AFTER_CUE}(?!['\u2019]s\b)"
    rf"(?:\.?,?\s+{_YEAR}\b)?"
)
# "on the 15th", not "on the 3rd floor".
_DAY_OF_MONTH = rf"\bon\s+the\s+(?P<d>[12]?\d|3[01])(?:st|nd|rd|th)\b{NO_ORDINAL_NOUN}"
# "on Thursday the 19th", "Tuesday 1st", "Wed 18th": a weekday and an ordinal day of the month.
_WEEKDAY_DAY = (
    r"\b(?:on\s+)?(?P<wd>{})\.?,?\s+(?:the\s+)?(?P<d>[12]?\d|3[01])(?:st|nd|rd|th)\b".format(
        "|".join(sorted(_WEEKDAY_INDEX, key=len, reverse=True))
    )
)
_HOLIDAYS = (
    rf"\b(?P<cue>on|at|for|over|during|around|last|this|next)\s+(?:the\s+)?{_HOLIDAY}\b"
    rf"(?:,?\s+{_YEAR}\b)?"
)
_FROM_NOW = rf"\b{_COUNT}\s+{_UNIT}\s+from\s+(?:now|today)\b"
_IN_COUNT = rf"\bin\s+{_COUNT}\s+{_UNIT}(?:['\u2019]s?\s+time)?\b(?!\s+ago\b)"
_SPAN_BACK = (
    rf"\b(?:in|over|during|for|within)\s+the\s+(?:last|past)\s+(?:{_COUNT}\s+)?{_UNIT}\b"
    r"(?!\s+of\b)"
)
# Without a preposition, "the past week" and "the last few days" still run up to now; "the last
# week" alone is often another one ("the last week before the exams").
_SPAN_BACK_BARE = rf"\bthe\s+(?P<side>past|last)\s+(?:{_COUNT}\s+)?{_UNIT}\b(?!\s+of\b)"
_SPAN_AHEAD = (
    rf"\b(?:in|over|during|within)\s+the\s+(?:next|coming)\s+(?:{_COUNT}\s+)?{_UNIT}\b"
    r"(?!\s+of\b)"
)
# "the coming week", "the week ahead" (month, year), said without "in": the same stretch from now;
# "the upcoming week" too; "the coming weekend" is the first weekend not yet begun.
_THE_COMING = (
    r"\b(?:(?:over|during|within|for)\s+)?the\s+(?:up)?coming\s+(?P<unit>weekend|week|month|year)\b"
    r"(?!\s+of\b)"
)
_THE_UNIT_AHEAD = (
    r"\b(?:(?:in|over|during|within|for)\s+)?the\s+(?P<unit>week|month|year)\s+ahead\b"
    r"(?!\s+of\b)"
)
_DURATION = (
    r"\bfor\s+(?:about\s+|around\s+|almost\s+|nearly\s+|roughly\s+|close\s+to\s+|at\s+least\s+"
    r"|(?:just\s+|a\s+little\s+|well\s+)?(?:over|under|more\s+than|less\s+than)\s+)?"
    rf"{_COUNT}\s+{_UNIT}\b(?P<now>\s+now\b)?"
)
_WEEKDAY_RELATIVE = (
    rf"(?<!\bthe\s)\b(?P<which>this\s+past|this\s+coming|last|next|this|on)\s+{_WEEKDAY}\b"
    r"(?!\s+of\b)"
)
# Not after "at": "he at last sat down".
_WEEKDAY_SHORT_RELATIVE = (
    r"(?<!\bthe\s)(?<!\bat\s)\b(?P<which>this\s+past|this\s+coming|last|next)\s+"
    rf"{_WEEKDAY_ABBREVIATED}(?![\w'\u2019])(?!\s+of\b)"
)
_SEASON_RELATIVE = (
    rf"(?<!\bthe\s)\b(?P<which>this\s+past|this\s+coming|last|this|next)\s+{_SEASON}\b"
    r"(?!\s+of\b)"
)
_SEASON_IN = rf"\b(?:in|during|over)\s+(?:the\s+)?{_SEASON}\b(?!\s+of\b)(?!\s+\d)"
_SEASON_YEAR = rf"\b(?:(?:in|during|over)\s+)?(?:the\s+)?{_SEASON}(?:\s+of)?\s+{_LONE_YEAR}"
_SEASONS_AGO = rf"\b{_COUNT}\s+{_SEASON}s\s+{_AGO_WORD}"
_SEASON_BEFORE_LAST = rf"\bthe\s+{_SEASON}\s+before\s+last\b"

# A day or a month of a year said relative to this one: "on March 17 last year", "in May of
# next year", "the 3rd of June this year" (each read as the month or day alone, beside the
# whole year: "in May last year", said in 2026, was May 2026).
_DATE_CUE_WORD = r"(?:on|in|during|of|back\s+in|early|late|mid)\s+"
#: After "since": a day and month, a month and day, or a month ("since March last year").
_SINCE_OF_RELATIVE_YEARS = [
    _compile(rf"{_WEEKDAY_LEAD}{_DMY}{OF_RELATIVE_YEAR}"),
    _compile(rf"{_WEEKDAY_LEAD}{_MDY}{OF_RELATIVE_YEAR}"),
    _compile(rf"{_MONTH}\b{OF_RELATIVE_YEAR}"),
]


def _resolve_of_relative_year(match: re.Match[str], ctx: _Context) -> _Span | None:
    year = relative_year(match["rel"], ctx.today.year)
    return _date_span(replace(_parse_date(match), year=year), ctx, "past")


_STANDALONE: list[tuple[re.Pattern[str], _Resolver]] = [
    (
        _compile(rf"\b(?:{_DATE_CUE_WORD})?{_WEEKDAY_LEAD}{_DMY}{OF_RELATIVE_YEAR}"),
        _resolve_of_relative_year,
    ),
    (
        _compile(rf"\b(?:{_DATE_CUE_WORD})?{_WEEKDAY_LEAD}{_MDY}{OF_RELATIVE_YEAR}"),
        _resolve_of_relative_year,
    ),
    (_compile(rf"\b{_DATE_CUE_WORD}{_MONTH}\b{OF_RELATIVE_YEAR}"), _resolve_of_relative_year),
    (_compile(rf"\b(?:on\s+)?{_ISO}"), _resolve_date),
    (_compile(rf"\b{_WEEKDAY_PREFIX}{_DMY}"), _resolve_date),
    (_compile(rf"\b{_WEEKDAY_PREFIX}{_MDY}"), _resolve_date),
    (
        _compile(rf"\b(?:(?:in|during|of|back\s+in|early|late|mid)[\s-]+)?{_MY}"),
        _resolve_date,
    ),
    (
        _compile(rf"\b{_CUE}[\s-]+{_MONTH}\b{_MAY_VERB_AFTER_CUE}(?!['\u2019]s\b)(?!\s+\d)"),
        _resolve_cued_month,
    ),
    (
        _compile(
            r"\b(?:back\s+in|in\s+early|in\s+mid|in\s+late|the\s+end\s+of|the\s+beginning\s+of"
            r"|the\s+start\s+of|the\s+middle\s+of|end\s+of|beginning\s+of|start\s+of"
            rf"|middle\s+of|in|during|early|late|mid)[\s-]+{_LONE_YEAR}"
        ),
        _resolve_date,
    ),
    (_compile(_RELATIVE_WORDS), _resolve_words),
    (_compile(_RELATIVE_UNIT), _resolve_relative_unit),
    (_compile(_AGO), _resolve_ago),
    (_compile(_BEEN_SINCE), _resolve_ago),
    (_compile(_BEFORE_LAST), _resolve_before_last),
    (_compile(_FROM_NOW), _resolve_from_now),
    (_compile(_IN_COUNT), _resolve_in_count),
    (_compile(_SPAN_BACK), _resolve_span_back),
    (_compile(_SPAN_BACK_BARE), _resolve_span_back_bare),
    (_compile(_SPAN_AHEAD), _resolve_span_ahead),
    (_compile(_THE_COMING), _resolve_the_coming),
    (_compile(_THE_UNIT_AHEAD), _resolve_the_coming),
    (_compile(_DURATION), _resolve_duration),
    (_compile(_WEEKDAY_RELATIVE), _resolve_weekday),
    (_compile(_WEEKDAY_SHORT_RELATIVE), _resolve_weekday),
    (_compile(_WEEKENDS_AGO), _resolve_weekends_ago),
    (_compile(_THE_PAST_WEEKEND), _resolve_the_past_weekend),
    (_compile(_WEEKDAYS_AGO), _resolve_weekdays_ago),
    (_compile(_WEEKDAY_BEFORE_LAST), _resolve_weekdays_ago),
    (_compile(_WEEKDAY_OF_WEEK), _resolve_weekday_of_week),
    (_compile(_WEEK_ON_WEEKDAY), _resolve_weekday_of_week),
    (_compile(rf"\b{_WEEKDAY}\b"), _resolve_bare_weekday),
    (_compile(_WORD_UNIT_AGO), _resolve_word_unit_ago),
    (_compile(_THE_WEEKEND), _resolve_the_weekend),
    (_compile(_THE_OTHER_DAY), _resolve_the_other_day),
    (_compile(END_OF_THE_MONTH), _resolve_end_of_the_month),
    (_compile(BY_WEEKDAY), _resolve_by_weekday),
    (_compile(rf"\bby\s+{_ISO}"), _resolve_by_date),
    (_compile(rf"\bby\s+{_WEEKDAY_LEAD}{_DMY}"), _resolve_by_date),
    (_compile(rf"\bby\s+{_WEEKDAY_LEAD}{_MDY}"), _resolve_by_date),
    (_compile(_BY_MONTH_END), _resolve_by_month_end),
    (_compile(_DAY_OF_MONTH), _resolve_day_of_month),
    (_compile(_WEEKDAY_DAY), _resolve_weekday_day),
    (_compile(_HOLIDAYS), _resolve_holiday),
    (_compile(_SEASONS_AGO), _resolve_seasons_ago),
    (_compile(_SEASON_BEFORE_LAST), _resolve_seasons_ago),
    (_compile(_SEASON_RELATIVE), _resolve_season_relative),
    (_compile(_SEASON_IN), _resolve_season_in),
    (_compile(_SEASON_YEAR), _resolve_season_year),
]

# What "since" and "from ... to ..." are followed by: dates whose cue is that word.
_BARE_DATES: list[re.Pattern[str]] = [
    _compile(_ISO),
    _compile(_WEEKDAY_LEAD + _DMY),
    _compile(_WEEKDAY_LEAD + _MDY),
    _compile(_MY),
    _compile(_BARE_MONTH),
    _compile(_LONE_YEAR),
]
_SINCE_RELATIVE: list[tuple[re.Pattern[str], _Resolver]] = [
    (_compile(_RELATIVE_WORDS), _resolve_words),
    (_compile(_RELATIVE_UNIT), _resolve_relative_unit),
    (_compile(_AGO), _resolve_ago),
    (_compile(_WEEKDAY_RELATIVE), _resolve_weekday),
    (_compile(_SEASONS_AGO), _resolve_seasons_ago),
    (_compile(_SEASON_BEFORE_LAST), _resolve_seasons_ago),
    (_compile(_SEASON_RELATIVE), _resolve_season_relative),
    (_compile(_SEASON_YEAR), _resolve_season_year),
    (
        _compile(rf"(?:the\s+)?{_SEASON}\b(?!\s+of\b)(?!\s+\d)"),
        _resolve_season_since,
    ),
]
_SINCE = _compile(r"\b(?:ever\s+)?since\s+")
_RANGE = _compile(r"\b(?P<kw>from|between)\s+")
_RANGE_TO = _compile(r"\s*(?:to|until|till|through|thru|-|\u2013)\s*")
_RANGE_AND = _compile(r"\s+and\s+")


def _since_weekday(match: re.Match[str], ctx: _Context) -> _Span | None:
    # "since Tuesday": the latest Tuesday before today.
    return _days(_weekday_before(ctx.today, _WEEKDAYS[match["wd"].casefold()], or_today=False))


_SINCE_WEEKDAY = _compile(rf"{_WEEKDAY}\b")


def _longest_date(text: str, pos: int) -> re.Match[str] | None:
    best: re.Match[str] | None = None
    for pattern in _BARE_DATES:
        match = pattern.match(text, pos)
        if match and (best is None or match.end() > best.end()):
            best = match
    return best


_Candidate = tuple[int, int, _Span | None]


def _safely(resolve: Callable[[], _Span | None]) -> _Span | None:
    try:
        return resolve()
    except (OverflowError, ValueError):
        # A date past what a datetime holds (before year 1, after 9999) or no such day
        # ("31 April"): the expression gives no time.
        return None


def _since_candidates(ctx: _Context) -> Iterator[_Candidate]:
    text = ctx.text
    for since in _SINCE.finditer(text):
        pos = since.end()
        best: tuple[int, Callable[[], _Span | None]] | None = None
        date = _longest_date(text, pos)
        if date is not None:
            parsed = _parse_date(date)
            best = (date.end(), partial(_date_span, parsed, ctx, "since"))
        options: list[tuple[re.Pattern[str], _Resolver]] = [
            *_SINCE_RELATIVE,
            (_SINCE_WEEKDAY, _since_weekday),
            *((pattern, _resolve_of_relative_year) for pattern in _SINCE_OF_RELATIVE_YEARS),
        ]
        for pattern, resolver in options:
            match = pattern.match(text, pos)
            if match and (best is None or match.end() > best[0]):
                best = (match.end(), partial(resolver, match, ctx))
        if best is None:
            continue
        span = _safely(best[1])
        if span is None or span[0] >= ctx.said_at:
            yield since.start(), best[0], None
        else:
            yield since.start(), best[0], (span[0], ctx.said_at, "open")


# "until Friday", "till 15 December", "until the end of March", "extended to June": a state
# that holds from now through a time to come ("I'm in Berlin until Friday", "the office is
# closed until the end of the month"), or, after a verb moving a plan, the day it moved to
# ("the call is postponed until Friday"). Told in the past ("I lived in Paris until March"),
# it says when something ended and not when it began: no time, as before.
_UNTIL = _compile(
    r"\b(?:until|till|til|extended\s+(?:[\w'\u2019-]+\s+){0,3}?(?:to|through|thru))\s+"
)
_UNTIL_WEEKDAY = _compile(
    rf"(?:(?P<which>next|this\s+coming|this)\s+)?{_WEEKDAY}\b(?!['\u2019]s\b)(?!\s+of\b)"
)
_UNTIL_MONTH_END = _compile(
    rf"(?:the\s+)?end\s+of\s+(?:the\s+month\b(?!-)(?!\s+of\b)|{_MONTH}\b"
    rf"{_MAY_VERB_AFTER_CUE}(?!['\u2019]s\b)(?:\.?,?\s+{_YEAR}\b|{OF_RELATIVE_YEAR})?)"
)
# "until next week" (weekend, month, year): until it begins ("the road is closed until next
# week" opens on Monday, "until next weekend" on its Saturday), not through it as "until
# Friday" is through Friday. So "until this weekend" (on a weekday), up to its Saturday, and
# "until the coming weekend" ("this coming", "the upcoming") up to the first not yet begun.
_UNTIL_NEXT_UNIT = _compile(
    rf"(?P<which>{UNTIL_NEXT_WHICH})\s+(?P<unit>weekend|week|month|year)\b(?!\s+of\b)"
)
# "until the end of next week" (weekend, of this month, of the year): through that week,
# weekend, month, year ("the end of the month" and "of March" are ``_UNTIL_MONTH_END``'s).
_UNTIL_UNIT_END = _compile(
    r"(?:the\s+)?end\s+of\s+(?:(?P<which>this|next)\s+(?P<unit>weekend|week|month|year)"
    r"|the\s+(?P<the>week|year))\b(?!-)(?!\s+of\b)"
)
_UNTIL_DAY_OF_MONTH = _compile(rf"the\s+(?P<d>[12]?\d|3[01])(?:st|nd|rd|th)\b{NO_ORDINAL_NOUN}")
_UNTIL_HOLIDAY = _compile(rf"(?:the\s+)?{_HOLIDAY}\b(?:,?\s+{_YEAR}\b)?")
# A plan moved to the day after "until" ("postponed until Friday", "pushed back till 15
# December"): that day, not the days up to it ("extended" is the state's new end).
_MOVED_UNTIL = _compile(
    r"\b(?:moved|rescheduled|postponed|pushed|delayed|shifted|slipped|slid|bumped|put\s+off)"
    r"\s+(?:[\w'\u2019-]+\s+){0,4}?(?:back\s+|forward\s+|off\s+)?$"
)


def _until_weekday(match: re.Match[str], ctx: _Context) -> _Span | None:
    # The first such weekday after today: "until Friday" said on a Friday is the next one.
    return _days(_weekday_after(ctx.today, _WEEKDAYS[match["wd"].casefold()], or_today=False))


def _until_unit_end(match: re.Match[str], ctx: _Context) -> _Span | None:
    unit = (match["unit"] or match["the"]).casefold()
    step = 1 if match["which"] and match["which"].casefold() == "next" else 0
    if unit == "weekend":  # as "this weekend" and "next weekend" read without "until"
        return _weekend(_this_saturday(ctx.today) + timedelta(days=7 * step))
    if unit == "week":
        return _week(ctx.today + timedelta(days=7 * step))
    if unit == "month":
        return _month(*_add_months(ctx.today.year, ctx.today.month, step))
    return _year(ctx.today.year + step)


def _until_month_end(match: re.Match[str], ctx: _Context) -> _Span | None:
    if match["m"] is None:
        start, end = month_of_its_end(ctx.today, past=False)
        return start, end, "month"
    if match["rel"]:  # "until the end of March next year"
        return _resolve_of_relative_year(match, ctx)
    return _date_span(_parse_date(match), ctx, "future")


# A plan's name before "extended": "the deadline was extended to Friday" moved it to Friday
# ("her contract was extended to June" holds through June).
_EXTENDED_PLAN = _lazy(rf"\b(?:{_EVENT_NOUNS})s?\b", re.IGNORECASE)


def _until_day_of_month(match: re.Match[str], ctx: _Context) -> _Span | None:
    # The first such day after today, in this month or a later one with that many days.
    wanted = int(match["d"])
    for offset in range(13):
        year, month = _add_months(ctx.today.year, ctx.today.month, offset)
        if wanted <= monthrange(year, month)[1] and _date(year, month, wanted) > ctx.today:
            return _days(_date(year, month, wanted))
    return None


def _until_holiday(match: re.Match[str], ctx: _Context) -> _Span | None:
    name = " ".join(match["h"].casefold().replace("\u2019", "'").split())
    if match["y"]:
        return _days(_holiday_in(name, int(match["y"])))
    days = (_holiday_in(name, ctx.today.year + offset) for offset in (0, 1))
    return _days(min(d for d in days if d >= ctx.today))


_UNTIL_OPTIONS: list[tuple[re.Pattern[str], _Resolver]] = [
    (_UNTIL_NEXT_UNIT, _resolve_relative_unit),  # before ``_RELATIVE_UNIT``: the same words
    (_UNTIL_UNIT_END, _until_unit_end),
    (_compile(_RELATIVE_WORDS), _resolve_words),
    (_compile(_RELATIVE_UNIT), _resolve_relative_unit),
    (_UNTIL_WEEKDAY, _until_weekday),
    (_UNTIL_MONTH_END, _until_month_end),
    (_UNTIL_DAY_OF_MONTH, _until_day_of_month),
    (_UNTIL_HOLIDAY, _until_holiday),
    # "until March next year": of that year, as after "since" (it was this year's March,
    # beside the whole year named).
    *((pattern, _resolve_of_relative_year) for pattern in _SINCE_OF_RELATIVE_YEARS),
]


def _until_candidates(ctx: _Context) -> Iterator[_Candidate]:
    text = ctx.text
    # Per sentence (its start), where its first plan's name ends (-1: none): found once, not
    # in all the words before each "extended" (a sentence of thousands took half a minute).
    plans: dict[int, int] = {}
    for until in _UNTIL.finditer(text):
        if until[0][:8].casefold() == "extended":
            left, right = ctx._bounds(until)
            if left not in plans:
                found = _EXTENDED_PLAN.search(text, left, right)
                plans[left] = -1 if found is None else found.end()
            if 0 <= plans[left] <= until.start():
                # A plan extended to a day is moved to it, read as such (``_PRESENT_PLAN``).
                continue
        pos = until.end()
        # (where the time ends, its span, whether the state ends when it begins)
        best: tuple[int, Callable[[], _Span | None], bool] | None = None
        date = _longest_date(text, pos)
        if date is not None:
            best = (date.end(), partial(_date_span, _parse_date(date), ctx, "future"), False)
        for pattern, resolver in _UNTIL_OPTIONS:
            match = pattern.match(text, pos)
            if match and (best is None or match.end() > best[0]):
                best = (match.end(), partial(resolver, match, ctx), pattern is _UNTIL_NEXT_UNIT)
        if best is None:
            continue
        if ctx.habitual(until) or ctx.told_past_of_a_state(until):
            yield until.start(), best[0], None
            continue
        span = _safely(best[1])
        # "until next week" told on a Sunday ends tonight: still to come, unlike "until today".
        if span is None or (not best[2] and span[1] <= ctx.today + timedelta(days=1)):
            yield until.start(), best[0], None
        elif _MOVED_UNTIL.search(text, max(0, until.start() - 60), until.start()):
            yield until.start(), best[0], span  # "postponed until next week": that week
        else:
            # A weekend under way ("until this weekend" told on its Saturday): through it.
            begins = best[2] and span[0] > ctx.today
            yield until.start(), best[0], (ctx.today, span[0] if begins else span[1], "span")


def _order(date: _Date) -> tuple[int, int]:
    return date.month or 0, date.day or 0


def _range_span(first: _Date, second: _Date, match: re.Match[str], ctx: _Context) -> _Span | None:
    """From the start of ``first`` to the end of ``second``; a missing year is inferred from
    the other end ("from May to July 2022"), or, when both lack one, from the first (as
    ``_date_span`` reads it: a day the memory states in it, else the direction), or from a
    day the memory states in the second."""
    later = _order(second) >= _order(first)
    if first.year is None and second.year is None:
        mode = _day_direction(first, match, ctx)
        if mode is None or first.month is None or second.month is None:
            return None
        ended = ctx.stated_year(second.month, second.day)
        if ended is not None and ctx.stated_year(first.month, first.day) is None:
            year = ended if later else ended - 1
        else:
            start_span = _date_span(first, ctx, mode)
            if start_span is None:
                return None
            year = start_span[0].year
        first = _Date(year, first.month, first.day)
        second = _Date(year if later else year + 1, second.month, second.day)
    elif first.year is None and second.year is not None:
        if second.month is None:
            return None
        first = _Date(second.year if later else second.year - 1, first.month, first.day)
    elif second.year is None and first.year is not None:
        if first.month is None:
            return None
        second = _Date(first.year if later else first.year + 1, second.month, second.day)
    start = _date_span(first, ctx, "past")
    end = _date_span(second, ctx, "past")
    if start is None or end is None or end[1] <= start[0]:
        return None
    return start[0], end[1], "span"


def _range_candidates(ctx: _Context) -> Iterator[_Candidate]:
    text = ctx.text
    for opening in _RANGE.finditer(text):
        first = _longest_date(text, opening.end())
        if first is None:
            continue
        joiner = _RANGE_AND if opening["kw"].casefold() == "between" else _RANGE_TO
        second = _joined(text, first, joiner)
        if second is None:
            continue
        a, b = _parse_date(first), _parse_date(second)
        span = _safely(partial(_range_span, a, b, opening, ctx))
        yield opening.start(), second.end(), span


def _joined(text: str, first: re.Match[str], joiner: re.Pattern[str]) -> re.Match[str] | None:
    """The date ``joiner`` links to the date ``first`` ends before, if any."""
    link = joiner.match(text, first.end())
    return None if link is None else _longest_date(text, link.end())


# Days of one month: "from 3 to 10 June", "between the 3rd and the 10th of June", "3-10 June",
# "June 3 to 10", "June 3-10, 2024". "and" joins only after "between", and "between" only
# with "and" ("on 3 and 10 June" is two days, not the week between).
_DAYS_JOINED = (
    r"(?P<d1>\d{1,2})(?P<o1>st|nd|rd|th)?"
    r"(?:\s*(?P<dash>-|\u2013)\s*|\s+(?P<word>to|until|till|through|thru|and)\s+)(?:the\s+)?"
)
_DAY_RANGES = [
    _compile(
        rf"\b(?:(?P<kw>from|between)\s+)?(?:the\s+)?{_DAYS_JOINED}{_DAY}(?P<of>\s+of)?\s+"
        rf"{_MONTH}\b{_MAY_VERB_AFTER}(?:\.?,?\s+{_YEAR}\b)?"
    ),
    _compile(
        rf"\b(?:(?P<kw>from|between)\s+)?{_MONTH}\.?\s+(?:the\s+)?{_DAYS_JOINED}{_DAY}\b"
        rf"(?!\s*(?:%|:\d|\.\d|,\d|[ap]\.?m\b))(?!\s+(?:{_COUNTED})\b)(?:,?\s+{_YEAR}\b)?"
    ),
]


def _day_range_candidates(ctx: _Context) -> Iterator[_Candidate]:
    for pattern in _DAY_RANGES:
        for match in pattern.finditer(ctx.text):
            between = (match["kw"] or "").casefold() == "between"
            if between != ((match["word"] or "").casefold() == "and"):
                continue
            first, last = int(match["d1"]), int(match["d"])
            if not 1 <= first < last:
                continue  # "from 10 to 3 June" is no stretch of June
            told = match["kw"] or match["o1"] or match["o"] or match["y"]
            if not told and match["m"] in ("may", "march"):
                continue  # "ages 3-10 may apply": a verb, written small
            date = _parse_date(match)
            span = _safely(partial(_range_span, replace(date, day=first), date, match, ctx))
            yield match.start(), match.end(), span


# Ordinal days with no month ("from the 20th to the 23rd", "20th-23rd", "from the 28th to the
# 3rd"): which are days, ``timewords.ordinal_days`` says, as for a question.
_ORDINAL_DAYS = _compile(ORDINAL_DAYS)


def _resolve_ordinal_days(
    match: re.Match[str], days: tuple[int, int], ctx: _Context
) -> _Span | None:
    """The days of the month they fall in (into the next across its end): looking back (a
    past tense), the latest month whose first day is today or gone; else the stretch under
    way if its last day is today or ahead (across a month's end, begun last month), or the
    next that has both days (words
    with no month rarely tell of one long gone; ``timewords.ordinal_days_span``). A habit
    gives none."""
    if ctx.habitual(match):
        return None
    past = not ctx.ahead(match) and ctx.past(match)
    span = ordinal_days_span(*days, ctx.today, past=past)
    return None if span is None else (span[0], span[1], "span")


def _ordinal_days_candidates(ctx: _Context) -> Iterator[_Candidate]:
    text = ctx.text
    for match in _ORDINAL_DAYS.finditer(text):
        days = ordinal_days(match, text)
        if days is None:
            continue
        span = _safely(partial(_resolve_ordinal_days, match, days, ctx))
        if span is None and days[1] < days[0]:
            continue  # "from the 23rd to the 20th" is no stretch (as before it was read)
        yield match.start(), match.end(), span


# Two days with their months and no "from" before them: "28 May to 3 June", "May 28 - June 3",
# "2024-05-01 to 2024-05-03".
_BARE_RANGE_STARTS = [_compile(_ISO), *(_compile(rf"\b{_WEEKDAY_LEAD}{d}") for d in (_DMY, _MDY))]


def _bare_range_candidates(ctx: _Context) -> Iterator[_Candidate]:
    """Ranges of two dates, each with its day and month, that no "from" or "between" opens
    (``_range_candidates`` reads those): only a range read whole is a candidate, so a
    date that starts none is read alone as before."""
    text = ctx.text
    for pattern in _BARE_RANGE_STARTS:
        for first in pattern.finditer(text):
            second = _joined(text, first, _RANGE_TO)
            if second is None:
                continue
            a, b = _parse_date(first), _parse_date(second)
            if a.day is None or b.day is None or a.month is None or b.month is None:
                continue
            backwards = a.year is None and b.year is None and _order(b) < _order(a)
            if backwards and not (a.month == 12 and b.month == 1):
                continue  # "moved 10 May to 3 May": no year-long stretch ("28 Dec to 3 Jan" is)
            span = _safely(partial(_range_span, a, b, first, ctx))
            if span is not None:
                yield first.start(), second.end(), span


# A stretch of weekdays: "from Monday to Wednesday", "Tuesday through Thursday next week",
# "between Monday and Friday of last week". "and" only after "between", as days of a month.
_WEEKDAY_RANGE = _compile(
    rf"\b(?:(?P<kw>from|between)\s+)?(?P<w1>{'|'.join(_WEEKDAYS)})"
    r"(?:\s*(?:-|\u2013)\s*|\s+(?P<word>to|until|till|through|thru|and)\s+)"
    rf"(?P<w2>{'|'.join(_WEEKDAYS)})\b(?:\s+(?:of\s+)?(?P<which>last|next|this)\s+week\b)?"
)


def _resolve_weekday_range(match: re.Match[str], ctx: _Context) -> _Span | None:
    """The days from one weekday to the next given one: of the week named, else the
    stretch just gone (its last day today at the latest) when the sentence looks back, or
    the one ahead (its first day after today) when it looks ahead; a habit ("works Monday
    to Friday") or a sentence with no direction gives none."""
    first, last = _WEEKDAYS[match["w1"].casefold()], _WEEKDAYS[match["w2"].casefold()]
    length = (last - first) % 7
    if length == 0:
        return None
    today = ctx.today
    if match["which"]:
        # Of the Monday-to-Sunday week named; one that wraps ("Sunday to Tuesday last
        # week") begins in the week before it, so it ends in the week named.
        shift = {"last": -7, "this": 0, "next": 7}[match["which"].casefold()]
        shift -= 7 if first > last else 0
        start = today - timedelta(days=today.weekday() - shift) + timedelta(days=first)
    elif ctx.habitual(match):
        return None
    elif ctx.ahead(match):
        start = _weekday_after(today, first, or_today=False)
    elif ctx.past(match):
        start = _weekday_before(today, last, or_today=True) - timedelta(days=length)
    else:
        return None
    return start, start + timedelta(days=length + 1), "span"


def _weekday_range_candidates(ctx: _Context) -> Iterator[_Candidate]:
    for match in _WEEKDAY_RANGE.finditer(ctx.text):
        between = (match["kw"] or "").casefold() == "between"
        if between != ((match["word"] or "").casefold() == "and"):
            continue
        span = _safely(partial(_resolve_weekday_range, match, ctx))
        if span is not None:
            yield match.start(), match.end(), span


# A plan moved from one day to another: "the meeting was moved from Tuesday to Thursday",
# "rescheduled from 3 June to 10 June" is the second day (it was read as the stretch between).
_MOVED_FROM = _compile(
    r"\b(?:(?:was|were|is|are|has\s+been|have\s+been|got|been)\s+)?(?P<verb>moved|rescheduled"
    r"|postponed|pushed(?:\s+back)?|brought\s+forward|shifted|changed)\s+from\s+"
)


def _day_after(text: str, pos: int) -> re.Match[str] | None:
    """The longest date or weekday starting at ``pos``."""
    date, weekday = _longest_date(text, pos), _SINCE_WEEKDAY.match(text, pos)
    if date is None or (weekday is not None and weekday.end() > date.end()):
        return weekday
    return date


def _moved_candidates(ctx: _Context) -> Iterator[_Candidate]:
    text = ctx.text
    for moved in _MOVED_FROM.finditer(text):
        first = _day_after(text, moved.end())
        link = None if first is None else _RANGE_TO.match(text, first.end())
        second = None if link is None else _day_after(text, link.end())
        if second is None:
            continue
        # Ahead unless the sentence tells of the past in other words than the move's.
        left, right = ctx._bounds(moved)
        rest = _PRESENT_PLAN.sub(" ", text[left : moved.start()] + " " + text[second.end() : right])
        mode: Mode = "past" if _PAST.search(rest) else "future"
        span: _Span | None
        if second.groupdict().get("wd") and second.end() - second.start() == len(second["wd"]):
            weekday, today = _WEEKDAYS[second["wd"].casefold()], ctx.today
            day = (
                _weekday_after(today, weekday, or_today=False)
                if mode == "future"
                else _weekday_before(today, weekday, or_today=True)
            )
            span = _days(day)
        else:
            span = _safely(partial(_date_span, _parse_date(second), ctx, mode))
        yield moved.start("verb"), second.end(), span


def _candidates(ctx: _Context) -> Iterator[_Candidate]:
    for pattern, resolver in _STANDALONE:
        for match in pattern.finditer(ctx.text):
            span = _safely(partial(resolver, match, ctx))
            yield match.start(), match.end(), span
    yield from _since_candidates(ctx)
    yield from _until_candidates(ctx)
    yield from _moved_candidates(ctx)
    yield from _range_candidates(ctx)
    yield from _day_range_candidates(ctx)
    yield from _ordinal_days_candidates(ctx)
    yield from _bare_range_candidates(ctx)
    yield from _weekday_range_candidates(ctx)


# --- the API ----------------------------------------------------------------------------------


# Every expression read above holds one of these (a digit, a calendar word, a unit, a
# relative word): a text with none is answered at once (~2 µs instead of ~80 µs).
_ANY_TIME_WORD = _lazy(
    r"\d|\b(?:{}|{}|{}|yesterday|today|tonight|tomorrow|ago|back|since|now|day|week|month|year"
    r"|night|morning|afternoon|evening|fortnight|christmas|xmas|halloween|easter|thanksgiving"
    r"|valentine|mon|tue|wed|thu|fri|sat|sun)".format(
        "|".join(MONTHS), "|".join(_WEEKDAYS), "|".join(SEASONS)
    ),
    re.IGNORECASE,
)


#: Code in Markdown: a fenced block (from a fence ending its line to the closing fence, or
#: the end) or an inline span of more than one word (a command; "`2024-05-01`" is a date).
_CODE = re.compile(r"```[^\n`]*\n[\s\S]*?(?:```|$)|`[^`\n]*?\s[^`\n]*?`")


def event_times(text: str, said_at: datetime, stated: Sequence[datetime] = ()) -> list[EventTime]:
    """Every expression in ``text`` that places its event in time, resolved against ``said_at``.

    Args:
        text: the observation's text.
        said_at: when it was said (the observation's ``observed_at``), read in its own zone's
            calendar: "yesterday" at 23:30 -08:00 on 8 May is 7 May (a naive one is UTC).
        stated: times the memory states outright (its fact's ``valid_from`` and
            ``valid_until``; a naive one is UTC): a date in the words without its year
            that names one's day (or month) in UTC takes its year ("from 11 June", said
            in May 2024 of a fact valid from 11 June 2024, is that day, not 11 June 2023).

    Returns:
        The event times in text order; empty when the text places nothing in time. Where
        expressions overlap ("since last year", "the day before yesterday") the longest wins.
    """
    if not _ANY_TIME_WORD.search(text):
        return []
    # The speaker's wall clock, as if UTC: the days read are calendar days, not instants.
    said = said_at.replace(tzinfo=UTC)
    ctx = _Context.of(text, said, stated)
    # The characters a longer expression took: a shorter one overlapping them is left out.
    # Code tells no time of the event ("`git log --since yesterday`"): taken from the start.
    taken = bytearray(len(text))
    for code in _CODE.finditer(text):
        taken[code.start() : code.end()] = b"\x01" * (code.end() - code.start())
    found: list[tuple[int, EventTime]] = []
    for start, end, span in sorted(_candidates(ctx), key=lambda c: (c[0] - c[1], c[0])):
        if any(taken[start:end]):
            continue
        taken[start:end] = b"\x01" * (end - start)
        if span is None or _BLOCKERS.search(text[max(0, start - _LOOK_BACK) : start]):
            continue
        phrase = text[start:end].strip()
        found.append((start, EventTime(span[0], span[1], span[2], phrase)))
    return [event for _, event in sorted(found, key=lambda item: item[0])]


def event_time(text: str, said_at: datetime, stated: Sequence[datetime] = ()) -> EventTime | None:
    """The event time to store with an observation: the most specific one its text names.

    The shortest span wins ("yesterday" over "since 2019"); between spans of one length, the
    first in the text.

    Args:
        text: the observation's text.
        said_at: when it was said (aware; naive is taken as UTC).
        stated: times the memory states outright (see ``event_times``).

    Returns:
        An event time, or None when the text places nothing in time.
    """
    return most_specific(event_times(text, said_at, stated))


def most_specific(times: Sequence[EventTime]) -> EventTime | None:
    """The shortest of ``times`` (the first of the shortest), or None when there are none."""
    if not times:
        return None
    return min(times, key=lambda event: event.end - event.start)


def holds_until(event: EventTime) -> bool:
    """Whether ``event`` is a state's end to come, read after "until", "till" or "extended
    ... to" ("I'm in Berlin until Friday", "her contract was extended to June": the days
    from the one said through that end, ``_until_candidates``). Not a deadline ("by
    Friday"), a plan moved to a day ("postponed until Friday" is that day), nor a span
    that opens with its start ("from May until July")."""
    return event.precision == "span" and _UNTIL.match(event.phrase) is not None


# --- storing, showing and matching --------------------------------------------------------------

#: How far a question's time may fall outside an event time and still match it, by precision:
#: words place an event loosely ("last week" told on a Monday may mean the days just gone, "in
#: May" may be 30 April), the more so the longer the unit.
SLACK = {
    "day": timedelta(days=1),
    "week": timedelta(days=2),
    "weekend": timedelta(days=1),
    "month": timedelta(days=7),
    "season": timedelta(days=15),
    "year": timedelta(days=30),
    "span": timedelta(days=2),
    "open": timedelta(days=7),
}


def stored(times: Sequence[EventTime]) -> str:
    """The event times as the graph keeps them: JSON ``[[start, end, precision, phrase]]``
    with times as ISO 8601 UTC, ``[]`` for none (NULL in the graph means not read yet)."""
    return json.dumps(
        [[t.start.isoformat(), t.end.isoformat(), t.precision, t.phrase] for t in times],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def loaded(text: str | None) -> tuple[EventTime, ...]:
    """The event times ``stored`` wrote (an empty tuple for None)."""
    if not text or text == "[]":  # most observations, at every start: skip the parse
        return ()
    return tuple(
        EventTime(datetime.fromisoformat(s), datetime.fromisoformat(e), p, phrase)
        for s, e, p, phrase in json.loads(text)
    )


def loaded_strictly(text: str) -> tuple[EventTime, ...]:
    """The event times ``stored`` wrote, read by ``loaded`` and refused unless the memory can
    use them: a memory loads whatever ``loaded`` reads, then compares the times with aware
    ones (a time without an offset failed a recall that names a time).

    Raises:
        ValueError: not JSON as ``stored`` writes it (``[[start, end, precision, phrase]]``),
            a time that is none or has no offset, a precision of no kind, a phrase not text.
    """
    try:
        times = loaded(text)
    except (TypeError, RecursionError) as error:  # an item not a list of four, or too deep
        raise ValueError(str(error) or "nested too deep") from None
    for event in times:
        if event.start.tzinfo is None or event.end.tzinfo is None:
            raise ValueError("a time without its offset (+00:00)")
        if event.precision not in get_args(Precision):
            raise ValueError(f"precision {event.precision!r} is none of {get_args(Precision)}")
        if not isinstance(event.phrase, str):
            raise ValueError(f"phrase {event.phrase!r} is not text")
    return times


def shown(event: EventTime) -> str:
    """ISO 8601 for people and models: a date ("2023-05-07"), a month ("2023-05"), a year
    ("2023"), or an interval of dates, the last one included ("2023-05-01/2023-05-07"),
    open-ended for "since ..." ("2023-09-01/..")."""
    start, last = event.start.date(), (event.end - timedelta(microseconds=1)).date()
    if event.precision == "open":
        return f"{start.isoformat()}/.."
    if start == last:
        return start.isoformat()
    if event.precision == "month":
        return f"{start:%Y-%m}"
    if event.precision == "year":
        return f"{start:%Y}"
    return f"{start.isoformat()}/{last.isoformat()}"


def overlaps(event: EventTime, start: datetime, end: datetime) -> bool:
    """Whether the event time meets the span [start, end) a question names, with the slack
    of its precision (``SLACK``)."""
    slack = SLACK.get(event.precision, timedelta(0))
    return event.start - slack < end and start < event.end + slack
