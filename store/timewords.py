"""Time words in a query ("in May 2023", "last week", "yesterday", "last Tuesday", "this
morning", "the week before 16 November 2023", "the second week of May", "in summer 2021",
"between May and July 2023", "by Friday", "by the end of March", "at the end of the month",
"from the 20th to the 23rd", "until Friday", "in May last year") as a window of time; a day
without a month or year is the one to come when the question looks ahead ("will", "Am I free
on Friday?", a question in the present with no clause in the past), else the latest gone.

Recall boosts observations made inside the window a question names. Relative words are read
against the recall's reference time (``as_of``, else now). Only plain English forms are read;
anything else yields no window, which simply means no time boost.
"""

from __future__ import annotations

import re
from calendar import monthrange
from datetime import UTC, datetime, timedelta

#: Month names and abbreviations -> month number (also read by ``event_time``).
MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
#: Season names -> the month each begins (meteorological seasons; also read by ``event_time``).
SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_MONTH_WORD = "|".join(sorted(MONTHS, key=len, reverse=True))
#: Count words -> the count they stand for ("a couple of weeks ago", "the past several days";
#: also read by ``event_time``: a note and a question read the same counts).
COUNTS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "couple": 2,
    "a few": 3,
    "few": 3,
    "several": 5,
}
#: ``COUNTS``' words as a pattern's alternatives, the longest first ("a couple of" before "a").
COUNT_WORDS = "|".join(
    words.replace(" ", r"\s+") for words in sorted(COUNTS, key=len, reverse=True)
)
# Not inside a name joined by marks ("GPT-4o-2024-08-06", "results-2023-11-02.jsonl").
_ISO_DATE = re.compile(
    r"(?<![^\W\d_]-)(?<![^\W\d_]\d-)(?<!-\d-)(?<![.]-)(?<![\w_])(?<![^\d]/)(?<![^.]\.)"
    r"(\d{4})-(\d{2})-(\d{2})\b(?!\w|/(?!\d{4}-)|-(?!\d{4}-)|[._]\w)"
)
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?"
# "9 November, 2022", "November 9th 2022", "the 3rd of May", "May 2023", "in June"
_MONTH_DATE = re.compile(
    rf"\b(?:{_ORDINAL}\s+(?:of\s+)?)?({_MONTH_WORD})\.?(?:\s+{_ORDINAL}\b)?(?:,?\s+(\d{{4}}))?\b",
    re.IGNORECASE,
)
# "in May last year", "on 3 June of next year": the year said relative to this one.
#: A year said relative to this one after a day or a month ("in May last year", "on 3 June of
#: next year"). A pattern's source, read alike by ``event_time``.
OF_RELATIVE_YEAR = r"(?:,?\s+|\s+of\s+)(?P<rel>last|next|this)\s+year\b(?!\s+(?:of|before|after)\b)"
_OF_RELATIVE_YEAR = re.compile(OF_RELATIVE_YEAR, re.IGNORECASE)


def relative_year(word: str, this_year: int) -> int:
    """The year "last", "this" or "next" year names, said in ``this_year``."""
    return this_year + {"last": -1, "this": 0, "next": 1}[word.casefold()]


