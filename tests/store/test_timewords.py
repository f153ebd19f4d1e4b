"""Time words in a query read as a window of time, against the recall's reference time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from doxa.store.event_time import event_times
from doxa.store.memory import Memory, MemoryDraft
from doxa.store.recall import question
from doxa.store.timewords import (
    COUNTS,
    asks_when,
    relative_window,
    time_window,
    without_days_from_today,
)
from doxa.store.values import micros

# A Saturday afternoon.
REFERENCE = datetime(2024, 6, 15, 13, 45, tzinfo=UTC)
TODAY = datetime(2024, 6, 15, tzinfo=UTC)


def day(year: int, month: int, d: int) -> datetime:
    return datetime(year, month, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "window"),
    [
        ("what happened on 2023-05-04?", (day(2023, 5, 4), day(2023, 5, 5))),
        # a model's name is no day
        ("what does GPT-4o-2024-08-06 score?", None),
        ("what did we decide in May 2023", (day(2023, 5, 1), day(2023, 6, 1))),
        ("sales during feb 2024", (day(2024, 2, 1), day(2024, 3, 1))),
        ("Jan. 2021 offsite", (day(2021, 1, 1), day(2021, 2, 1))),
        ("sept 2023 release", (day(2023, 9, 1), day(2023, 10, 1))),
        # a month without a year is the latest one not in the future
        ("the December party", (day(2023, 12, 1), day(2024, 1, 1))),
        ("trip in may", (day(2024, 5, 1), day(2024, 6, 1))),
        ("budget of May", (day(2024, 5, 1), day(2024, 6, 1))),
        ("where did Alice live in 2019", (day(2019, 1, 1), day(2020, 1, 1))),
        ("during 1999", (day(1999, 1, 1), day(2000, 1, 1))),
        ("what did John do in late 2022", (day(2022, 1, 1), day(2023, 1, 1))),
        ("mid-2023 plans", (day(2023, 1, 1), day(2024, 1, 1))),
        # seasons: with a year, that one; without, the latest begun (for "last": ended)
        ("Which state did Joanna visit in summer 2021?", (day(2021, 6, 1), day(2021, 9, 1))),
        # "winter 2022" may be either end of a winter that straddles the new year
        ("in the winter of 2022", (day(2022, 1, 1), day(2023, 1, 1))),
        ("the spring of 2020", (day(2020, 3, 1), day(2020, 6, 1))),
        ("what did we do last summer", (day(2023, 6, 1), day(2023, 9, 1))),
        ("during the summer", (day(2024, 6, 1), day(2024, 9, 1))),
        ("last winter", (day(2023, 12, 1), day(2024, 3, 1))),
        ("over the fall", (day(2023, 9, 1), day(2023, 12, 1))),
        # ranges: from the first's start to the last's end; a year said once holds for both
        (
            "Where was John between August 11 and August 15 2023?",
            (day(2023, 8, 10), day(2023, 8, 17)),
        ),
        ("what did she do from May to July 2023", (day(2023, 5, 1), day(2023, 8, 1))),
        ("from 2019 to 2021", (day(2019, 1, 1), day(2022, 1, 1))),
        ("between 1 May and 7 May", (day(2024, 4, 30), day(2024, 5, 9))),
        # "between" two people, not two times: the day named
        ("talk between John and Tim on 11 December, 2023", (day(2023, 12, 10), day(2023, 12, 13))),
        ("what happened yesterday", (day(2024, 6, 14), TODAY)),
        ("what did I do the day before yesterday", (day(2024, 6, 13), day(2024, 6, 14))),
        # Ahead: a question about the days to come finds what was said to happen then.
        ("What do I have tomorrow?", (day(2024, 6, 16), day(2024, 6, 17))),
        ("the day after tomorrow", (day(2024, 6, 17), day(2024, 6, 18))),
        ("what's on next week", (day(2024, 6, 16), day(2024, 6, 30))),
        ("next month", (day(2024, 6, 16), day(2024, 8, 17))),
        # Asked on a Saturday: the Saturday and Sunday after, a day's slack each side.
        ("next weekend", (day(2024, 6, 21), day(2024, 6, 25))),
        ("dinner next Friday", (day(2024, 6, 20), day(2024, 6, 23))),
        ("next Saturday", (day(2024, 6, 21), day(2024, 6, 24))),
        ("What will we do on Monday?", (day(2024, 6, 16), day(2024, 6, 19))),
        ("What do I have planned on Saturday?", (day(2024, 6, 14), day(2024, 6, 17))),
        ("What did we plan on Monday?", (day(2024, 6, 9), day(2024, 6, 12))),
        ("What's on Monday?", (day(2024, 6, 16), day(2024, 6, 19))),
        ("Is anything happening on Monday?", (day(2024, 6, 16), day(2024, 6, 19))),
        ("What happened on Monday?", (day(2024, 6, 9), day(2024, 6, 12))),
        ("Who is the woman I met on Monday?", (day(2024, 6, 9), day(2024, 6, 12))),
        ("What's the name of the cafe we went to on Monday?", (day(2024, 6, 9), day(2024, 6, 12))),
        ("Do you remember what I ate on Monday?", (day(2024, 6, 9), day(2024, 6, 12))),
        ("plans for today", (TODAY, day(2024, 6, 16))),
        ("Tonight's dinner", (TODAY, day(2024, 6, 16))),
        # the calendar week, Monday to Sunday, that holds today
        ("this week", (day(2024, 6, 10), day(2024, 6, 17))),
        ("last week", (TODAY - timedelta(days=14), TODAY)),
        ("last   month", (TODAY - timedelta(days=62), TODAY)),
        ("the past weekend", (TODAY - timedelta(days=6), TODAY)),
        ("this year", (day(2024, 1, 1), day(2025, 1, 1))),
        (
            "3 days ago",
            (REFERENCE - timedelta(days=4), REFERENCE - timedelta(days=2)),
        ),
        (
            "a week ago",
            (REFERENCE - timedelta(days=8), REFERENCE - timedelta(days=6)),
        ),
        (
            "two months ago",
            (REFERENCE - timedelta(days=75), REFERENCE - timedelta(days=45)),
        ),
    ],
)
def test_time_words_name_a_window(query: str, window: tuple[datetime, datetime]) -> None:
    assert time_window(query, REFERENCE) == window


# Sunday 6 and Wednesday 9 December 2026, in the afternoon.
SUNDAY = datetime(2026, 12, 6, 15, tzinfo=UTC)
WEDNESDAY = datetime(2026, 12, 9, 15, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "asked", "window"),
    [
        # Only looking back, "this weekend" asked on Wednesday was 6-10 December: Saturday
        # 12 and Sunday 13 were never reached. Now the Saturday and Sunday of this week, a
        # day's slack either side as for any weekend.
        ("What are we doing this weekend?", WEDNESDAY, (day(2026, 12, 11), day(2026, 12, 15))),
        # on a Sunday, yesterday and today
        ("What did we do this weekend?", SUNDAY, (day(2026, 12, 4), day(2026, 12, 8))),
        # asked of the past on a Monday, the weekend just gone
        (
            "What did we do this weekend?",
            SUNDAY + timedelta(days=1),
            (day(2026, 12, 4), day(2026, 12, 8)),
        ),
        ("this week", WEDNESDAY, (day(2026, 12, 7), day(2026, 12, 14))),
        ("this week", SUNDAY, (day(2026, 11, 30), day(2026, 12, 7))),
        ("What do I have this month?", SUNDAY, (day(2026, 12, 1), day(2027, 1, 1))),
        ("What else is on later this month?", SUNDAY, (day(2026, 12, 6), day(2027, 1, 1))),
        ("What do I have later this week?", WEDNESDAY, (day(2026, 12, 9), day(2026, 12, 14))),
        ("Who did I meet earlier this week?", WEDNESDAY, (day(2026, 12, 7), day(2026, 12, 10))),
        ("what did we buy earlier in this month", SUNDAY, (day(2026, 12, 1), day(2026, 12, 7))),
        ("later this year", SUNDAY, (day(2026, 12, 6), day(2027, 1, 1))),
        ("earlier this year", SUNDAY, (day(2026, 1, 1), day(2026, 12, 7))),
    ],
)
def test_this_week_month_or_year_is_the_calendar_one(
    query: str, asked: datetime, window: tuple[datetime, datetime]
) -> None:
    assert time_window(query, asked) == window


@pytest.mark.parametrize("words", sorted(COUNTS))
def test_a_note_and_a_question_read_the_same_counts(words: str) -> None:
    days = COUNTS[words]
    said = f"{words} {'day' if days == 1 else 'days'} ago"
    back = SUNDAY - timedelta(days=days)
    told = event_times(f"We fixed the roof {said}.", SUNDAY)
    assert [(t.phrase, t.start) for t in told] == [(said, back.replace(hour=0))]
    slack = timedelta(days=max(1, days // 4))  # a quarter of the time back, at least a day
    assert time_window(f"What did we fix {said}?", SUNDAY) == (back - slack, back + slack)


@pytest.mark.parametrize(
    ("query", "asked", "window"),
    [
        # Read as nothing before. Ahead: from today through the count's last day.
        ("What do I have in the next two weeks?", SUNDAY, (day(2026, 12, 6), day(2026, 12, 21))),
        ("anything on the next 7 days", WEDNESDAY, (day(2026, 12, 9), day(2026, 12, 17))),
        ("What's on for the next few days?", WEDNESDAY, (day(2026, 12, 9), day(2026, 12, 13))),
        ("over the next couple of months", SUNDAY, (day(2026, 12, 6), day(2027, 2, 7))),
        # without a count, a few
        ("What is happening in the coming days?", SUNDAY, (day(2026, 12, 6), day(2026, 12, 10))),
        # "the coming week": seven days ("next week" reaches two)
        ("What do I have the coming week?", WEDNESDAY, (day(2026, 12, 9), day(2026, 12, 17))),
        ("What is happening the week ahead?", WEDNESDAY, (day(2026, 12, 9), day(2026, 12, 17))),
        ("in the month ahead", SUNDAY, (day(2026, 12, 6), day(2027, 1, 7))),
        # "the upcoming week" (month) as "the coming week"; "this upcoming" as "this coming"
        ("What do I have the upcoming week?", WEDNESDAY, (day(2026, 12, 9), day(2026, 12, 17))),
        ("in the upcoming month", SUNDAY, (day(2026, 12, 6), day(2027, 1, 7))),
        ("What am I doing this upcoming week?", WEDNESDAY, (day(2026, 12, 14), day(2026, 12, 21))),
        # "this coming week" (month, year): the first not yet begun, Monday to Sunday, as a
        # note reads it, and as "this coming Friday" is the first Friday to come
        ("plans for this coming week", SUNDAY, (day(2026, 12, 7), day(2026, 12, 14))),
        ("What am I doing this coming week?", WEDNESDAY, (day(2026, 12, 14), day(2026, 12, 21))),
        ("What do I have this coming month?", WEDNESDAY, (day(2027, 1, 1), day(2027, 2, 1))),
        ("this upcoming year", WEDNESDAY, (day(2027, 1, 1), day(2028, 1, 1))),
        ("the upcoming weekend", WEDNESDAY, (day(2026, 12, 11), day(2026, 12, 15))),
        ("this coming Friday", SUNDAY, (day(2026, 12, 10), day(2026, 12, 13))),
        # the calendar week after next week
        ("What's on the week after next?", SUNDAY, (day(2026, 12, 14), day(2026, 12, 21))),
        ("What's on the week after next?", WEDNESDAY, (day(2026, 12, 21), day(2026, 12, 28))),
        ("the weekend after next", WEDNESDAY, (day(2026, 12, 18), day(2026, 12, 22))),
        # "next Friday" is a day, not what follows "the week after"
        ("the week after next Friday", WEDNESDAY, (day(2026, 12, 10), day(2026, 12, 13))),
        # Back: from the count's first day through today.
        (
            "What did I buy in the past two weeks?",
            WEDNESDAY,
            (day(2026, 11, 25), day(2026, 12, 10)),
        ),
        ("who called me the last 10 days", SUNDAY, (day(2026, 11, 26), day(2026, 12, 7))),
        ("the past few days", SUNDAY, (day(2026, 12, 3), day(2026, 12, 7))),
        # "couple" without "of", as a note says it
        (
            "what did I do in the past couple weeks?",
            SUNDAY,
            (day(2026, 11, 22), day(2026, 12, 7)),
        ),
        ("anything in the past several days?", SUNDAY, (day(2026, 12, 1), day(2026, 12, 7))),
        # "last" the verb, and an article no count
        ("did the rain last a day?", SUNDAY, None),
        # not from today
        ("the last two weeks of the trip", SUNDAY, None),
        ("the last days of summer", SUNDAY, None),
    ],
)
def test_a_count_of_days_from_today(
    query: str, asked: datetime, window: tuple[datetime, datetime] | None
) -> None:
    assert time_window(query, asked) == window


@pytest.mark.parametrize(
    ("query", "asked", "that_day"),
    [
        # Read as nothing before. Looking ahead, the first such day from today on ...
        ("What do I have on the 10th?", SUNDAY, day(2026, 12, 10)),
        ("What will we do on the 6th?", SUNDAY, day(2026, 12, 6)),
        ("What do I have on the 2nd?", SUNDAY, day(2027, 1, 2)),
        # ... else the latest up to today, as a weekday
        ("What happened on the 10th?", SUNDAY, day(2026, 11, 10)),
        ("What did we eat on the 2nd?", SUNDAY, day(2026, 12, 2)),
        # a month without the day is passed over
        ("Who did I meet on the 31st?", SUNDAY, day(2026, 10, 31)),
        ("what is on on the 31st?", WEDNESDAY, day(2026, 12, 31)),
        ("What do I have on the 10th of next month?", SUNDAY, day(2027, 1, 10)),
        # Asked where or when something is, or who is coming: ahead, as a note telling it
        # ("When is the dentist on the 10th?" was the 10th gone).
        ("When is the dentist on the 10th?", SUNDAY, day(2026, 12, 10)),
        ("Where's the party on the 10th?", SUNDAY, day(2026, 12, 10)),
        ("Who is coming on the 10th?", SUNDAY, day(2026, 12, 10)),
        ("Is Ana arriving on the 10th?", SUNDAY, day(2026, 12, 10)),
        ("Where was the party on the 10th?", SUNDAY, day(2026, 11, 10)),
        # A question in the present of a day: ahead, as a note telling it ("Is the dentist
        # on the 10th?" was the 10th gone).
        ("Is the dentist on the 10th?", SUNDAY, day(2026, 12, 10)),
        ("Am I free on the 10th?", SUNDAY, day(2026, 12, 10)),
        ("Quick one: is the dentist on the 10th?", SUNDAY, day(2026, 12, 10)),
        ("Was the dentist on the 10th?", SUNDAY, day(2026, 11, 10)),
        ("Is the photo I took on the 10th in the album?", SUNDAY, day(2026, 11, 10)),
    ],
)
def test_a_day_of_the_month_is_read_as_a_weekday(
    query: str, asked: datetime, that_day: datetime
) -> None:
    assert time_window(query, asked) == (
        that_day - timedelta(days=1),
        that_day + timedelta(days=2),
    )


@pytest.mark.parametrize(
    ("query", "window"),
    [
        # A question that looks ahead: the first such month from this one on (January
        # asked in December was eleven months gone) ...
        ("What do I have in January?", (day(2027, 1, 1), day(2027, 2, 1))),
        ("What will we do in May?", (day(2027, 5, 1), day(2027, 6, 1))),
        ("What is happening in December?", (day(2026, 12, 1), day(2027, 1, 1))),
        ("What are we doing in January?", (day(2027, 1, 1), day(2027, 2, 1))),
        # ... but not a month said to be gone, whatever else it asks
        ("How are you feeling about last January?", (day(2026, 1, 1), day(2026, 2, 1))),
        ("What are we doing differently since March?", (day(2026, 3, 1), day(2026, 4, 1))),
        (
            "Is anything happening with the leak we found in May?",
            (day(2026, 5, 1), day(2026, 6, 1)),
        ),
        # ... the first such day from today on
        ("What do I have on 3 January?", (day(2027, 1, 2), day(2027, 1, 5))),
        ("What is on on 6 December?", (day(2026, 12, 5), day(2026, 12, 8))),
        # else the latest one, as before (LoCoMo asks "in May" of the past)
        ("What did we do in January?", (day(2026, 1, 1), day(2026, 2, 1))),
        ("What was I doing in January?", (day(2026, 1, 1), day(2026, 2, 1))),
        ("What did we plan for January?", (day(2026, 1, 1), day(2026, 2, 1))),
        ("the trip in May", (day(2026, 5, 1), day(2026, 6, 1))),
        ("What do I have in January 2026?", (day(2026, 1, 1), day(2026, 2, 1))),
    ],
)
def test_a_month_asked_ahead_is_the_one_to_come(
    query: str, window: tuple[datetime, datetime]
) -> None:
    assert time_window(query, SUNDAY) == window


@pytest.mark.parametrize(
    ("query", "window"),
    [
        # A month or day of a year said relative to this one (each was this year's month or
        # day, or "for May next year" the two years ahead).
        ("What did I do in May last year?", (day(2025, 5, 1), day(2025, 6, 1))),
        ("What did we do in May of last year?", (day(2025, 5, 1), day(2025, 6, 1))),
        ("What is planned for May next year?", (day(2027, 5, 1), day(2027, 6, 1))),
        ("Where was I on March 17 last year?", (day(2025, 3, 16), day(2025, 3, 19))),
    ],
)
def test_a_month_of_last_or_next_year_is_of_that_year(
    query: str, window: tuple[datetime, datetime]
) -> None:
    assert time_window(query, SUNDAY) == window


def test_may_the_verb_before_this_year_is_no_month() -> None:
    # "may" with no month's cue before it is the verb, "this year" the year asked ("May
    # this year" was read as the month once a relative year followed).
    assert time_window("What may this year bring?", SUNDAY) == (day(2026, 1, 1), day(2027, 1, 1))


@pytest.mark.parametrize(
    ("query", "that_day"),
    [
        # Read as nothing before: a question about last Tuesday got no time credit.
        ("What did I do last Tuesday?", day(2024, 6, 11)),
        ("what happened on Saturday", TODAY),  # today is a Saturday
        ("who called last saturday", day(2024, 6, 8)),
        ("the previous Friday", day(2024, 6, 14)),
        ("What did I do this morning?", TODAY),
    ],
)
def test_a_weekday_asked_is_the_latest_such_day(query: str, that_day: datetime) -> None:
    # A day's window, with a day of slack either side, as a date's.
    assert time_window(query, REFERENCE) == (
        that_day - timedelta(days=1),
        that_day + timedelta(days=2),
    )


@pytest.mark.parametrize(
    ("query", "that_day"),
    [
        # Asked on Sunday 6 December 2026 in the present, of the Friday to come (each read
        # the Friday gone, "for Friday" no day).
        ("Is there anything on Friday?", day(2026, 12, 11)),
        ("Am I free on Friday?", day(2026, 12, 11)),
        ("Is Sam in Berlin on Friday?", day(2026, 12, 11)),
        ("Does Sam work on Friday?", day(2026, 12, 11)),
        ("What is planned for Friday?", day(2026, 12, 11)),
        ("What's the plan for Friday?", day(2026, 12, 11)),
        # ... and of the one gone when asked in the past
        ("Was I free on Friday?", day(2026, 12, 4)),
        ("Is it true Sam went to Paris on Friday?", day(2026, 12, 4)),
        ("What did I buy for Friday?", day(2026, 12, 4)),
        # ... and so when a clause of the question is in the past (read ahead once questions
        # in the present were)
        ("Is the cake I baked on Friday still good?", day(2026, 12, 4)),
        ("Does Ana like the gift I gave her on Friday?", day(2026, 12, 4)),
        ("Is the report we wrote on Friday approved?", day(2026, 12, 4)),
        # ... but not the question's own participle, nor a verb in -eed
        ("Am I booked on Friday?", day(2026, 12, 11)),
        ("What have we planned for Friday?", day(2026, 12, 11)),
        ("Do I need anything on Friday?", day(2026, 12, 11)),
        # A question opening with what one can or should do, and one without its verb, asks
        # ahead too (each read the Friday gone)
        ("Can I deploy on Friday?", day(2026, 12, 11)),
        ("Should we ship on Friday?", day(2026, 12, 11)),
        ("Could we meet on Friday?", day(2026, 12, 11)),
        ("Anything on Friday?", day(2026, 12, 11)),
        ("Any meetings on Friday?", day(2026, 12, 11)),
        # ... unless it asks of the past
        ("Can you remind me what happened on Friday?", day(2026, 12, 4)),
        ("Could I have missed anything on Friday?", day(2026, 12, 4)),
        ("Anything I missed on Friday?", day(2026, 12, 4)),
        ("Anything happen on Friday?", day(2026, 12, 4)),
        ("Anyone know what broke on Friday?", day(2026, 12, 4)),
        # A weekday ending a question that looks ahead, without "on" (each was no day)
        ("Am I free Friday?", day(2026, 12, 11)),
        ("Are we meeting Friday?", day(2026, 12, 11)),
        ("Do I have anything Friday?", day(2026, 12, 11)),
    ],
)
def test_a_weekday_asked_in_the_present_is_the_one_to_come(query: str, that_day: datetime) -> None:
    assert time_window(query, SUNDAY) == (
        that_day - timedelta(days=1),
        that_day + timedelta(days=2),
    )


@pytest.mark.parametrize(
    ("query", "that_day"),
    [
        # Wednesday 12 June 2024: this week's Saturday is ahead (it read the one gone),
        # its Monday gone.
        ("What's on this Saturday?", day(2024, 6, 15)),
        ("What are we doing on Saturday?", day(2024, 6, 15)),
        ("Who did I meet this Monday?", day(2024, 6, 10)),
        ("What do we have this Wednesday?", day(2024, 6, 12)),
        ("Who did I meet this Sunday?", day(2024, 6, 9)),
    ],
)
def test_this_weekday_is_the_one_of_this_week(query: str, that_day: datetime) -> None:
    """... the latest when the question looks back, the next when it looks ahead."""
    wednesday = datetime(2024, 6, 12, 9, tzinfo=UTC)
    assert time_window(query, wednesday) == (
        that_day - timedelta(days=1),
        that_day + timedelta(days=2),
    )


@pytest.mark.parametrize(
    "query",
    [
        "where does Alice live",
        "I may go to the market",
        "May I ask something?",
        "the Mayday signal",
        "2019 was a good vintage",
        "meeting on 2024-02-30",
        "an hour ago",
        "How many weeks passed between Maria adopting Coco and Shadow?",
        "the drive from Paris to Rome",
        "a summer dress",
        "Tuesday meeting notes",
        "I sat on Sun Street",
        "I live on the 3rd floor",
        "she won on the 2nd try",
        "did the rain last a week?",  # "last" the verb: no week, no days
        "did the storm last a few days?",
        "will the battery last a couple of days?",
        "",
    ],
)
def test_queries_without_time_words_have_no_window(query: str) -> None:
    assert time_window(query, REFERENCE) is None


def test_an_iso_date_wins_over_other_time_words() -> None:
    assert time_window("last week, on 2024-06-03", REFERENCE) == (day(2024, 6, 3), day(2024, 6, 4))


def test_windows_end_after_they_start_and_are_utc() -> None:
    for query in ("yesterday", "in May 2023", "last week", "a year ago", "in 2020"):
        window = time_window(query, REFERENCE)
        assert window is not None
        start, end = window
        assert start < end
        assert start.tzinfo == UTC
        assert end.tzinfo == UTC


def test_relative_words_follow_the_reference_time() -> None:
    earlier = datetime(2023, 1, 10, 8, 0, tzinfo=UTC)
    assert time_window("yesterday", earlier) == (day(2023, 1, 9), day(2023, 1, 10))
    assert time_window("in march", earlier) == (day(2022, 3, 1), day(2022, 4, 1))


@pytest.mark.parametrize(
    ("query", "window"),
    [
        ("the train may be late today", (TODAY, day(2024, 6, 16))),
        ("why the plugin may crash", None),
        ("Kevin may visit us", None),
        ("the roof may leak", None),
    ],
)
def test_may_as_a_verb_after_a_word_ending_in_in_or_of_is_not_a_month(
    query: str, window: tuple[datetime, datetime] | None
) -> None:
    assert time_window(query, REFERENCE) == window


@pytest.mark.parametrize(
    ("query", "window"),
    [
        ("What did Nate make on 9 November, 2022?", (day(2022, 11, 8), day(2022, 11, 11))),
        ("the launch on October 13, 2023", (day(2023, 10, 12), day(2023, 10, 15))),
        ("what happened May 3, 2023", (day(2023, 5, 2), day(2023, 5, 5))),
        ("the 3rd of March", (day(2024, 3, 2), day(2024, 3, 5))),
        ("November 31, 2022", (day(2022, 11, 1), day(2022, 12, 1))),
    ],
)
def test_a_day_named_in_words_is_that_day_with_a_day_of_slack(
    query: str, window: tuple[datetime, datetime]
) -> None:
    assert time_window(query, REFERENCE) == window


@pytest.mark.parametrize(
    "query",
    [
        "When did Caroline go to the support group?",
        "Since when has she painted?",
        "What year did they move?",
        "How long has Melanie been practising art?",
        "In what year did he graduate?",
        "Which weekend was the trip?",
        "How many years ago did John meet his wife?",
        "What was the date of Jon's competition?",
    ],
)
def test_questions_that_ask_when(query: str) -> None:
    assert asks_when(query)


@pytest.mark.parametrize(
    "query",
    [
        "What did Caroline say when she came back?",
        "Where does Alice live?",
        "What is the weather like?",
        "Which book did she read?",
        "How many books has she read?",
        "How many weeks passed between the two trips?",
        "Who wrote the date on the card?",
    ],
)
def test_questions_that_do_not_ask_when(query: str) -> None:
    assert not asks_when(query)


@pytest.mark.parametrize(
    ("query", "window"),
    [
        # 16 November 2023 is a Thursday
        (
            "Where was Tim in the week before 16 November 2023?",
            (day(2023, 11, 9), day(2023, 11, 16)),
        ),
        ("the week after 16 November 2023", (day(2023, 11, 17), day(2023, 11, 24))),
        ("the month prior to 3 June 2022", (day(2022, 5, 3), day(2022, 6, 3))),
        ("the week before the 3rd of May 2024", (day(2024, 4, 26), day(2024, 5, 3))),
        # the day itself with a day of slack
        ("the day before 2023-05-04", (day(2023, 5, 2), day(2023, 5, 5))),
        ("the day following May 3, 2023", (day(2023, 5, 3), day(2023, 5, 6))),
        # 17 July 2023 is a Monday: the weekend before is 15-16 July, a day of slack each side
        ("What did he do the weekend before 17 July 2023?", (day(2023, 7, 14), day(2023, 7, 18))),
        # a Sunday is in a weekend: the one before it is the week before's
        ("the weekend before 16 July 2023", (day(2023, 7, 7), day(2023, 7, 11))),
        ("the weekend after May 3, 2023", (day(2023, 5, 5), day(2023, 5, 9))),
        # a month without its year is the latest one not in the future
        ("in the second week of November", (day(2023, 11, 8), day(2023, 11, 15))),
        ("the first week of May 2024", (day(2024, 5, 1), day(2024, 5, 8))),
        ("the last week of June 2023", (day(2023, 6, 24), day(2023, 7, 1))),
    ],
)
def test_a_stretch_next_to_a_day_or_a_week_of_a_month(
    query: str, window: tuple[datetime, datetime]
) -> None:
    assert time_window(query, REFERENCE) == window


def test_a_stretch_next_to_no_day_falls_back_to_the_other_words() -> None:
    # "the week before last" names no day; "the week before 31 April" no real one.
    assert time_window("the week before last", REFERENCE) is None
    assert time_window("the week before 31 April 2023", REFERENCE) == (
        day(2023, 4, 1),
        day(2023, 5, 1),
    )


@pytest.mark.parametrize("piece", ["from ", "between May ", "may ", "from a to "])
def test_a_long_query_of_repeated_time_words_is_read_in_linear_time(piece: str) -> None:
    import time

    query = piece * (32_000 // len(piece))  # eight times the 4,000 characters recall accepts
    started = time.perf_counter()
    time_window(query, REFERENCE)
    asks_when(query)
    # About 0.05 s here (3.5 s for "from "s before each end of a range was bounded): a guard
    # against quadratic time, not a speed target.
    assert time.perf_counter() - started < 2


@pytest.mark.parametrize(
    ("query", "relative", "plain"),
    [
        ("What do I have tomorrow?", True, "What do I have ?"),
        ("what did we do the day before yesterday", True, "what did we do"),
        ("plans for next Friday", True, "plans for"),
        ("what did I fix three days ago", True, "what did I fix"),
        ("the talk last Tuesday", True, "the talk"),
        ("what happened this morning", True, "what happened"),
        ("what is on later this week", True, "what is on"),
        ("what do I have in the next two weeks", True, "what do I have"),
        ("what is on the week after next", True, "what is on"),
        ("what is on the week ahead", True, "what is on"),
        ("what is on this coming week", True, "what is on"),
        # the day of a month named from today, whole
        ("What's on the 31st of next month?", True, "What's on ?"),
        ("what did I pay on the 3rd of last month", True, "what did I pay on"),
        # without "on" the window is no day's but next month's: the day's words stay
        ("anything due the 15th of next month", True, "anything due the 15th of"),
        # "on Tuesday" may be a weekly habit: its words stay
        ("what is on on Tuesday", True, None),
        # a time of its own: no window from today, though words from today are taken out
        ("what did I buy yesterday, 3 May 2024", False, "what did I buy , 3 May 2024"),
        ("what did we decide in May 2023", False, None),
        ("tomorrow", True, None),
    ],
)
def test_days_named_from_today(query: str, relative: bool, plain: str | None) -> None:
    window = relative_window(query, REFERENCE)
    assert (window is not None) is relative
    if window is not None:
        assert window == time_window(query, REFERENCE)
    assert without_days_from_today(query) == plain


# A Monday morning.
NOV_16 = datetime(2026, 11, 16, 8, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "that_day"),
    [
        # A weekday with an ordinal day is that day, in the nearest month it fits, either
        # way: read as the weekday alone, the 26th was the 19th and the 3rd the 10th.
        ("What do I have on Thursday the 26th?", day(2026, 11, 26)),
        ("what's on Friday the 27th?", day(2026, 11, 27)),
        ("What did I do on Tuesday the 3rd?", day(2026, 11, 3)),
        ("Anything on Tuesday 1st?", day(2026, 12, 1)),
        ("what's on Wed 18th?", day(2026, 11, 18)),
        ("anything on thurs the 26th", day(2026, 11, 26)),
        ("what happened on Sunday the 25th", day(2026, 10, 25)),
        # A question that looks back asks of the latest gone, not the nearest (18 December).
        ("What did I do on Friday the 18th?", day(2026, 9, 18)),
        ("What do I have on Friday the 18th?", day(2026, 12, 18)),
    ],
)
def test_a_weekday_with_an_ordinal_day_is_that_day(query: str, that_day: datetime) -> None:
    assert time_window(query, NOV_16) == (
        that_day - timedelta(days=1),
        that_day + timedelta(days=2),
    )


@pytest.mark.parametrize(
    ("as_of", "that_day"),
    [
        # 21:00 on 16 November in California is 05:00Z on the 17th: its tomorrow is the 17th
        # (read in UTC it was the 18th), as a note's "tomorrow" is read in its own offset.
        ("2026-11-16T21:00:00-08:00", day(2026, 11, 17)),
        ("2026-11-17T07:00:00+09:00", day(2026, 11, 18)),
        ("2026-11-16T21:00:00Z", day(2026, 11, 17)),
    ],
)
def test_a_recall_reads_its_days_in_the_calendar_of_the_offset_as_of_gives(
    as_of: str, that_day: datetime
) -> None:
    asked = question("What do I have tomorrow?", as_of=as_of)
    assert asked.window == (micros(that_day), micros(that_day + timedelta(days=1)))


def test_friday_the_13th_without_on_is_the_name_of_one_not_a_day() -> None:
    # The film's or the superstition's: a note's event time reads it so too.
    assert time_window("did we watch Friday the 13th?", NOV_16) is None
    assert time_window("what did we do on Friday the 13th?", NOV_16) is not None


@pytest.mark.parametrize("query", ["where I sat 3rd", "where I sat. 3rd", "was the sun. 8th?"])
def test_sat_in_lower_case_is_no_weekday_before_a_day(query: str) -> None:
    # A full stop after it too, as a note's event time reads it.
    assert time_window(query, NOV_16) is None


@pytest.mark.parametrize(
    ("query", "window"),
    [
        # A deadline asked ahead or of what is due: from today through the day or the
        # month's end, as a note reads it (before, "by Friday" named no time and "by 15
        # December" the day alone).
        ("What is due by Friday?", (day(2026, 12, 6), day(2026, 12, 12))),
        ("What do I have to send by next Friday?", (day(2026, 12, 6), day(2026, 12, 12))),
        ("What is due by this Sunday?", (day(2026, 12, 6), day(2026, 12, 7))),
        ("What is due by 15 December?", (day(2026, 12, 6), day(2026, 12, 16))),
        ("What will I need by December 15th?", (day(2026, 12, 6), day(2026, 12, 16))),
        ("What's due by the end of March?", (day(2026, 12, 6), day(2027, 4, 1))),
        # the end of the month: this month when asked ahead or of what is due ...
        ("What's happening at the end of the month?", (day(2026, 12, 1), day(2027, 1, 1))),
        ("What's due by the end of the month?", (day(2026, 12, 1), day(2027, 1, 1))),
        # ... else the latest whose last seven days have begun, as a note reads it
        ("What did we do at the end of the month?", (day(2026, 11, 1), day(2026, 12, 1))),
        # ordinal days with no month: ahead when the question looks ahead, else the latest
        # gone, as "on the 10th"
        ("What are we doing from the 20th to the 23rd?", (day(2026, 12, 20), day(2026, 12, 24))),
        ("What will we do from the 2nd to the 4th?", (day(2027, 1, 2), day(2027, 1, 5))),
        ("What did we do from the 20th to the 23rd?", (day(2026, 11, 20), day(2026, 11, 24))),
        ("Where were we between the 2nd and the 4th?", (day(2026, 12, 2), day(2026, 12, 5))),
        ("Where will we be from the 28th to the 3rd?", (day(2026, 12, 28), day(2027, 1, 4))),
        # a weekday someone is coming: the one to come
        ("Is Sam coming Thursday?", (day(2026, 12, 9), day(2026, 12, 12))),
        ("Who is coming Friday?", (day(2026, 12, 10), day(2026, 12, 13))),
        # ... or, asked of the past, the latest
        ("Was Sam coming Thursday?", (day(2026, 12, 2), day(2026, 12, 5))),
    ],
)
def test_a_question_reads_deadlines_months_ends_and_ordinal_days_as_a_note_does(
    query: str, window: tuple[datetime, datetime]
) -> None:
    assert time_window(query, SUNDAY) == window


def test_until_a_time_to_come_asked_is_from_today_through_it() -> None:
    # As a note reads "until Friday" (no time before): from today through it, unless the
    # question looks back.
    assert time_window("Where is Sam until Friday?", SUNDAY) == (
        day(2026, 12, 6),
        day(2026, 12, 12),
    )
    assert time_window("Is the office closed till 15 December?", SUNDAY) == (
        day(2026, 12, 6),
        day(2026, 12, 16),
    )
    assert time_window("Where did Sam stay until Friday?", SUNDAY) is None
    assert time_window("Who stayed until Friday?", SUNDAY) is None


@pytest.mark.parametrize(
    ("query", "end"),
    [
        # As a note reads "until next week" (weekend, month, year): up to when it begins, on
        # Monday (next week's Saturday, the first), not through the two weeks "next week" asks.
        ("Where is Sam until next week?", day(2026, 12, 14)),
        ("Is the office closed till next week?", day(2026, 12, 14)),
        ("Where is Sam until next weekend?", day(2026, 12, 19)),
        # "until this weekend": up to this week's Saturday, as a note reads it
        ("Where is Sam until this weekend?", day(2026, 12, 12)),
        ("Where is Sam until next month?", day(2027, 1, 1)),
        ("Where is Sam until next year?", day(2027, 1, 1)),
    ],
)
def test_until_next_week_asked_is_from_today_until_it_begins(query: str, end: datetime) -> None:
    assert time_window(query, WEDNESDAY) == (day(2026, 12, 9), end)
    # Named from today: a note of another week saying "next week" told of another one.
    assert question(query, as_of=WEDNESDAY.isoformat()).from_today


SATURDAY = datetime(2026, 12, 12, 15, tzinfo=UTC)
SUNDAY_13 = datetime(2026, 12, 13, 15, tzinfo=UTC)


@pytest.mark.parametrize(
    "words",
    ["the upcoming weekend", "the coming weekend", "this coming weekend", "this upcoming weekend"],
)
@pytest.mark.parametrize(
    ("asked", "saturday"),
    [(WEDNESDAY, day(2026, 12, 12)), (SATURDAY, day(2026, 12, 19)), (SUNDAY_13, day(2026, 12, 19))],
)
def test_the_coming_weekend_asked_is_the_first_not_yet_begun(
    words: str, asked: datetime, saturday: datetime
) -> None:
    # As a note reads it: said at a weekend, that one has begun, so the next.
    assert time_window(f"What's on {words}?", asked) == (
        saturday - timedelta(days=1),
        saturday + timedelta(days=3),
    )
    # "until" it: from today up to its Saturday, as "until this weekend".
    today = asked.replace(hour=0)
    assert time_window(f"Where is Sam until {words}?", asked) == (today, saturday)


@pytest.mark.parametrize(
    ("query", "asked", "end"),
    [
        # From today through this weekend's Sunday, as a note reads it, not the weekend
        # alone with a day's slack.
        ("Where is Sam until the end of this weekend?", WEDNESDAY, day(2026, 12, 14)),
        ("Where is Sam until the end of this weekend?", SATURDAY, day(2026, 12, 14)),
        ("Where is Sam until the end of this weekend?", SUNDAY_13, day(2026, 12, 14)),
        # the same for the other ends a note reads after "until"
        ("Where is Sam until the end of next weekend?", WEDNESDAY, day(2026, 12, 21)),
        ("Where is Sam until the end of this week?", WEDNESDAY, day(2026, 12, 14)),
        ("Is the office closed till the end of the week?", WEDNESDAY, day(2026, 12, 14)),
        ("Where is Sam until the end of next week?", WEDNESDAY, day(2026, 12, 21)),
        ("Where is Sam until the end of next month?", WEDNESDAY, day(2027, 2, 1)),
        ("Where is Sam until the end of the year?", WEDNESDAY, day(2027, 1, 1)),
    ],
)
def test_until_the_end_of_this_weekend_asked_is_from_today_through_it(
    query: str, asked: datetime, end: datetime
) -> None:
    assert time_window(query, asked) == (asked.replace(hour=0), end)
    assert question(query, as_of=asked.isoformat()).from_today


@pytest.mark.parametrize(
    ("query", "last"),
    [
        # Asked on a Friday, "by Friday" is today, as a note said then reads it (it was the
        # eight days to the next Friday); "by next Friday" is a week on.
        ("What is due by Friday?", day(2026, 12, 11)),
        ("What is due by this Friday?", day(2026, 12, 11)),
        ("What is due by next Friday?", day(2026, 12, 18)),
        # What one needs by a day is due then (it named no time).
        ("What do I need by Friday?", day(2026, 12, 11)),
        ("What does Sam still need by Tuesday?", day(2026, 12, 15)),
    ],
)
def test_by_a_weekday_asked_on_that_weekday_is_today(query: str, last: datetime) -> None:
    friday = datetime(2026, 12, 11, 9, tzinfo=UTC)
    assert time_window(query, friday) == (day(2026, 12, 11), last + timedelta(days=1))


def test_ordinal_days_across_a_months_end_under_way_are_the_stretch_under_way() -> None:
    # Asked on 1 December, "from the 28th to the 3rd" is 28 November to 3 December (under
    # way), as a note reads it, not the stretch a month ahead.
    asked = datetime(2026, 12, 1, 15, tzinfo=UTC)
    query = "Where will we be from the 28th to the 3rd?"
    assert time_window(query, asked) == (day(2026, 11, 28), day(2026, 12, 4))


@pytest.mark.parametrize(
    ("query", "window"),
    [
        # a deadline gone: the day, as before
        (
            "How many tournaments has Nate won by July 10, 2022?",
            (day(2022, 7, 9), day(2022, 7, 12)),
        ),
        ("What had I finished by 15 December?", (day(2026, 12, 14), day(2026, 12, 17))),
        # no deadline, no span, no weekday to come
        ("What did I finish by Friday?", None),
        ("Who wrote the book by the 3rd floor?", None),
        ("Which floors went from the 1st to the 3rd floor?", None),
    ],
)
def test_a_question_reads_no_deadline_when_it_looks_back(
    query: str, window: tuple[datetime, datetime] | None
) -> None:
    assert time_window(query, SUNDAY) == window


@pytest.mark.parametrize("asked", ["2026-10-07", "2026-10-09", "2026-10-10", "2026-10-11"])
def test_a_plan_told_next_weekend_is_found_asking_next_weekend_that_week(
    memory: Memory, asked: str
) -> None:
    """A note reads "next weekend" told on a weekday as next week's (17 and 18 October, told on
    Wednesday 7 October); a question asked that week of "next weekend", on a weekday or at
    the weekend between, finds it by its time."""
    [plan] = memory.remember(
        [MemoryDraft("Dinner with Ana next weekend.", observed_at="2026-10-07T10:00:00Z")]
    )
    found = memory.recall("What are we doing next weekend?", as_of=f"{asked}T12:00:00Z")
    [result] = [r for r in found.results if r.observation_id == plan.observation_id]
    assert result.scores.get("time", 0) > 0


@pytest.mark.parametrize(
    ("asked", "window"),
    [
        # On a weekday: the first weekend ahead through next week's, as a note reads it.
        (datetime(2026, 10, 7, 9, tzinfo=UTC), (day(2026, 10, 9), day(2026, 10, 20))),
        (datetime(2026, 10, 9, 9, tzinfo=UTC), (day(2026, 10, 9), day(2026, 10, 20))),
        # At a weekend: the next one alone, a day's slack each side.
        (datetime(2026, 10, 10, 9, tzinfo=UTC), (day(2026, 10, 16), day(2026, 10, 20))),
        (datetime(2026, 10, 11, 9, tzinfo=UTC), (day(2026, 10, 16), day(2026, 10, 20))),
    ],
)
def test_next_weekend_asked_covers_the_weekend_a_note_then_reads(
    asked: datetime, window: tuple[datetime, datetime]
) -> None:
    assert time_window("What are we doing next weekend?", asked) == window
    # "the upcoming weekend" is the first ahead alone.
    saturday = day(2026, 10, 10) if asked.weekday() < 5 else day(2026, 10, 17)
    upcoming = time_window("What is on the upcoming weekend?", asked)
    assert upcoming == (saturday - timedelta(days=1), saturday + timedelta(days=3))