_YEAR = re.compile(
    r"\b(?:(?:in|during|of|since)\s+(?:(?:early|late|mid)[\s-]+)?|(?:early|late|mid)[\s-]+)"
    r"((?:19|20)\d{2})\b",
    re.IGNORECASE,
)
_SEASON_WORD = "|".join(SEASONS)
# "summer 2021", "the winter of 2022": that season of that year.
_SEASON_OF_YEAR = re.compile(rf"\b({_SEASON_WORD})\s+(?:of\s+)?((?:19|20)\d{{2}})\b", re.IGNORECASE)
# "last summer", "during the winter": the latest such season (begun, or for "last" ended).
_SEASON_NAMED = re.compile(
    rf"\b(?:(last|past|this)\s+|(?:in|during|over)\s+(?:the\s+)?)({_SEASON_WORD})\b",
    re.IGNORECASE,
)
# "between August 11 and August 15, 2023", "from May to July 2023": both ends must be times.
# Each end is short (a time is a few words): a long text of "from"s without a "to" costs
# each of them 40 characters, not the rest of the text.
_RANGE = re.compile(
    r"\b(?:between|from)\s+(?P<first>[^?!;]{1,40}?)\s+(?:and|to|until|till|through)\s+"
    r"(?P<last>[^?!;]{1,40})",
    re.IGNORECASE,
)
_FOUR_DIGIT_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
_AGO = re.compile(rf"\b(\d+|{COUNT_WORDS})\s+(day|week|month|year)s?\s+ago\b", re.IGNORECASE)
_RELATIVE = re.compile(
    r"\b(yesterday|today|tonight|(?:last|this|past)\s+(?:week|month|year|weekend))\b",
    re.IGNORECASE,
)
# "last Tuesday", "on Saturday": the latest such day (before today after last / past /
# previous; today counts after on / this). Full names only, after a cue ("Sun Street").
_WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_ASKED_WEEKDAY = re.compile(
    rf"\b(last|past|previous|on|this|for)\s+({'|'.join(_WEEKDAY_NAMES)})\b", re.IGNORECASE
)
# "tomorrow", "the day after tomorrow", "the day before yesterday": a day next to today.
_BESIDE_TODAY = re.compile(
    r"\b(?:(?:the\s+)?day\s+(?P<side>before\s+yesterday|after\s+tomorrow)|tomorrow)\b",
    re.IGNORECASE,
)
# "next week", "next month", "next Friday": what comes after today; "the coming week",
# "this coming Friday", "the upcoming weekend" too (a week, month or year of them: one).
_NEXT = re.compile(
    rf"\b(next|(?:(?:the|this)\s+)?upcoming|(?:the|this)\s+coming)\s+"
    rf"(week|weekend|month|year|{'|'.join(_WEEKDAY_NAMES)})\b",
    re.IGNORECASE,
)
# "the week ahead", "the month ahead": as "the coming week".
_UNIT_AHEAD = re.compile(r"\bthe\s+(week|month|year)\s+ahead\b(?!\s+of\b)", re.IGNORECASE)
# "the week after next", "the weekend after next": a week beyond next week.
_AFTER_NEXT = re.compile(
    rf"\b(week|weekend)\s+after\s+next\b(?!\s+(?:week|weekend|month|year"
    rf"|{'|'.join(_WEEKDAY_NAMES)})\b)",
    re.IGNORECASE,
)
# "in the next two weeks", "the next 7 days", "the coming days", "in the past two weeks",
# "the last 10 days": a count of days from today, ahead or back; without a count only ahead
# ("the coming weeks": a few). Not "the last two weeks of the trip". No count with "a"
# ("a week", "a few days") counts here: "the past a week" is no English, and "did the rain
# last a week?" or "did the storm last a few days?" asks of no week or days.
_SPAN_FROM_TODAY = re.compile(
    r"\b(?P<side>next|coming|past|last)\s+(?:(?P<count>\d{1,3}|"
    + "|".join(c for c in COUNT_WORDS.split("|") if c.split("\\s+")[0] not in ("a", "an"))
    + r")\s+(?P<unit>day|week|month|year)s?|(?P<units>day|week|month|year)s)\b(?!\s+of\b)",
    re.IGNORECASE,
)
# A question that looks ahead: "on Friday" is the one to come ("what will we do on Friday",
# "what do I have planned on Friday", "what's on Friday", "is anything happening on
# Friday"), unless it also asks of the past ("what did we plan", "the woman I met on
# Friday": a bare "is" or "what's" reads ahead no question of the past).
_LOOKS_AHEAD = re.compile(
    r"\b(?:will|going\s+to|gonna|shall|plann(?:ed|ing)|scheduled|booked|upcoming"
    r"|coming\s+up|do\s+(?:i|we)\s+have|happening|(?:what|who)(?:['\u2019]s|\s+is)\s+on"
    # The present progressive asks of plans: "what are we doing in January?"
    r"|(?:am\s+i|are\s+(?:we|you|they))\s+(?!(?:still|not)\b)\w+ing"
    # Where or when something is, or who is coming, asks of a day to come, as a note telling
    # it reads: "When is the dentist on the 10th?", "Who is coming on Friday?".
    r"|(?:when|where)(?:['\u2019]s|\s+(?:is|are))"
    r"|(?:is|are)\s+(?:[\w'\u2019-]+\s+){0,2}?(?:coming|arriving|leaving|visiting|flying)"
    # A question in the present of a day asks of the day to come, as a note telling it
    # reads: "Is the dentist on the 10th?", "Am I free on Friday?", "Is there anything on
    # Friday?" (asked on a Monday, they read the days gone); "the plan for Friday".
    r"|(?:^|[:;,.!?])\W*(?:is|are|am|do|does)\b|plans?\s+for"
    # So does one of what one can or should do, "Can I deploy on Friday?" ("Could I have
    # missed…" asks back), and one without its verb, "Anything on Friday?", "Any meetings on
    # Friday?" (as "Is there anything…"; each read the Friday gone; "Anything happen on
    # Friday?", "Anyone know what broke on Friday?" ask back).
    r"|(?:^|[:;,.!?])\W*(?:(?:can|could|should|may|must)\s+(?:i|we)\b(?!\s+have\b)"
    r"|any(?:thing)?\s+(?:\w+s\s+)?(?:on|for)\b))\b",
    re.IGNORECASE,
)
_LOOKS_BACK = re.compile(
    r"\b(?:did|was|were|had|went|met|bought|ate|saw|got|made|took|paid|happened|found|said"
    r"|told|left|lost|sent|started|ended|finished|decided|fixed|talked|discussed|learn[et]d?"
    r"|noticed|mentioned)\b"
    # A clause in the past inside a question in the present: "Is the cake I baked on Friday
    # still good?", "Does Ana like the gift I gave her?", "Who stayed until Friday?" (not
    # the question's own "Am I booked", "Are we scheduled", "have we planned").
    r"|(?<!\bam\s)(?<!\bare\s)(?<!\bis\s)(?<!\bhave\s)(?<!\bhas\s)(?<!\bdo\s)(?<!\bdoes\s)"
    r"\b(?:i|we|you|he|she|they|who)\s+(?:just\s+|already\s+|recently\s+)?(?:\w+[^e\W]ed|gave|wrote"
    r"|brought|drove|flew|ran|sang|swam|won|threw|drew|chose|spoke|broke|forgot|sold|built"
    r"|taught|caught|kept|held|spent|lent|came|drank|began|grew|knew|wore|sat|stood)\b",
    re.IGNORECASE,
)
# Words just before a month that place it in the past, whatever else the question asks:
# "how are you feeling about last January", "since March", "notes from the November…".
_GONE_BEFORE = re.compile(
    r"\b(?:last|since|from|past|previous|back\s+in)\s+(?:the\s+)?$", re.IGNORECASE
)
# "later this week", "earlier this month": the part of "this week" after or before today.
_LATER_OR_EARLIER = re.compile(r"\b(later|earlier)\s+(?:in\s+)?$", re.IGNORECASE)
_LATER_OR_EARLIER_THIS = re.compile(
    r"\b(?:later|earlier)\s+(?:in\s+)?this\s+(?:week|weekend|month|year)\b", re.IGNORECASE
)
#: After an ordinal day: an end, a mark, or a word that cannot be the ordinal's noun ("the 3rd
#: floor" is none). A pattern's source, read alike by ``event_time``.
NO_ORDINAL_NOUN = (
    r"(?=\s*(?:$|[^\w\s]|(?:and|after|at|when|so|but|with|because|which|where|too|as|i|we|you"
    r"|he|she|they|it|my|our|the|this|that|to|for|in|was|were|is|will)\b))"
)
# "on the 10th": a day of the month, not "on the 3rd floor"; "of next month" names the month.
_DAY_OF_MONTH = re.compile(
    r"\bon\s+the\s+(?P<day>[12]?\d|3[01])(?:st|nd|rd|th)\b"
    r"(?:\s+(?:of\s+)?(?P<which>this|next|last)\s+month\b)?" + NO_ORDINAL_NOUN,
    re.IGNORECASE,
)
#: Ordinal days with no month: "from the 20th to the 23rd", "between the 20th and the 23rd",
#: "20th-23rd", "from the 28th to the 3rd". A pattern's source (``ordinal_days`` says which
#: of its matches are days), read alike by ``event_time``: only before what cannot be the
#: ordinals' noun ("from the 1st to the 3rd floor", "the 18th-19th century" are none).
ORDINAL_DAYS = (
    r"\b(?:(?P<kw>from|between)\s+)?(?P<the>the\s+)?(?P<d1>[12]?\d|3[01])(?:st|nd|rd|th)"
    r"(?:\s*(?P<dash>-|\u2013)\s*|\s+(?P<word>to|until|till|through|thru|and)\s+(?:the\s+)?)"
    r"(?P<d>[12]?\d|3[01])(?:st|nd|rd|th)\b" + NO_ORDINAL_NOUN
)
_ORDINAL_DAYS = re.compile(ORDINAL_DAYS, re.IGNORECASE)
# A place in an order, told of someone: "I was 1st-2nd in line", "she finished 2nd-3rd".
_RANKED = re.compile(
    r"(?:\b(?:was|were|is|are|am|be|been|came|come|comes|finish(?:ed|es)?|plac(?:ed|es|e)"
    r"|rank(?:ed|s)?|got|gets?)|['\u2019](?:m|re|s))\s+$",
    re.IGNORECASE,
)
#: How long a stretch of ordinal days across a month's end may be ("from the 28th to the
#: 3rd"); "from the 23rd to the 20th" is no stretch said so.
ORDINAL_DAYS_ACROSS = timedelta(days=21)
#: A deadline: "by Friday", "by next Friday" ("by" alone drops what follows it in a note); not
#: "by Friday's place", nor "by Friday of next week". A pattern's source, read alike by
#: ``event_time``.
BY_WEEKDAY = (
    r"\bby\s+(?:(?P<which>next|this\s+coming|this)\s+)?"
    rf"(?P<wd>{'|'.join(_WEEKDAY_NAMES)})\b(?!['\u2019]s\b)(?!\s+of\b)"
)
_BY_WEEKDAY = re.compile(BY_WEEKDAY, re.IGNORECASE)
# "by 15 December", "by December 15th", "by the 15th of December": a deadline of a day.
_BY = re.compile(r"\bby\s+", re.IGNORECASE)
# "by the end of March": a deadline of a month's end.
_BY_END_OF = re.compile(
    rf"\bby\s+(?:the\s+)?end\s+of\s+({_MONTH_WORD})\b\.?(?:,?\s+(\d{{4}}))?", re.IGNORECASE
)
#: What is to be done or comes ("is due", "deadline", "needs to", "send", "will", "need it
#: by"): a deadline said with it is one to come. A pattern's source, read alike by ``event_time``.
DUE_WORDS = (
    r"\b(?:(?:is|are)\s+due|due\s+(?:on|by|date)|deadline|remind(?:er)?|send|submit"
    r"|finish|write|prepare|needs?\s+to|has\s+to"
    r"|have\s+to|must|will|going\s+to|shall"
    # What one needs, wants or will have ready by a day: "I need it by Friday", "can you have
    # it ready by Thursday", "let's get it done by 15 December".
    r"|(?:needs?|wants?)\s+(?:it|this|that|them)\s+(?:back\s+)?by"
    r"|(?:have|has|get|gets)\s+(?:it|this|that|them)\s+(?:ready|done|finished)\s+by)\b"
)
_DUE = re.compile(DUE_WORDS, re.IGNORECASE)
#: "at the end of the month", "by the end of the month", not "the end of the month-long trip"
#: nor "the end of the month of May". A pattern's source, read alike by ``event_time``.
END_OF_THE_MONTH = (
    r"\b(?:by\s+)?(?:the\s+)?end\s+of\s+the\s+month\b(?!-)(?!\s+(?:of|before|after)\b)"
)
_END_OF_THE_MONTH = re.compile(END_OF_THE_MONTH, re.IGNORECASE)
#: The days at a month's end that "the end of the month" may mean.
MONTH_END_DAYS = 7
# "Is Sam coming Thursday?": a weekday after the verb ("the coming Thursday" is ``_NEXT``'s).
_COMING_WEEKDAY = re.compile(
    rf"(?<!\bthe\s)(?<!\bthis\s)\bcoming\s+({'|'.join(_WEEKDAY_NAMES)})\b", re.IGNORECASE
)
# A weekday ending a question without "on": "Am I free Friday?", "Are we meeting Friday?"
# (read only when the question looks ahead; "Was I free Friday?" stays no day).
_LAST_WORD_WEEKDAY = re.compile(
    rf"(?<!\bthe\s)(?<!\bthis\s)(?<!\blast\s)(?<!\bnext\s)(?<!\bcoming\s)"
    rf"\b({'|'.join(_WEEKDAY_NAMES)})\s*\?*\s*$",
    re.IGNORECASE,
)
# "on Thursday the 19th", "Tuesday 1st", "Wed 18th": a weekday and an ordinal day of the month.
_WEEKDAY_DAY = re.compile(
    rf"\b({'|'.join(_WEEKDAY_NAMES)}|(?:mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\.?),?\s+"
    r"(?:the\s+)?(?P<day>[12]?\d|3[01])(?:st|nd|rd|th)\b",
    re.IGNORECASE,
)
# "this morning", "this afternoon", "this evening": today.
_PART_OF_TODAY = re.compile(r"\bthis\s+(?:morning|afternoon|evening)\b", re.IGNORECASE)
_MONTH_CUE = re.compile(r"\b(?:in|of|during|since|until|early|late|mid)\s*$")
# Before "May" of a year said relative to this one, a cue of the month too ("plans for May
# next year"); not a word "may" the verb follows ("what may this year bring").
_MAY_OF_YEAR_CUE = re.compile(r"\b(?:for|by|to|from|before|after|till|on|at)\s*$")

Window = tuple[datetime, datetime]


def _month(year: int, month: int) -> Window:
    start = datetime(year, month, 1, tzinfo=UTC)
    return start, start + timedelta(days=monthrange(year, month)[1])


def _latest_year(month: int, reference: datetime) -> int:
    """The year of the latest such month that is not in the future: a month said without
    its year."""
    return reference.year if month <= reference.month else reference.year - 1


def _next_year(month: int, day: int | None, reference: datetime) -> int:
    """The year of the first such month (or day of it) from ``reference``'s on: a month said
    without its year by a question that looks ahead."""
    if (month, day or 0) < (reference.month, reference.day if day else 0):
        return reference.year + 1
    return reference.year


def _day(day: datetime) -> Window:
    # A day named in words is taken with a day's slack either side: the observation may be
    # stamped in another time zone, or at the end of the evening before.
    return day - timedelta(days=1), day + timedelta(days=2)


# A question after a time or a duration: "When did ...", "what year ...", "how long ago ...",
# "how many years ago ...", "what was the date of ...". Not "how many weeks passed between
# ...": counting it lowered temporal recall on LoCoMo (see the README).
_ASKS_WHEN = re.compile(
    r"^\W*(?:since\s+|until\s+|till\s+)?when\b|\bwhen\s+(?:did|does|do|was|were|is|are|will"
    r"|has|have|had)\b|\b(?:what|which)\s+(?:date|day|days|year|years|month|months|week"
    r"|weekend|season|time\s+of\s+(?:year|day))\b|\bhow\s+long\b|\bin\s+what\s+year\b"
    r"|\bhow\s+many\s+(?:days|weeks|months|years)\s+ago\b|\bthe\s+date\s+of\b",
    re.IGNORECASE,
)


def asks_when(query: str) -> bool:
    """Whether ``query`` asks when something happened or how long it lasted: then the
    observations that place their event in time (``event_time``) are the likelier answers."""
    return _ASKS_WHEN.search(query) is not None


def time_window(query: str, reference: datetime) -> Window | None:
    """The span of time ``query`` refers to, or None if it names none.

    Args:
        query: the recall query.
        reference: the time relative words are read against (aware UTC).

    Returns:
        (start, end), end exclusive, or None.
    """
    try:
        return _window(query, reference)
    except (OverflowError, ValueError):
        # The span reaches past the years a datetime holds (1 to 9999): "December 9999"
        # ends in 10000, "5 years ago" read as of year 3 starts before year 1. The query is
        # still answered, only without a time boost.
        return None


# "the week before 16 November 2023", "the weekend after May 3": a stretch next to a day.
_NEXT_TO_DAY = re.compile(
    r"\b(?:the\s+)?(?P<unit>day|week|weekend|month)\s+(?P<side>before|after|prior\s+to"
    r"|following)\s+",
    re.IGNORECASE,
)
# "the second week of November": that week of the month.
_WEEK_OF = re.compile(
    rf"\b(?P<nth>first|second|third|fourth|last|1st|2nd|3rd|4th)\s+week\s+of\s+"
    rf"(?P<month>{_MONTH_WORD})\b\.?(?:,?\s+(?P<year>\d{{4}}))?",
    re.IGNORECASE,
)
_LEADING_THE = re.compile(r"^the\s+", re.IGNORECASE)
_NTH = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}


def _named_day(text: str, reference: datetime, *, ahead: bool = False) -> datetime | None:
    """The day ``text`` starts with ("16 November 2023", "May 3", "the 3rd of May",
    "2023-05-04"), or None; said without its year, the latest such day (``ahead``: the first
    from ``reference``'s on)."""
    text = _LEADING_THE.sub("", text)
    match = _ISO_DATE.match(text)
    if match:
        return datetime(int(match[1]), int(match[2]), int(match[3]), tzinfo=UTC)
    match = _MONTH_DATE.match(text)
    if match is None or not (match[1] or match[3]):
        return None
    month, day = MONTHS[match[2].casefold()], int(match[1] or match[3])
    if match[4]:
        year = int(match[4])
    else:
        year = _next_year(month, day, reference) if ahead else _latest_year(month, reference)
    return datetime(year, month, day, tzinfo=UTC)


def _next_to_day(query: str, reference: datetime) -> Window | None:
    for match in _NEXT_TO_DAY.finditer(query):
        try:
            day = _named_day(query[match.end() :], reference)
        except ValueError:  # no such day ("31 April")
            day = None
        if day is None:
            continue
        unit, before = match["unit"].casefold(), match["side"].casefold() in ("before", "prior to")
        if unit == "day":
            return _day(day - timedelta(days=1) if before else day + timedelta(days=1))
        if unit == "weekend":
            # The Saturday and Sunday just before (or after) the day, a day of slack each side.
            if before:
                saturday = day - timedelta(days=(day.weekday() - 5) % 7 or 7)
                if saturday + timedelta(days=1) >= day:
                    saturday -= timedelta(days=7)
            else:
                saturday = day + timedelta(days=(5 - day.weekday()) % 7 or 7)
            return saturday - timedelta(days=1), saturday + timedelta(days=3)
        span = timedelta(days=7 if unit == "week" else 31)
        return (
            (day - span, day)
            if before
            else (day + timedelta(days=1), day + span + timedelta(days=1))
        )
    return None


def _week_of(query: str, reference: datetime) -> Window | None:
    match = _WEEK_OF.search(query)
    if match is None:
        return None
    month = MONTHS[match["month"].casefold()]
    year = int(match["year"]) if match["year"] else _latest_year(month, reference)
    start, end = _month(year, month)
    nth = match["nth"].casefold()
    if nth == "last":
        return end - timedelta(days=7), end
    first = start + timedelta(days=7 * (_NTH[nth] - 1))
    return first, first + timedelta(days=7)


def season_window(name: str, year: int) -> Window:
    """The season called ``name`` that begins in ``year`` (winter runs into the next)."""
    first = SEASONS[name.casefold()]
    start = datetime(year, first, 1, tzinfo=UTC)
    end_year, end_month = (year + 1, first - 9) if first > 9 else (year, first + 3)
    return start, datetime(end_year, end_month, 1, tzinfo=UTC)


def _named_season(query: str, reference: datetime) -> Window | None:
    match = _SEASON_OF_YEAR.search(query)
    if match:
        year = int(match[2])
        if match[1].casefold() == "winter":
            # Either end of the winter that straddles the new year: the year holds both.
            return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
        return season_window(match[1], year)
    match = _SEASON_NAMED.search(query)
    if match is None:
        return None
    ended = (match[1] or "").casefold() in ("last", "past")
    for year in (reference.year, reference.year - 1, reference.year - 2):
        start, end = season_window(match[2], year)
        # "last summer" has ended; "this summer", "during the summer" may be going on.
        if (end if ended else start) <= reference:
            return start, end
    return None


def _range(query: str, reference: datetime) -> Window | None:
    """From the start of the first time to the end of the last: "between May and July 2023"
    (a year said once, at the end, holds for both)."""
    for match in _RANGE.finditer(query):
        first, last = match["first"], match["last"]
        year = _FOUR_DIGIT_YEAR.search(last)
        if year and not _FOUR_DIGIT_YEAR.search(first):
            first = f"{first} {year[0]}"
        begin = _window(f"in {first}", reference, ranges=False)
        end = _window(f"in {last}", reference, ranges=False)
        if begin is not None and end is not None and begin[0] < end[1]:
            return begin[0], end[1]
    return None


def relative_window(query: str, reference: datetime) -> Window | None:
    """The span ``query`` names from today ("yesterday", "tomorrow", "last week", "next
    Friday", "two days ago"), or None if it names none or names a time of its own ("on 9
    May": ``time_window``)."""
    try:
        if _absolute(query, reference) is not None:
            return None
        return _relative(query, reference)
    except (OverflowError, ValueError):
        return None


# The words that name days from the day they are said: in a note, another day than in the
# question ("last Tuesday", but not "on Tuesday": a weekly habit may be told so).
_FROM_TODAY = (
    # "the 31st of next month", whole, before "next month" alone is taken and leaves "the 31st
    # of" (a bare "on the 10th" stays, as "on Friday" does). Only after "on", as the window
    # reads that day: without it the window is next month's, and the day's words are all
    # that says which day.
    re.compile(
        r"(?<=\bon\s)the\s+(?:[12]?\d|3[01])(?:st|nd|rd|th)\s+(?:of\s+)?(?:this|next|last)"
        r"\s+month\b",
        re.I,
    ),
    _LATER_OR_EARLIER_THIS,
    re.compile(rf"\b(?:(?:in|over|within|during)\s+)?(?:the\s+)?{_SPAN_FROM_TODAY.pattern}", re.I),
    re.compile(rf"\b(?:the\s+)?{_AFTER_NEXT.pattern}", re.I),
    re.compile(rf"\b(?:(?:in|over|within|during)\s+)?{_UNIT_AHEAD.pattern}", re.I),
    _AGO,
    _BESIDE_TODAY,
    _NEXT,
    _PART_OF_TODAY,
    _RELATIVE,
    re.compile(rf"\b(?:last|past|previous|this)\s+(?:{'|'.join(_WEEKDAY_NAMES)})\b", re.I),
)


def without_days_from_today(query: str) -> str | None:
    """``query`` without its words naming days from today ("What do I have tomorrow?" ->
    "What do I have ?"), or None when it has none or nothing else."""
    plain = query
    for words in _FROM_TODAY:
        plain = words.sub(" ", plain)
    plain = " ".join(plain.split())
    if plain == " ".join(query.split()) or not re.search(r"\w", plain):
        return None
    return plain


def _window(query: str, reference: datetime, *, ranges: bool = True) -> Window | None:
    return _absolute(query, reference, ranges=ranges) or _relative(query, reference)


def _absolute(query: str, reference: datetime, *, ranges: bool = True) -> Window | None:
    """The span ``query``'s own times name (a date, a month, a year, a season, a range)."""
    window = (
        (_range(query, reference) if ranges else None)
        or _by_day(query, reference)
        or _until(query, reference)
        or _next_to_day(query, reference)
        or _week_of(query, reference)
        or _named_season(query, reference)
    )
    if window is not None:
        return window
    match = _ISO_DATE.search(query)
    if match:
        try:
            day = datetime(int(match[1]), int(match[2]), int(match[3]), tzinfo=UTC)
        except ValueError:
            day = None
        if day is not None:
            return day, day + timedelta(days=1)
    for match in _MONTH_DATE.finditer(query):
        day_text, word, day_after, year_text = match[1], match[2].casefold(), match[3], match[4]
        day_text = day_text or day_after
        # "may" is also a verb: a month only with a day or year, or after a cue ("in May").
        # Only the cue word just before counts: a slice of the whole text before each month
        # made a text of many "may"s take quadratic time.
        before = query[max(0, match.start() - 30) : match.start()].casefold()
        relative = None if year_text else _OF_RELATIVE_YEAR.match(query, match.end())
        if (
            word == "may"
            and day_text is None
            and year_text is None
            and not _MONTH_CUE.search(before)
            # "for May next year"; "what may this year bring" is the verb.
            and not (relative is not None and _MAY_OF_YEAR_CUE.search(before))
        ):
            continue
        month = MONTHS[word]
        if year_text:
            year = int(year_text)
        elif relative is not None:
            # "in May last year", "on 3 June next year": of that year, as a note reads it.
            year = relative_year(relative["rel"], reference.year)
        elif _looks_ahead(query) and not _GONE_BEFORE.search(before):
            # "What do I have in January?" asked in December: the one to come (the latest was
            # eleven months gone); "on 3 January" too, unless it is today.
            year = _next_year(month, int(day_text) if day_text else None, reference)
        else:
            year = _latest_year(month, reference)
        if day_text:
            try:
                return _day(datetime(year, month, int(day_text), tzinfo=UTC))
            except ValueError:
                pass
        return _month(year, month)
    match = _YEAR.search(query)
    if match:
        year = int(match[1])
        return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    return None


def _relative(query: str, reference: datetime) -> Window | None:
    """The span ``query`` names from ``reference``'s day: some time ago, or beside today."""
    match = _AGO.search(query)
    if match:
        count = COUNTS.get(" ".join(match[1].casefold().split())) or int(match[1])
        unit = match[2].casefold()
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * count
        centre = reference - timedelta(days=days)
        slack = timedelta(days=max(1, days // 4))
        return centre - slack, centre + slack
    return _beside_today(query, reference)


def _beside_today(query: str, reference: datetime) -> Window | None:
    """Days and stretches named from today: yesterday, tomorrow, last or next week, a
    weekday before or after it."""
    today = reference.replace(hour=0, minute=0, second=0, microsecond=0)
    match = _BESIDE_TODAY.search(query)
    if match:
        side = " ".join((match["side"] or "").casefold().split())
        shift = {"before yesterday": -2, "after tomorrow": 2}.get(side, 1)
        return today + timedelta(days=shift), today + timedelta(days=shift + 1)
    window = (
        _until_next(query, today)
        or _until_end_of(query, today)
        or _span_from_today(query, today)
        or _by_weekday(query, today)
        or _end_of_the_month(query, today)
        or _ordinal_days_asked(query, today)
    )
    if window is not None:
        return window
    match = _WEEKDAY_DAY.search(query)
    if match:
        return _weekday_day(match, query, today)
    match = _DAY_OF_MONTH.search(query)
    if match:
        return _day_of_month(match, query, today)
    match = _NEXT.search(query)
    if match:
        unit = match[2].casefold()
        if unit in _WEEKDAY_NAMES:
            ahead = (_WEEKDAY_NAMES.index(unit) - today.weekday()) % 7 or 7
            return _day(today + timedelta(days=ahead))
        which = " ".join(match[1].casefold().split())
        if unit == "weekend":
            # The first Saturday and Sunday after today, a day of slack each side.
            saturday = today + timedelta(days=(5 - today.weekday()) % 7 or 7)
            end = saturday + timedelta(days=3)
            if which == "next" and today.weekday() < 5:
                # Told on a weekday, a note reads "next weekend" as next week's: "Dinner
                # with Ana next weekend" said that week is found asking on a weekday too.
                end += timedelta(days=7)
            return saturday - timedelta(days=1), end
        span = {"week": 7, "month": 31, "year": 366}[unit]
        if which in ("this coming", "this upcoming"):
            # The first not yet begun, Monday to Sunday (the calendar month, year), as a note
            # reads it: "this coming" names what is still to come, as "this coming Friday" is
            # the first Friday ahead; a week under way is "this week". Said mostly at a
            # weekend, where the two meet; on a Wednesday it is next week, not its rest.
            if unit == "week":
                monday = today + timedelta(days=7 - today.weekday())
                return monday, monday + timedelta(days=7)
            if unit == "month":
                first = _month(today.year, today.month)[1]
                return _month(first.year, first.month)
            return datetime(today.year + 1, 1, 1, tzinfo=UTC), datetime(
                today.year + 2, 1, 1, tzinfo=UTC
            )
        if not which.startswith("next"):
            # "the coming week": the seven days from today.
            return today, today + timedelta(days=span + 1)
        # As "last week" reaches back two weeks, "next week" reaches two ahead.
        return today + timedelta(days=1), today + timedelta(days=2 * span + 1)
    match = _UNIT_AHEAD.search(query)
    if match:
        # "the week ahead": the seven days from today, as "the coming week".
        span = {"week": 7, "month": 31, "year": 366}[match[1].casefold()]
        return today, today + timedelta(days=span + 1)
    match = _COMING_WEEKDAY.search(query)
    if match:
        # "Is Sam coming Thursday?": the one to come, as a note reads it (not today), or the
        # latest, today's too, when the question looks back ("Was Sam coming Thursday?").
        weekday = _WEEKDAY_NAMES.index(match[1].casefold())
        if _LOOKS_BACK.search(query) and not _LOOKS_AHEAD.search(query):
            return _day(today - timedelta(days=(today.weekday() - weekday) % 7))
        return _day(today + timedelta(days=(weekday - today.weekday() - 1) % 7 + 1))
    match = _ASKED_WEEKDAY.search(query)
    if match:
        weekday = _WEEKDAY_NAMES.index(match[2].casefold())
        if match[1].casefold() in ("on", "for") and _looks_ahead(query):
            return _day(today + timedelta(days=(weekday - today.weekday()) % 7))
        if match[1].casefold() == "this":
            # The one of this week, Monday to Sunday, as "this weekend" ("What's on this
            # Saturday?" asked on a Wednesday read the Saturday gone); the latest when the
            # question looks back, the next when it looks ahead.
            if _looks_ahead(query):
                return _day(today + timedelta(days=(weekday - today.weekday()) % 7))
            if _LOOKS_BACK.search(query) is None:
                return _day(today + timedelta(days=weekday - today.weekday()))
        back = (today.weekday() - weekday) % 7
        if back == 0 and match[1].casefold() in ("last", "past", "previous"):
            back = 7
        return _day(today - timedelta(days=back))
    match = _LAST_WORD_WEEKDAY.search(query)
    if match and _looks_ahead(query):
        weekday = _WEEKDAY_NAMES.index(match[1].casefold())
        return _day(today + timedelta(days=(weekday - today.weekday()) % 7))
    if _PART_OF_TODAY.search(query):
        return _day(today)
    match = _RELATIVE.search(query)
    if match:
        words = " ".join(match[1].casefold().split())
        day = today
        if words == "yesterday":
            return day - timedelta(days=1), day
        if words in ("today", "tonight"):
            return day, day + timedelta(days=1)
        unit = words.split()[1]
        if words.startswith("this"):
            later = _LATER_OR_EARLIER.search(query[max(0, match.start() - 20) : match.start()])
            if later is None and unit == "weekend" and _LOOKS_BACK.search(query):
                # "What did we do this weekend?" asked on a Monday: the one just gone.
                saturday = day - timedelta(days=(day.weekday() - 5) % 7)
                return saturday - timedelta(days=1), saturday + timedelta(days=3)
            return _this(unit, day, later[1].casefold() if later else None)
        span = {"week": 7, "weekend": 3, "month": 31, "year": 366}[unit]
        return day - timedelta(days=2 * span), day
    return None


def _this(unit: str, today: datetime, side: str | None) -> Window:
    """The calendar week (Monday to Sunday), weekend, month or year holding ``today``; with
    ``side`` "later" only from today on, with "earlier" only up to today (through it)."""
    if unit == "week":
        start = today - timedelta(days=today.weekday())
        end = start + timedelta(days=7)
    elif unit == "weekend":
        # The Saturday and Sunday of this week (on a Sunday, yesterday and today), a day of
        # slack each side as for any weekend.
        saturday = today + timedelta(days=5 - today.weekday())
        start, end = saturday - timedelta(days=1), saturday + timedelta(days=3)
    elif unit == "month":
        start, end = _month(today.year, today.month)
    else:
        start = datetime(today.year, 1, 1, tzinfo=UTC)
        end = datetime(today.year + 1, 1, 1, tzinfo=UTC)
    if side == "later" and today < end:
        return max(start, today), end
    if side == "earlier" and start <= today:
        return start, min(end, today + timedelta(days=1))
    return start, end


def _span_from_today(query: str, today: datetime) -> Window | None:
    """A count of days, weeks, months or years from ``today``, through today: "in the next
    two weeks", "the last 10 days", "the coming days"; or the week (or weekend) after next."""
    match = _AFTER_NEXT.search(query)
    if match:
        monday = today + timedelta(days=14 - today.weekday())
        if match[1].casefold() == "week":
            return monday, monday + timedelta(days=7)
        # The weekend after next weekend (the first Saturday and Sunday after today).
        saturday = today + timedelta(days=((5 - today.weekday()) % 7 or 7) + 7)
        return saturday - timedelta(days=1), saturday + timedelta(days=3)
    for match in _SPAN_FROM_TODAY.finditer(query):
        side = match["side"].casefold()
        ahead = side in ("next", "coming")
        if match["count"] is None and not ahead:
            continue  # "the last days of summer"
        words = " ".join((match["count"] or "few").casefold().split())
        count = COUNTS.get(words) or int(words)
        unit = (match["unit"] or match["units"]).casefold()
        days = timedelta(days={"day": 1, "week": 7, "month": 31, "year": 366}[unit] * count)
        if ahead:
            return today, today + days + timedelta(days=1)
        return today - days, today + timedelta(days=1)
    return None


def _asks_by(query: str) -> bool:
    """Whether a deadline ``query`` names ("by Friday") is one to come: the question looks
    ahead or asks of what is due ("What is due by Friday?"), and not of the past ("What did
    I finish by Friday?")."""
    return (
        _LOOKS_AHEAD.search(query) is not None
        or _DUE.search(query) is not None
        or _NEED_ASKED.search(query) is not None
    ) and _LOOKS_BACK.search(query) is None


# "What do I need by Friday?", "what does Sam need by the 15th": what is needed by a day is due.
_NEED_ASKED = re.compile(r"\b(?:do|does)\s+\w+\s+(?:still\s+)?need\b", re.IGNORECASE)


def _by_weekday(query: str, today: datetime) -> Window | None:
    """A deadline "by Friday" ("by next Friday"): from today through that Friday, when
    ``_asks_by``. Asked on a Friday, "by Friday" and "by this Friday" are today, as a note
    said then reads them, and "by next Friday" is a week on."""
    match = _BY_WEEKDAY.search(query)
    if match is None or not _asks_by(query):
        return None
    weekday = _WEEKDAY_NAMES.index(match["wd"].casefold())
    ahead = (weekday - today.weekday()) % 7
    if ahead == 0 and (match["which"] or "").casefold() not in ("", "this"):
        ahead = 7
    return today, today + timedelta(days=ahead + 1)


def _by_day(query: str, reference: datetime) -> Window | None:
    """A deadline "by 15 December", "by December 15th", "by the end of March": from today
    through that day (or month), the first from today on, when ``_asks_by``; None for one
    gone ("by 15 December 2025"), which is read as the day it names."""
    if not _asks_by(query):
        return None
    today = reference.replace(hour=0, minute=0, second=0, microsecond=0)
    match = _BY_END_OF.search(query)
    if match:
        month = MONTHS[match[1].casefold()]
        year = int(match[2]) if match[2] else _next_year(month, None, reference)
        end = _month(year, month)[1]
        return (today, end) if end > today else None
    return _through_day_after(_BY, query, reference, today)


def _through_day_after(
    word: re.Pattern[str], query: str, reference: datetime, today: datetime
) -> Window | None:
    """From ``today`` through the first day named right after a match of ``word`` ("by",
    "until") that is not gone (said without its year, the first such day from today on)."""
    for match in word.finditer(query):
        try:
            # A day is a few words: a text of many "by"s costs each 40 characters.
            day = _named_day(query[match.end() : match.end() + 40], reference, ahead=True)
        except ValueError:  # no such day ("31 April")
            continue
        if day is not None and day >= today:
            return today, day + timedelta(days=1)
    return None


# "Where is Sam until Friday?", "Is the office closed till 15 December?": a state asked of
# from today through a time to come, as a note reads it.
_UNTIL = re.compile(r"\b(?:until|till)\s+", re.IGNORECASE)
_UNTIL_WEEKDAY = re.compile(
    rf"\b(?:until|till)\s+(?:(?:next|this)\s+)?({'|'.join(_WEEKDAY_NAMES)})\b(?!['\u2019]s\b)",
    re.IGNORECASE,
)

#: What "until" ends at the start of, before "weekend" (week, month, year), in a question as in
#: a note: "next" (the road "closed until next week" opens on Monday), "this" weekend (up to
#: this week's Saturday), "the coming weekend" ("this coming", "the upcoming": up to the first
#: Saturday not yet begun, ``first_saturday_to_come``).
UNTIL_NEXT_WHICH = r"next|(?:this|the)\s+(?:up)?coming(?=\s+weekend\b)|this(?=\s+weekend\b)"
# "Where is Sam until next week?": up to when that week (weekend, month, year) begins, as a
# note reads "until next week".
_UNTIL_NEXT = re.compile(
    rf"\b(?:until|till)\s+({UNTIL_NEXT_WHICH})\s+(weekend|week|month|year)\b", re.IGNORECASE
)


def first_saturday_to_come(today: datetime) -> datetime:
    """The Saturday of the first weekend not yet begun on ``today`` (a day's midnight): "the
    coming weekend" said on a Saturday or a Sunday is the next one, as "coming" names what is
    still to come (the one under way is "this weekend")."""
    saturday = today + timedelta(days=5 - today.weekday())
    return saturday if today < saturday else saturday + timedelta(days=7)


def _until(query: str, reference: datetime) -> Window | None:
    """From today through the weekday or day after "until" (the first such weekday after
    today, the first such day from today on), unless the question looks back ("Where did
    Sam stay until Friday?" asks when a stay ended, not of the days up to it)."""
    if _UNTIL.search(query) is None or _LOOKS_BACK.search(query) is not None:
        return None
    today = reference.replace(hour=0, minute=0, second=0, microsecond=0)
    match = _UNTIL_WEEKDAY.search(query)
    if match:
        ahead = (_WEEKDAY_NAMES.index(match[1].casefold()) - today.weekday()) % 7 or 7
        return today, today + timedelta(days=ahead + 1)
    return _through_day_after(_UNTIL, query, reference, today)


def _until_next(query: str, today: datetime) -> Window | None:
    """From ``today`` up to the start of the week (weekend, month, year) after "until next",
    of this weekend after "until this weekend", or of the first weekend not yet begun after
    "until the coming weekend", unless the question looks back; a time
    named from today (``relative_window``), whose words a note of another week says of
    another one."""
    match = _UNTIL_NEXT.search(query)
    if match is None or _LOOKS_BACK.search(query) is not None:
        return None
    unit = match[2].casefold()
    monday = today + timedelta(days=7 - today.weekday())
    saturday = monday - timedelta(days=2)
    if match[1].casefold() == "this":
        # This week's Saturday; once the weekend is under way, through its Sunday.
        return today, saturday if today < saturday else monday
    if match[1].casefold() != "next":
        # "the coming weekend": the first not yet begun, as a note reads it.
        return today, first_saturday_to_come(today)
    if unit == "week":
        return today, monday
    if unit == "weekend":  # next week's Saturday, as a note reads "next weekend"
        return today, monday + timedelta(days=5)
    if unit == "month":
        return today, _month(today.year, today.month)[1]
    return today, datetime(today.year + 1, 1, 1, tzinfo=UTC)


# "Where is Sam until the end of this weekend?": from today through that week (weekend, month,
# year), as a note reads "until the end of next week"; "the end of the month" is
# ``_end_of_the_month``'s, as a note's.
_UNTIL_END_OF = re.compile(
    r"\b(?:until|till)\s+(?:the\s+)?end\s+of\s+(?:(this|next)\s+(weekend|week|month|year)"
    r"|the\s+(week|year))\b(?!-)(?!\s+of\b)",
    re.IGNORECASE,
)


def _until_end_of(query: str, today: datetime) -> Window | None:
    """From ``today`` through this or next week (weekend, month, year) after "until the end
    of", unless the question looks back; the window a note's "until" reads, not the weekend
    alone with a day's slack that "this weekend" asks of."""
    match = _UNTIL_END_OF.search(query)
    if match is None or _LOOKS_BACK.search(query) is not None:
        return None
    unit = (match[2] or match[3]).casefold()
    step = 1 if (match[1] or "").casefold() == "next" else 0
    if unit in ("week", "weekend"):
        # This week and its weekend both end on Sunday (asked on a Sunday, today): up to the
        # Monday after; next week's (next weekend's, as a note reads it) a week on.
        monday = today + timedelta(days=7 - today.weekday())
        return today, monday + timedelta(days=7 * step)
    if unit == "month":
        end = _month(today.year, today.month)[1]
        return today, _month(end.year, end.month)[1] if step else end
    return today, datetime(today.year + 1 + step, 1, 1, tzinfo=UTC)


def month_of_its_end(today: datetime, *, past: bool) -> Window:
    """The month "the end of the month" names, said on ``today``: this one, or when ``past``
    the latest whose last ``MONTH_END_DAYS`` days have begun (said on 6 December, November).
    A note's event time and a question read it alike."""
    if past and today.day <= monthrange(today.year, today.month)[1] - MONTH_END_DAYS:
        year, month = divmod(today.year * 12 + today.month - 2, 12)
        return _month(year, month + 1)
    return _month(today.year, today.month)


def _end_of_the_month(query: str, today: datetime) -> Window | None:
    """ "What's happening at the end of the month?": this month when the question looks ahead
    or asks of what is due (``_asks_by``), else the latest gone (``month_of_its_end``)."""
    if _END_OF_THE_MONTH.search(query) is None:
        return None
    return month_of_its_end(today, past=not _asks_by(query))


def ordinal_days(match: re.Match[str], text: str) -> tuple[int, int] | None:
    """The first and the last day an ``ORDINAL_DAYS`` match in ``text`` names, or None when
    it names none: "and" only after "between" (and "between" only with "and"), a word joins
    them only after "the" ("went from 1st to 3rd" is a ranking), no place in an order told
    of someone ("I was 1st-2nd in line"), and no day to itself."""
    between = (match["kw"] or "").casefold() == "between"
    if between != ((match["word"] or "").casefold() == "and"):
        return None
    if match["word"] and not match["the"]:
        return None
    before = text[max(0, match.start() - 12) : match.start()]
    if not match["the"] and not match["kw"] and _RANKED.search(before):
        return None
    first, last = int(match["d1"]), int(match["d"])
    return None if first == last else (first, last)


def ordinal_days_span(first: int, last: int, today: datetime, *, past: bool) -> Window | None:
    """The days from the ``first`` to the ``last`` of a month (into the next month when
    ``last`` is the smaller: "from the 28th to the 3rd"), end exclusive: when ``past``, the
    latest month whose first day is today or gone; else the stretch under way if its last
    day is today or ahead (as "from 5 to 8 December" said on the 6th; across a month's end,
    begun last month: "from the 28th to the 3rd" said on 1 December), or the next that has
    both days. None when no month within a year has both days, or when a stretch across a
    month's end is longer than ``ORDINAL_DAYS_ACROSS``. A note's event time and a question
    read it alike."""
    across = last < first
    step = -1 if past else 1
    # Looking ahead, a stretch across a month's end may have begun last month.
    for offset in range(-1 if across and not past else 0, 13):
        year, month = divmod(today.year * 12 + today.month - 1 + step * offset, 12)
        end_year, end_month = divmod(year * 12 + month + across, 12)
        if first > monthrange(year, month + 1)[1] or last > monthrange(end_year, end_month + 1)[1]:
            continue
        start = datetime(year, month + 1, first, tzinfo=UTC)
        end = datetime(end_year, end_month + 1, last, tzinfo=UTC) + timedelta(days=1)
        if (start <= today) if past else (end > today):
            return None if across and end - start > ORDINAL_DAYS_ACROSS else (start, end)
    return None


def _ordinal_days_asked(query: str, today: datetime) -> Window | None:
    """Ordinal days with no month ("What are we doing from the 20th to the 23rd?"), read as
    "on the 10th" is: ahead when the question looks ahead, else the latest gone."""
    for match in _ORDINAL_DAYS.finditer(query):
        days = ordinal_days(match, query)
        if days is not None:
            return ordinal_days_span(*days, today, past=not _looks_ahead(query))
    return None


def _looks_ahead(query: str) -> bool:
    """Whether ``query`` asks of what is to come ("what will we do on Friday") and not of the
    past ("what did we plan for Friday")."""
    return _LOOKS_AHEAD.search(query) is not None and _LOOKS_BACK.search(query) is None


#: How many months either side of today a weekday said with a day of the month may move it.
WEEKDAY_DATE_MONTHS = 6


def weekday_dates(wanted: int, weekday: int, today: datetime) -> list[datetime]:
    """The days (UTC midnights, in order) within ``WEEKDAY_DATE_MONTHS`` either side of
    ``today`` that are the ``wanted`` day of their month and fall on ``weekday`` (0 Monday):
    where "Thursday the 19th" may be, for a note's event time and a question's window."""
    fitting = []
    for offset in range(-WEEKDAY_DATE_MONTHS, WEEKDAY_DATE_MONTHS + 1):
        year, month = divmod(today.year * 12 + today.month - 1 + offset, 12)
        if 1 <= year <= 9999 and wanted <= monthrange(year, month + 1)[1]:
            day = datetime(year, month + 1, wanted, tzinfo=UTC)
            if day.weekday() == weekday:
                fitting.append(day)
    return fitting


def _weekday_day(match: re.Match[str], query: str, today: datetime) -> Window | None:
    """The day "Thursday the 19th" names: the nearest 19th, within six months either way,
    that is a Thursday (as a note's event time reads it; the weekday alone was a week
    off); a tie goes ahead when the question looks ahead, and a question that looks back
    asks of the latest gone ("what did I do on Friday the 18th?"). None when no month near
    has one."""
    if match[1].rstrip(".") in ("sat", "sun"):
        return None  # words too, read as weekdays only capitalised: "where I sat 3rd"
    if re.fullmatch(r"friday\s+the\s+13th", match[0], re.IGNORECASE) and not re.search(
        r"\bon\s+$", query[: match.start()], re.IGNORECASE
    ):
        return None  # the film's or the superstition's: "on Friday the 13th" is a day
    said = match[1].casefold()
    weekday = next(i for i, name in enumerate(_WEEKDAY_NAMES) if name.startswith(said[:3]))
    fitting = weekday_dates(int(match["day"]), weekday, today)
    if not fitting:
        return None
    ahead = _looks_ahead(query)
    gone = [day for day in fitting if day <= today]
    if gone and not ahead and _LOOKS_BACK.search(query):
        return _day(gone[-1])
    return _day(min(fitting, key=lambda day: (abs(day - today), (day < today) == ahead)))


def _day_of_month(match: re.Match[str], query: str, today: datetime) -> Window | None:
    """The day "on the 10th" names, read as a weekday is: the first such day from today on
    when the question looks ahead, else the latest up to today; in the month named, if one
    is ("of next month")."""
    wanted = int(match["day"])
    which = (match["which"] or "").casefold()
    if which:
        shift = {"this": 0, "next": 1, "last": -1}[which]
        year, month = divmod(today.year * 12 + today.month - 1 + shift, 12)
        if wanted > monthrange(year, month + 1)[1]:
            return None
        return _day(datetime(year, month + 1, wanted, tzinfo=UTC))
    step = 1 if _looks_ahead(query) else -1
    for offset in range(3):  # every day of a month is in one of three months in a row
        year, month = divmod(today.year * 12 + today.month - 1 + step * offset, 12)
        if wanted > monthrange(year, month + 1)[1]:
            continue
        day = datetime(year, month + 1, wanted, tzinfo=UTC)
        if (day >= today) if step > 0 else (day <= today):
            return _day(day)
    return None
