"""Event time read from an observation's words, against when it was said."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from doxa.store.event_time import (
    EventTime,
    event_time,
    event_times,
    loaded,
    overlaps,
    shown,
    stored,
)

# A Tuesday afternoon.
SAID = datetime(2023, 5, 9, 14, 0, tzinfo=UTC)
# A Tuesday morning just after the new year.
NEW_YEAR = datetime(2024, 1, 2, 9, 30, tzinfo=UTC)
# A Sunday evening in autumn.
AUTUMN = datetime(2023, 10, 15, 20, 0, tzinfo=UTC)


def day(year: int, month: int, d: int) -> datetime:
    return datetime(year, month, d, tzinfo=UTC)


Case = tuple[str, datetime, datetime, datetime, str, str]

PAST: list[Case] = [
    (
        "Yesterday I finally fixed the roof",
        SAID,
        day(2023, 5, 8),
        day(2023, 5, 9),
        "day",
        "Yesterday",
    ),
    (
        "the day before yesterday we met",
        SAID,
        day(2023, 5, 7),
        day(2023, 5, 8),
        "day",
        "the day before yesterday",
    ),
    ("Last night was loud", SAID, day(2023, 5, 8), day(2023, 5, 9), "day", "Last night"),
    ("this morning I ran 5k", SAID, day(2023, 5, 9), day(2023, 5, 10), "day", "this morning"),
    ("I called her earlier today", SAID, day(2023, 5, 9), day(2023, 5, 10), "day", "earlier today"),
    ("The dentist today was fine", SAID, day(2023, 5, 9), day(2023, 5, 10), "day", "today"),
    ("we cook tonight", SAID, day(2023, 5, 9), day(2023, 5, 10), "day", "tonight"),
    ("two days ago I got a cat", SAID, day(2023, 5, 7), day(2023, 5, 8), "day", "two days ago"),
    ("3 days ago", SAID, day(2023, 5, 6), day(2023, 5, 7), "day", "3 days ago"),
    ("a couple of days ago", SAID, day(2023, 5, 7), day(2023, 5, 8), "day", "a couple of days ago"),
    ("a few days ago", SAID, day(2023, 5, 6), day(2023, 5, 7), "day", "a few days ago"),
    ("an hour ago", SAID, day(2023, 5, 9), day(2023, 5, 10), "day", "an hour ago"),
    # said at 09:30, fifteen hours back is the day before
    ("15 hours ago", NEW_YEAR, day(2024, 1, 1), day(2024, 1, 2), "day", "15 hours ago"),
    # weeks are Monday to Sunday; "a week ago" is the week that held the day seven days back
    ("a week ago", SAID, day(2023, 5, 1), day(2023, 5, 8), "week", "a week ago"),
    ("two weeks ago", SAID, day(2023, 4, 24), day(2023, 5, 1), "week", "two weeks ago"),
    ("a few weeks ago", SAID, day(2023, 4, 17), day(2023, 4, 24), "week", "a few weeks ago"),
    ("three months ago", SAID, day(2023, 2, 1), day(2023, 3, 1), "month", "three months ago"),
    ("Twelve years ago", SAID, day(2011, 1, 1), day(2012, 1, 1), "year", "Twelve years ago"),
    ("a year ago", NEW_YEAR, day(2023, 1, 1), day(2024, 1, 1), "year", "a year ago"),
    ("last week", SAID, day(2023, 5, 1), day(2023, 5, 8), "week", "last week"),
    (
        "We had a picnic the week before last",
        SAID,
        day(2023, 4, 24),
        day(2023, 5, 1),
        "week",
        "the week before last",
    ),
    (
        "the weekend before last",
        SAID,
        day(2023, 4, 29),
        day(2023, 5, 1),
        "weekend",
        "the weekend before last",
    ),
    (
        "It's been ten years since I moved",
        SAID,
        day(2013, 1, 1),
        day(2014, 1, 1),
        "year",
        "It's been ten years since",
    ),
    ("last week", NEW_YEAR, day(2023, 12, 25), day(2024, 1, 1), "week", "last week"),
    ("last weekend", SAID, day(2023, 5, 6), day(2023, 5, 8), "weekend", "last weekend"),
    ("this past weekend", SAID, day(2023, 5, 6), day(2023, 5, 8), "weekend", "this past weekend"),
    # on a Sunday, last weekend is the one before this one
    ("last weekend", AUTUMN, day(2023, 10, 7), day(2023, 10, 9), "weekend", "last weekend"),
    ("this weekend", SAID, day(2023, 5, 13), day(2023, 5, 15), "weekend", "this weekend"),
    ("this weekend", AUTUMN, day(2023, 10, 14), day(2023, 10, 16), "weekend", "this weekend"),
    ("last month", SAID, day(2023, 4, 1), day(2023, 5, 1), "month", "last month"),
    ("last month", NEW_YEAR, day(2023, 12, 1), day(2024, 1, 1), "month", "last month"),
    ("Last year", NEW_YEAR, day(2023, 1, 1), day(2024, 1, 1), "year", "Last year"),
    ("this week", SAID, day(2023, 5, 8), day(2023, 5, 15), "week", "this week"),
    ("earlier this week", SAID, day(2023, 5, 8), day(2023, 5, 10), "week", "earlier this week"),
    ("this month", SAID, day(2023, 5, 1), day(2023, 6, 1), "month", "this month"),
    ("this year", NEW_YEAR, day(2024, 1, 1), day(2025, 1, 1), "year", "this year"),
    # said on a Tuesday: last Tuesday is a week back, "on Tuesday" is today
    ("last Tuesday", SAID, day(2023, 5, 2), day(2023, 5, 3), "day", "last Tuesday"),
    ("last Monday", SAID, day(2023, 5, 8), day(2023, 5, 9), "day", "last Monday"),
    ("on Tuesday", SAID, day(2023, 5, 9), day(2023, 5, 10), "day", "on Tuesday"),
    ("We went hiking on Saturday", SAID, day(2023, 5, 6), day(2023, 5, 7), "day", "on Saturday"),
    ("on Friday", NEW_YEAR, day(2023, 12, 29), day(2023, 12, 30), "day", "on Friday"),
    ("last summer", SAID, day(2022, 6, 1), day(2022, 9, 1), "season", "last summer"),
    ("last winter", SAID, day(2022, 12, 1), day(2023, 3, 1), "season", "last winter"),
    ("last winter", NEW_YEAR, day(2022, 12, 1), day(2023, 3, 1), "season", "last winter"),
    ("last spring", NEW_YEAR, day(2023, 3, 1), day(2023, 6, 1), "season", "last spring"),
    ("last fall", SAID, day(2022, 9, 1), day(2022, 12, 1), "season", "last fall"),
    ("last autumn", AUTUMN, day(2022, 9, 1), day(2022, 12, 1), "season", "last autumn"),
    ("last summer", AUTUMN, day(2023, 6, 1), day(2023, 9, 1), "season", "last summer"),
    # "this summer": the one holding said_at, else the nearest
    ("this summer", SAID, day(2023, 6, 1), day(2023, 9, 1), "season", "this summer"),
    ("this summer", AUTUMN, day(2023, 6, 1), day(2023, 9, 1), "season", "this summer"),
    ("this winter", NEW_YEAR, day(2023, 12, 1), day(2024, 3, 1), "season", "this winter"),
    ("in the fall", AUTUMN, day(2023, 9, 1), day(2023, 12, 1), "season", "in the fall"),
    (
        "we went skiing in the winter",
        SAID,
        day(2022, 12, 1),
        day(2023, 3, 1),
        "season",
        "in the winter",
    ),
]

FUTURE: list[Case] = [
    ("tomorrow", SAID, day(2023, 5, 10), day(2023, 5, 11), "day", "tomorrow"),
    (
        "the day after tomorrow",
        SAID,
        day(2023, 5, 11),
        day(2023, 5, 12),
        "day",
        "the day after tomorrow",
    ),
    ("next week", SAID, day(2023, 5, 15), day(2023, 5, 22), "week", "next week"),
    ("next week", NEW_YEAR, day(2024, 1, 8), day(2024, 1, 15), "week", "next week"),
    ("next weekend", SAID, day(2023, 5, 20), day(2023, 5, 22), "weekend", "next weekend"),
    (
        "this coming weekend",
        SAID,
        day(2023, 5, 13),
        day(2023, 5, 15),
        "weekend",
        "this coming weekend",
    ),
    ("next month", SAID, day(2023, 6, 1), day(2023, 7, 1), "month", "next month"),
    ("next month", NEW_YEAR, day(2024, 2, 1), day(2024, 3, 1), "month", "next month"),
    ("next year", SAID, day(2024, 1, 1), day(2025, 1, 1), "year", "next year"),
    ("next Friday", SAID, day(2023, 5, 12), day(2023, 5, 13), "day", "next Friday"),
    ("next Tuesday", SAID, day(2023, 5, 16), day(2023, 5, 17), "day", "next Tuesday"),
    ("I'll see him on Friday", SAID, day(2023, 5, 12), day(2023, 5, 13), "day", "on Friday"),
    ("in two weeks", SAID, day(2023, 5, 22), day(2023, 5, 29), "week", "in two weeks"),
    ("see you in 3 days", SAID, day(2023, 5, 12), day(2023, 5, 13), "day", "in 3 days"),
    (
        "the move is in two months' time",
        SAID,
        day(2023, 7, 1),
        day(2023, 8, 1),
        "month",
        "in two months' time",
    ),
    ("in two weeks", NEW_YEAR, day(2024, 1, 15), day(2024, 1, 22), "week", "in two weeks"),
    ("3 weeks from now", SAID, day(2023, 5, 29), day(2023, 6, 5), "week", "3 weeks from now"),
    ("ten days from today", SAID, day(2023, 5, 19), day(2023, 5, 20), "day", "ten days from today"),
    ("next summer", SAID, day(2024, 6, 1), day(2024, 9, 1), "season", "next summer"),
    ("next summer", NEW_YEAR, day(2024, 6, 1), day(2024, 9, 1), "season", "next summer"),
    # future tense makes an open month, day or season the next one
    ("I'm going to Paris in June", SAID, day(2023, 6, 1), day(2023, 7, 1), "month", "in June"),
    ("We will visit in March", SAID, day(2024, 3, 1), day(2024, 4, 1), "month", "in March"),
    ("I'll go there on May 20th", SAID, day(2023, 5, 20), day(2023, 5, 21), "day", "on May 20th"),
    (
        "can't wait to go camping in the summer",
        NEW_YEAR,
        day(2024, 6, 1),
        day(2024, 9, 1),
        "season",
        "in the summer",
    ),
]

ABSOLUTE: list[Case] = [
    ("on 3 May", SAID, day(2023, 5, 3), day(2023, 5, 4), "day", "on 3 May"),
    ("May 3rd", SAID, day(2023, 5, 3), day(2023, 5, 4), "day", "May 3rd"),
    ("the 3rd of May", SAID, day(2023, 5, 3), day(2023, 5, 4), "day", "the 3rd of May"),
    ("3 May 2021", SAID, day(2021, 5, 3), day(2021, 5, 4), "day", "3 May 2021"),
    ("on 3 May, 2021", SAID, day(2021, 5, 3), day(2021, 5, 4), "day", "on 3 May, 2021"),
    ("Sept. 3, 2021", SAID, day(2021, 9, 3), day(2021, 9, 4), "day", "Sept. 3, 2021"),
    ("Friday 12 May 2023", SAID, day(2023, 5, 12), day(2023, 5, 13), "day", "Friday 12 May 2023"),
    ("on Tuesday, 2 May", SAID, day(2023, 5, 2), day(2023, 5, 3), "day", "on Tuesday, 2 May"),
    # a day without a year is the latest one not after said_at
    ("I went there on May 20th", SAID, day(2022, 5, 20), day(2022, 5, 21), "day", "on May 20th"),
    ("on December 31st", NEW_YEAR, day(2023, 12, 31), day(2024, 1, 1), "day", "on December 31st"),
    ("on 29 Feb", SAID, day(2020, 2, 29), day(2020, 3, 1), "day", "on 29 Feb"),
    ("2023-05-07", SAID, day(2023, 5, 7), day(2023, 5, 8), "day", "2023-05-07"),
    ("on 2021-12-24", SAID, day(2021, 12, 24), day(2021, 12, 25), "day", "on 2021-12-24"),
    # "in May" is the latest May begun on or before said_at
    ("in May", SAID, day(2023, 5, 1), day(2023, 6, 1), "month", "in May"),
    # after a cue a pronoun starts the clause: the month, not the verb
    ("In May I went to Paris", SAID, day(2023, 5, 1), day(2023, 6, 1), "month", "In May"),
    ("In early May we met", SAID, day(2023, 5, 1), day(2023, 6, 1), "month", "In early May"),
    ("I went to Paris in June", SAID, day(2022, 6, 1), day(2022, 7, 1), "month", "in June"),
    ("in December", NEW_YEAR, day(2023, 12, 1), day(2024, 1, 1), "month", "in December"),
    ("last May", SAID, day(2022, 5, 1), day(2022, 6, 1), "month", "last May"),
    # a weekday of a named week: that week's, not the nearest
    (
        "I did it last week Tuesday",
        SAID,
        day(2023, 5, 2),
        day(2023, 5, 3),
        "day",
        "last week Tuesday",
    ),
    (
        "we met on Monday last week",
        SAID,
        day(2023, 5, 1),
        day(2023, 5, 2),
        "day",
        "on Monday last week",
    ),
    ("Friday next week", SAID, day(2023, 5, 19), day(2023, 5, 20), "day", "Friday next week"),
    # counted seasons: "two summers ago" is the summer before last
    (
        "Two summers ago we went",
        SAID,
        day(2021, 6, 1),
        day(2021, 9, 1),
        "season",
        "Two summers ago",
    ),
    (
        "the summer before last",
        SAID,
        day(2021, 6, 1),
        day(2021, 9, 1),
        "season",
        "the summer before last",
    ),
    ("three winters back", SAID, day(2020, 12, 1), day(2021, 3, 1), "season", "three winters back"),
    ("last December", NEW_YEAR, day(2023, 12, 1), day(2024, 1, 1), "month", "last December"),
    ("next March", SAID, day(2024, 3, 1), day(2024, 4, 1), "month", "next March"),
    ("mid-June", AUTUMN, day(2023, 6, 1), day(2023, 7, 1), "month", "mid-June"),
    ("the end of May", SAID, day(2023, 5, 1), day(2023, 6, 1), "month", "the end of May"),
    ("in Jan", SAID, day(2023, 1, 1), day(2023, 2, 1), "month", "in Jan"),
    ("in August 2022", SAID, day(2022, 8, 1), day(2022, 9, 1), "month", "in August 2022"),
    ("March 2020 was rough", SAID, day(2020, 3, 1), day(2020, 4, 1), "month", "March 2020"),
    ("dec 2022", SAID, day(2022, 12, 1), day(2023, 1, 1), "month", "dec 2022"),
    ("in 2019", SAID, day(2019, 1, 1), day(2020, 1, 1), "year", "in 2019"),
    ("back in 2015", SAID, day(2015, 1, 1), day(2016, 1, 1), "year", "back in 2015"),
    ("in early 2021", SAID, day(2021, 1, 1), day(2022, 1, 1), "year", "in early 2021"),
    ("I was born in 1990", SAID, day(1990, 1, 1), day(1991, 1, 1), "year", "in 1990"),
    (
        "in the summer of 2019",
        SAID,
        day(2019, 6, 1),
        day(2019, 9, 1),
        "season",
        "in the summer of 2019",
    ),
    ("fall 2022", SAID, day(2022, 9, 1), day(2022, 12, 1), "season", "fall 2022"),
]

DURATION: list[Case] = [
    (
        "for five years now",
        SAID,
        datetime(2018, 5, 9, 14, tzinfo=UTC),
        SAID,
        "span",
        "for five years now",
    ),
    (
        "I've lived here for 3 months",
        SAID,
        datetime(2023, 2, 9, 14, tzinfo=UTC),
        SAID,
        "span",
        "for 3 months",
    ),
    (
        "We've been friends for ten years",
        SAID,
        datetime(2013, 5, 9, 14, tzinfo=UTC),
        SAID,
        "span",
        "for ten years",
    ),
    (
        "She has worked there for about two weeks",
        SAID,
        SAID - timedelta(weeks=2),
        SAID,
        "span",
        "for about two weeks",
    ),
    (
        "in the past two weeks",
        SAID,
        SAID - timedelta(weeks=2),
        SAID,
        "span",
        "in the past two weeks",
    ),
    (
        "over the last year",
        NEW_YEAR,
        datetime(2023, 1, 2, 9, 30, tzinfo=UTC),
        NEW_YEAR,
        "span",
        "over the last year",
    ),
    (
        "over the next few days",
        SAID,
        SAID,
        SAID + timedelta(days=3),
        "span",
        "over the next few days",
    ),
    # "the coming week", "the week ahead": the seven days from now, as "in the coming week"
    (
        "The coming week will be busy",
        SAID,
        SAID,
        SAID + timedelta(days=7),
        "span",
        "The coming week",
    ),
    (
        "We rest in the week ahead",
        SAID,
        SAID,
        SAID + timedelta(days=7),
        "span",
        "in the week ahead",
    ),
    (
        "Plans for the month ahead",
        SAID,
        SAID,
        datetime(2023, 6, 9, 14, tzinfo=UTC),
        "span",
        "for the month ahead",
    ),
    # "the upcoming week" (month) as "the coming week"
    (
        "The upcoming week will be busy",
        SAID,
        SAID,
        SAID + timedelta(days=7),
        "span",
        "The upcoming week",
    ),
    (
        "Plans for the upcoming month",
        SAID,
        SAID,
        datetime(2023, 6, 9, 14, tzinfo=UTC),
        "span",
        "for the upcoming month",
    ),
    # "this coming week" is the first not yet begun, Monday to Sunday, as "this coming Friday"
    ("this coming week", SAID, day(2023, 5, 15), day(2023, 5, 22), "week", "this coming week"),
    ("this upcoming week", SAID, day(2023, 5, 15), day(2023, 5, 22), "week", "this upcoming week"),
    ("since September", SAID, day(2022, 9, 1), SAID, "open", "since September"),
    ("since September", NEW_YEAR, day(2023, 9, 1), NEW_YEAR, "open", "since September"),
    ("since May", SAID, day(2023, 5, 1), SAID, "open", "since May"),
    ("since 2019", SAID, day(2019, 1, 1), SAID, "open", "since 2019"),
    ("since last year", SAID, day(2022, 1, 1), SAID, "open", "since last year"),
    ("ever since last summer", SAID, day(2022, 6, 1), SAID, "open", "ever since last summer"),
    ("since Tuesday", SAID, day(2023, 5, 2), SAID, "open", "since Tuesday"),
    ("since yesterday", SAID, day(2023, 5, 8), SAID, "open", "since yesterday"),
    ("since 3 March 2021", SAID, day(2021, 3, 3), SAID, "open", "since 3 March 2021"),
]

RANGES: list[Case] = [
    ("from May to July", SAID, day(2023, 5, 1), day(2023, 8, 1), "span", "from May to July"),
    (
        "from May to July 2022",
        SAID,
        day(2022, 5, 1),
        day(2022, 8, 1),
        "span",
        "from May to July 2022",
    ),
    (
        "from November to February",
        NEW_YEAR,
        day(2023, 11, 1),
        day(2024, 3, 1),
        "span",
        "from November to February",
    ),
    (
        "between 2019 and 2021",
        SAID,
        day(2019, 1, 1),
        day(2022, 1, 1),
        "span",
        "between 2019 and 2021",
    ),
    ("from 2019 to 2021", SAID, day(2019, 1, 1), day(2022, 1, 1), "span", "from 2019 to 2021"),
    (
        "between March 2020 and June 2021",
        SAID,
        day(2020, 3, 1),
        day(2021, 7, 1),
        "span",
        "between March 2020 and June 2021",
    ),
    (
        "from 3 May 2021 until 7 May 2021",
        SAID,
        day(2021, 5, 3),
        day(2021, 5, 8),
        "span",
        "from 3 May 2021 until 7 May 2021",
    ),
]

# A Monday in May 2024; 14 May 2024 is a Tuesday, 14 May 2023 a Sunday.
MONDAY = datetime(2024, 5, 6, 9, tzinfo=UTC)
# 3 January 2025 is a Friday, 3 January 2024 a Wednesday.
DECEMBER = datetime(2024, 12, 20, 9, tzinfo=UTC)

# A weekday said with a date without its year chooses the year: the nearest one, before or
# after when it was said, in which that date falls on that weekday.
WEEKDAY_YEARS: list[Case] = [
    (
        "My dentist appointment is on Tuesday 14 May at 10:00.",
        MONDAY,
        day(2024, 5, 14),
        day(2024, 5, 15),
        "day",
        "on Tuesday 14 May",
    ),
    (
        "We met on Sunday 14 May",
        MONDAY,
        day(2023, 5, 14),
        day(2023, 5, 15),
        "day",
        "on Sunday 14 May",
    ),
    (
        "Tuesday, May 14th works",
        MONDAY,
        day(2024, 5, 14),
        day(2024, 5, 15),
        "day",
        "Tuesday, May 14th",
    ),
    ("Friday 3 May was fun", MONDAY, day(2024, 5, 3), day(2024, 5, 4), "day", "Friday 3 May"),
    (
        "The launch is on Friday 3 January",
        DECEMBER,
        day(2025, 1, 3),
        day(2025, 1, 4),
        "day",
        "on Friday 3 January",
    ),
    # no year within two of it has 14 May on a Monday: read as without the weekday, in no
    # past tense the nearer 14 May
    ("on Monday 14 May", MONDAY, day(2024, 5, 14), day(2024, 5, 15), "day", "on Monday 14 May"),
]

# Days of one month: the span from the first to the end of the last.
DAY_RANGES: list[Case] = [
    (
        "I'll be in Rome from 3 to 10 June.",
        MONDAY,
        day(2024, 6, 3),
        day(2024, 6, 11),
        "span",
        "from 3 to 10 June",
    ),
    (
        "I was in Rome from 3 to 10 June.",
        MONDAY,
        day(2023, 6, 3),
        day(2023, 6, 11),
        "span",
        "from 3 to 10 June",
    ),
    (
        "We'll be away 3\u201310 June",
        MONDAY,
        day(2024, 6, 3),
        day(2024, 6, 11),
        "span",
        "3\u201310 June",
    ),
    ("We were away 3-10 June", MONDAY, day(2023, 6, 3), day(2023, 6, 11), "span", "3-10 June"),
    (
        "we'll travel between 3 and 10 June",
        MONDAY,
        day(2024, 6, 3),
        day(2024, 6, 11),
        "span",
        "between 3 and 10 June",
    ),
    (
        "I'll be there June 3 to 10.",
        MONDAY,
        day(2024, 6, 3),
        day(2024, 6, 11),
        "span",
        "June 3 to 10",
    ),
    (
        "I was there June 3-10, 2022",
        MONDAY,
        day(2022, 6, 3),
        day(2022, 6, 11),
        "span",
        "June 3-10, 2022",
    ),
    (
        "we camped from the 3rd to the 10th of April",
        MONDAY,
        day(2024, 4, 3),
        day(2024, 4, 11),
        "span",
        "from the 3rd to the 10th of April",
    ),
    ("3-10 June 2021", MONDAY, day(2021, 6, 3), day(2021, 6, 11), "span", "3-10 June 2021"),
]

# A plan told in the present: a day later in the year it was said is ahead.
MAY_20 = datetime(2024, 5, 20, 10, tzinfo=UTC)
# Said on Tuesday 9 May 2023 (SAID): ranges no "from" opens, and stretches of weekdays.
BARE_RANGES: list[Case] = [
    (
        "We stayed in Lisbon 28 May to 3 June.",
        SAID,
        day(2022, 5, 28),
        day(2022, 6, 4),
        "span",
        "28 May to 3 June",
    ),
    (
        "I'll be away May 28 - June 3.",
        SAID,
        day(2023, 5, 28),
        day(2023, 6, 4),
        "span",
        "May 28 - June 3",
    ),
    (
        "we were off 2023-05-01 to 2023-05-03",
        SAID,
        day(2023, 5, 1),
        day(2023, 5, 4),
        "span",
        "2023-05-01 to 2023-05-03",
    ),
    (
        "We were away 28 Dec to 3 Jan.",
        SAID,
        day(2022, 12, 28),
        day(2023, 1, 4),
        "span",
        "28 Dec to 3 Jan",
    ),
    (
        "from Sunday to Tuesday last week we hiked",
        SAID,
        day(2023, 4, 30),
        day(2023, 5, 3),
        "span",
        "from Sunday to Tuesday last week",
    ),
    # A weekday said with either end, as with one day ("Tuesday 14 May").
    (
        "I'm away from Tuesday 16 May to Friday 19 May.",
        SAID,
        day(2023, 5, 16),
        day(2023, 5, 20),
        "span",
        "from Tuesday 16 May to Friday 19 May",
    ),
    (
        "We were in Oslo Tuesday 2 May to Friday 5 May.",
        SAID,
        day(2023, 5, 2),
        day(2023, 5, 6),
        "span",
        "Tuesday 2 May to Friday 5 May",
    ),
    (
        "We hiked from Friday 10 May to Sunday 12 May.",
        SAID,
        day(2024, 5, 10),
        day(2024, 5, 13),
        "span",
        "from Friday 10 May to Sunday 12 May",
    ),
    # The stretch just gone ends today at the latest; the one ahead begins after today.
    (
        "I was in Rome from Monday to Wednesday.",
        SAID,
        day(2023, 5, 1),
        day(2023, 5, 4),
        "span",
        "from Monday to Wednesday",
    ),
    (
        "from Friday to Monday we camped",
        SAID,
        day(2023, 5, 5),
        day(2023, 5, 9),
        "span",
        "from Friday to Monday",
    ),
    (
        "I'll be in Rome from Monday to Wednesday.",
        SAID,
        day(2023, 5, 15),
        day(2023, 5, 18),
        "span",
        "from Monday to Wednesday",
    ),
    (
        "Tuesday through Thursday next week I'm in Paris.",
        SAID,
        day(2023, 5, 16),
        day(2023, 5, 19),
        "span",
        "Tuesday through Thursday next week",
    ),
    (
        "Between Monday and Friday of last week I worked late.",
        SAID,
        day(2023, 5, 1),
        day(2023, 5, 6),
        "span",
        "Between Monday and Friday of last week",
    ),
]

PRESENT_PLANS: list[Case] = [
    (
        "My flight to Rome leaves on 3 June",
        MAY_20,
        day(2024, 6, 3),
        day(2024, 6, 4),
        "day",
        "on 3 June",
    ),
    (
        "My dentist appointment is on 14 June.",
        MAY_20,
        day(2024, 6, 14),
        day(2024, 6, 15),
        "day",
        "on 14 June",
    ),
    (
        "The race takes place on June 3rd",
        MAY_20,
        day(2024, 6, 3),
        day(2024, 6, 4),
        "day",
        "on June 3rd",
    ),
    # a day gone this year, or a sentence that tells of the past, is still read back
    ("The party is on 2 May.", MAY_20, day(2024, 5, 2), day(2024, 5, 3), "day", "on 2 May"),
    ("The flight left on 3 June", MAY_20, day(2023, 6, 3), day(2023, 6, 4), "day", "on 3 June"),
    (
        "The concert on 3 June was loud",
        MAY_20,
        day(2023, 6, 3),
        day(2023, 6, 4),
        "day",
        "on 3 June",
    ),
    # "'s" after a name is no "is": the report of a past day
    (
        "Bob's due diligence report of 3 June",
        MAY_20,
        day(2023, 6, 3),
        day(2023, 6, 4),
        "day",
        "3 June",
    ),
    ("It's due on 3 June", MAY_20, day(2024, 6, 3), day(2024, 6, 4), "day", "on 3 June"),
    # being somewhere, told in the present, is a plan too (read the year before)
    (
        "I'm in Rome from 3 to 10 June",
        MAY_20,
        day(2024, 6, 3),
        day(2024, 6, 11),
        "span",
        "from 3 to 10 June",
    ),
    ("We are away on 14 June.", MAY_20, day(2024, 6, 14), day(2024, 6, 15), "day", "on 14 June"),
    (
        "She's visiting her parents on June 3rd",
        MAY_20,
        day(2024, 6, 3),
        day(2024, 6, 4),
        "day",
        "on June 3rd",
    ),
    # but not a photo of a past day
    (
        "I'm in the photo we took on 3 June",
        MAY_20,
        day(2023, 6, 3),
        day(2023, 6, 4),
        "day",
        "on 3 June",
    ),
    # A weekday of a plan told in the present is one to come (it was the one gone), as
    # "will" makes it; MAY_20 is a Monday.
    ("My flight leaves on Friday.", MAY_20, day(2024, 5, 24), day(2024, 5, 25), "day", "on Friday"),
    ("The launch is on Friday.", MAY_20, day(2024, 5, 24), day(2024, 5, 25), "day", "on Friday"),
    ("The shop opens Friday.", MAY_20, day(2024, 5, 24), day(2024, 5, 25), "day", "Friday"),
    (
        "I'm in Rome from Wednesday to Friday.",
        MAY_20,
        day(2024, 5, 22),
        day(2024, 5, 25),
        "span",
        "from Wednesday to Friday",
    ),
    ("The launch was on Friday.", MAY_20, day(2024, 5, 17), day(2024, 5, 18), "day", "on Friday"),
    ("I left on Friday.", MAY_20, day(2024, 5, 17), day(2024, 5, 18), "day", "on Friday"),
    # "booked", "scheduled" and "planned" tell of a plan, not of the past
    (
        "The appointment is booked for Friday.",
        MAY_20,
        day(2024, 5, 24),
        day(2024, 5, 25),
        "day",
        "Friday",
    ),
    ("It is scheduled on Friday.", MAY_20, day(2024, 5, 24), day(2024, 5, 25), "day", "on Friday"),
    ("The trip is booked on 3 June.", MAY_20, day(2024, 6, 3), day(2024, 6, 4), "day", "on 3 June"),
    (
        "I booked the trip on Friday.",
        MAY_20,
        day(2024, 5, 17),
        day(2024, 5, 18),
        "day",
        "on Friday",
    ),
    (
        "I'm booked on the flight on Friday.",
        MAY_20,
        day(2024, 5, 24),
        day(2024, 5, 25),
        "day",
        "on Friday",
    ),
    ("We are booked for Friday.", MAY_20, day(2024, 5, 24), day(2024, 5, 25), "day", "Friday"),
    # A plan told of anyone, as notes name whom they tell of ("he is" was read, "Sam is" not).
    (
        "Sam is flying to Lisbon on Friday.",
        MAY_20,
        day(2024, 5, 24),
        day(2024, 5, 25),
        "day",
        "on Friday",
    ),
    (
        "The user is in Rome from 3 to 10 June.",
        MAY_20,
        day(2024, 6, 3),
        day(2024, 6, 11),
        "span",
        "from 3 to 10 June",
    ),
    (
        "Sam was in Lisbon on Friday.",
        MAY_20,
        day(2024, 5, 17),
        day(2024, 5, 18),
        "day",
        "on Friday",
    ),
    # A plan moved to a new day: the day is ahead, though "was moved" is past tense ("we
    # moved to Berlin" is no plan).
    (
        "The offsite was moved to 3 June.",
        MAY_20,
        day(2024, 6, 3),
        day(2024, 6, 4),
        "day",
        "3 June",
    ),
    ("We moved to Berlin on 3 June.", MAY_20, day(2023, 6, 3), day(2023, 6, 4), "day", "on 3 June"),
    # Verbs of plans told in the present, a day of this month ahead, a day said to be due.
    ("Sam turns 40 on 3 June.", MAY_20, day(2024, 6, 3), day(2024, 6, 4), "day", "on 3 June"),
    ("Sam turned 40 on 3 June.", MAY_20, day(2023, 6, 3), day(2023, 6, 4), "day", "on 3 June"),
    (
        "The job starts on the 25th.",
        MAY_20,
        day(2024, 5, 25),
        day(2024, 5, 26),
        "day",
        "on the 25th",
    ),
    ("I started on the 25th.", MAY_20, day(2024, 4, 25), day(2024, 4, 26), "day", "on the 25th"),
    ("The deadline is 3 October.", MAY_20, day(2024, 10, 3), day(2024, 10, 4), "day", "3 October"),
    ("We met 3 February.", MAY_20, day(2024, 2, 3), day(2024, 2, 4), "day", "3 February"),
    # An appointment had, a visit or a meeting to come (MAY_20 is a Monday).
    (
        "I have a dentist appointment on Friday.",
        MAY_20,
        day(2024, 5, 24),
        day(2024, 5, 25),
        "day",
        "on Friday",
    ),
    (
        "The plumber comes on Friday.",
        MAY_20,
        day(2024, 5, 24),
        day(2024, 5, 25),
        "day",
        "on Friday",
    ),
    ("We meet on Friday.", MAY_20, day(2024, 5, 24), day(2024, 5, 25), "day", "on Friday"),
    ("We met on Friday.", MAY_20, day(2024, 5, 17), day(2024, 5, 18), "day", "on Friday"),
    # Something one has, not an event: no plan.
    (
        "I have a sunburn from the beach on Friday.",
        MAY_20,
        day(2024, 5, 17),
        day(2024, 5, 18),
        "day",
        "on Friday",
    ),
    (
        "There is a fire drill on Friday.",
        MAY_20,
        day(2024, 5, 24),
        day(2024, 5, 25),
        "day",
        "on Friday",
    ),
    ("Tom is back on the 25th.", MAY_20, day(2024, 5, 25), day(2024, 5, 26), "day", "on the 25th"),
    # The present progressive, notes of events, meals had, errands and reminders.
    (
        "The user is meeting Ana on 3 June.",
        MAY_20,
        day(2024, 6, 3),
        day(2024, 6, 4),
        "day",
        "on 3 June",
    ),
    (
        "I'm seeing the doctor on Friday.",
        MAY_20,
        day(2024, 5, 24),
        day(2024, 5, 25),
        "day",
        "on Friday",
    ),
    ("I was seeing her on Friday.", MAY_20, day(2024, 5, 17), day(2024, 5, 18), "day", "on Friday"),
    (
        "The view is amazing on Friday.",
        MAY_20,
        day(2024, 5, 17),
        day(2024, 5, 18),
        "day",
        "on Friday",
    ),
    ("Lunch with Ana on 3 June.", MAY_20, day(2024, 6, 3), day(2024, 6, 4), "day", "on 3 June"),
    ("Dentist on Friday at 10.", MAY_20, day(2024, 5, 24), day(2024, 5, 25), "day", "on Friday"),
    (
        "Lunch with Ana on Friday was great.",
        MAY_20,
        day(2024, 5, 17),
        day(2024, 5, 18),
        "day",
        "on Friday",
    ),
    ("Wedding photos from 3 June.", MAY_20, day(2023, 6, 3), day(2023, 6, 4), "day", "3 June"),
    (
        "Sam has lunch with Ana on Friday.",
        MAY_20,
        day(2024, 5, 24),
        day(2024, 5, 25),
        "day",
        "on Friday",
    ),
    (
        "Remind me to call mum on Sunday.",
        MAY_20,
        day(2024, 5, 26),
        day(2024, 5, 27),
        "day",
        "on Sunday",
    ),
    (
        "The release is planned for 3 June.",
        MAY_20,
        day(2024, 6, 3),
        day(2024, 6, 4),
        "day",
        "3 June",
    ),
    # A plan moved from one day to another is on the second (it was the stretch between).
    (
        "The meeting was moved from Tuesday to Thursday.",
        MAY_20,
        day(2024, 5, 23),
        day(2024, 5, 24),
        "day",
        "moved from Tuesday to Thursday",
    ),
    (
        "The offsite was rescheduled from 3 June to 10 June.",
        MAY_20,
        day(2024, 6, 10),
        day(2024, 6, 11),
        "day",
        "rescheduled from 3 June to 10 June",
    ),
    (
        "The standup was moved from Tuesday to Thursday and it went well.",
        MAY_20,
        day(2024, 5, 16),
        day(2024, 5, 17),
        "day",
        "moved from Tuesday to Thursday",
    ),
    # A day gone this year, told as a plan: next year's when it is nearer.
    (
        "Mia moves to Geneva on 3 January.",
        datetime(2024, 12, 3, 10, tzinfo=UTC),
        day(2025, 1, 3),
        day(2025, 1, 4),
        "day",
        "on 3 January",
    ),
]

# Said in words, short forms, holidays.
SPOKEN: list[Case] = [
    # SAID is a Tuesday
    (
        "Last Fri I took my kids to a pottery workshop",
        SAID,
        day(2023, 5, 5),
        day(2023, 5, 6),
        "day",
        "Last Fri",
    ),
    ("I joined a group last Tues.", SAID, day(2023, 5, 2), day(2023, 5, 3), "day", "last Tues"),
    ("this past Sat we hiked", SAID, day(2023, 5, 6), day(2023, 5, 7), "day", "this past Sat"),
    ("next Fri works", SAID, day(2023, 5, 12), day(2023, 5, 13), "day", "next Fri"),
    ("I'll be there this Friday", SAID, day(2023, 5, 12), day(2023, 5, 13), "day", "this Friday"),
    ("I saw him this Monday", SAID, day(2023, 5, 8), day(2023, 5, 9), "day", "this Monday"),
    ("this Friday is the deadline", SAID, day(2023, 5, 12), day(2023, 5, 13), "day", "this Friday"),
    # "two weekends ago" is the weekend before last
    (
        "we went camping two weekends ago",
        SAID,
        day(2023, 4, 29),
        day(2023, 5, 1),
        "weekend",
        "two weekends ago",
    ),
    ("a weekend ago", SAID, day(2023, 5, 6), day(2023, 5, 8), "weekend", "a weekend ago"),
    # on a Sunday, the weekend under way is not one of them
    ("two weekends ago", AUTUMN, day(2023, 9, 30), day(2023, 10, 2), "weekend", "two weekends ago"),
    (
        "a few weeks back I started painting",
        SAID,
        day(2023, 4, 17),
        day(2023, 4, 24),
        "week",
        "a few weeks back",
    ),
    ("three years back", SAID, day(2020, 1, 1), day(2021, 1, 1), "year", "three years back"),
    ("a fortnight ago", SAID, day(2023, 4, 24), day(2023, 5, 1), "week", "a fortnight ago"),
    (
        "The past weekend was fun",
        SAID,
        day(2023, 5, 6),
        day(2023, 5, 8),
        "weekend",
        "The past weekend",
    ),
    ("The past week has been crazy", SAID, SAID - timedelta(days=7), SAID, "span", "The past week"),
    (
        "The past couple months have been rough",
        SAID,
        datetime(2023, 3, 9, 14, tzinfo=UTC),
        SAID,
        "span",
        "The past couple months",
    ),
    (
        "The last few days were busy",
        SAID,
        SAID - timedelta(days=3),
        SAID,
        "span",
        "The last few days",
    ),
    ("a month or so ago", SAID, day(2023, 4, 1), day(2023, 5, 1), "month", "a month or so ago"),
    ("a day or two ago", SAID, day(2023, 5, 8), day(2023, 5, 9), "day", "a day or two ago"),
    # a weekday alone, only with a tense that says which way
    ("We went hiking Saturday", SAID, day(2023, 5, 6), day(2023, 5, 7), "day", "Saturday"),
    ("I'll see you Sunday", SAID, day(2023, 5, 14), day(2023, 5, 15), "day", "Sunday"),
    (
        "Earlier in the week I saw her",
        SAID,
        day(2023, 5, 8),
        day(2023, 5, 10),
        "week",
        "Earlier in the week",
    ),
    ("a decade ago", SAID, day(2013, 1, 1), day(2014, 1, 1), "year", "a decade ago"),
    (
        "I've taught for a decade now",
        SAID,
        datetime(2013, 5, 9, 14, tzinfo=UTC),
        SAID,
        "span",
        "for a decade now",
    ),
    (
        "We met two Saturdays ago",
        SAID,
        day(2023, 4, 29),
        day(2023, 4, 30),
        "day",
        "two Saturdays ago",
    ),
    # SAID is a Tuesday: the last Tuesday is a week back, the one before it two
    ("two Tuesdays ago", SAID, day(2023, 4, 25), day(2023, 4, 26), "day", "two Tuesdays ago"),
    (
        "the Friday before last was fun",
        SAID,
        day(2023, 4, 28),
        day(2023, 4, 29),
        "day",
        "the Friday before last",
    ),
    # not "a year ago"
    ("half a year ago", SAID, day(2022, 11, 1), day(2022, 12, 1), "month", "half a year ago"),
    ("half an hour ago", SAID, day(2023, 5, 9), day(2023, 5, 10), "day", "half an hour ago"),
    (
        "Over the weekend I read a book",
        SAID,
        day(2023, 5, 6),
        day(2023, 5, 8),
        "weekend",
        "Over the weekend",
    ),
    # on a Sunday, the weekend just had is this one
    (
        "I read over the weekend",
        AUTUMN,
        day(2023, 10, 14),
        day(2023, 10, 16),
        "weekend",
        "over the weekend",
    ),
    (
        "I'll rest over the weekend",
        SAID,
        day(2023, 5, 13),
        day(2023, 5, 15),
        "weekend",
        "over the weekend",
    ),
    ("the other day I saw a hawk", SAID, day(2023, 5, 2), day(2023, 5, 9), "span", "the other day"),
    (
        "I met my teammates on the 5th after my trip",
        SAID,
        day(2023, 5, 5),
        day(2023, 5, 6),
        "day",
        "on the 5th",
    ),
    # the 20th has not come yet this month: the last one was in April
    ("I met her on the 20th.", SAID, day(2023, 4, 20), day(2023, 4, 21), "day", "on the 20th"),
    ("we met on the 28th", NEW_YEAR, day(2023, 12, 28), day(2023, 12, 29), "day", "on the 28th"),
    ("I'll call on the 20th", SAID, day(2023, 5, 20), day(2023, 5, 21), "day", "on the 20th"),
    ("On Christmas we met", SAID, day(2022, 12, 25), day(2022, 12, 26), "day", "On Christmas"),
    (
        "I got a bike for Christmas",
        NEW_YEAR,
        day(2023, 12, 25),
        day(2023, 12, 26),
        "day",
        "for Christmas",
    ),
    (
        "Last Thanksgiving was fun",
        SAID,
        day(2022, 11, 24),
        day(2022, 11, 25),
        "day",
        "Last Thanksgiving",
    ),
    (
        "We'll visit them for Thanksgiving",
        SAID,
        day(2023, 11, 23),
        day(2023, 11, 24),
        "day",
        "for Thanksgiving",
    ),
    (
        "we danced on New Year's Eve",
        SAID,
        day(2022, 12, 31),
        day(2023, 1, 1),
        "day",
        "on New Year's Eve",
    ),
    (
        "the parade on Easter Sunday",
        SAID,
        day(2023, 4, 9),
        day(2023, 4, 10),
        "day",
        "on Easter Sunday",
    ),
    # Mother's Day 2023 is the coming Sunday: one had, is the last one
    (
        "On Mother's Day we had brunch",
        SAID,
        day(2022, 5, 8),
        day(2022, 5, 9),
        "day",
        "On Mother's Day",
    ),
    (
        "we met at Christmas 2021",
        SAID,
        day(2021, 12, 25),
        day(2021, 12, 26),
        "day",
        "at Christmas 2021",
    ),
    (
        "I've been playing professionally for just under a year now",
        SAID,
        datetime(2022, 5, 9, 14, tzinfo=UTC),
        SAID,
        "span",
        "for just under a year now",
    ),
]


@pytest.mark.parametrize(
    ("text", "said_at", "start", "end", "precision", "phrase"),
    PAST
    + FUTURE
    + ABSOLUTE
    + DURATION
    + RANGES
    + WEEKDAY_YEARS
    + DAY_RANGES
    + PRESENT_PLANS
    + BARE_RANGES
    + SPOKEN,
)
def test_an_expression_resolves_to_its_exact_span(
    text: str, said_at: datetime, start: datetime, end: datetime, precision: str, phrase: str
) -> None:
    times = event_times(text, said_at)
    assert len(times) == 1, times
    found = times[0]
    assert (found.start, found.end, found.precision) == (start, end, precision)
    assert found.phrase == phrase
    assert found.start.tzinfo is not None and found.start.utcoffset() == timedelta(0)


NEGATIVES = [
    "I may go to the party",
    "May I ask you something?",
    "this may be hard",
    "5 may be enough",
    "what you put in may be lost",
    "give me a second",
    "I want a second opinion",
    "she came in second place",
    "just a minute, I'll be back in a minute",
    "we march on",
    "we will march to the square",
    "the march was peaceful",
    "the fall of Rome",
    "I sat down in the sun",
    "went to the park on Sun",
    "the 90s band played",
    "I'm 25 years old",
    "It took two days",
    "the last time I saw her",
    "last but not least",
    "next time, bring snacks",
    "the next day was better",
    "the last week of June",
    "the table next to the window",
    "I learned it in two weeks",
    "I usually finish in 2 days",
    "I lived there for 3 months",
    "I'll be away for a week",
    "I usually go to Paris in May",
    "we go skiing every winter",
    "the offer ran until May 3rd",
    "please reply by next week",
    "since I was a kid",
    "since then things changed",
    "June said hi",
    "I met June 5 times",
    "I called April 3 times about the lease.",
    "August 2 goals were great.",
    "The deadline is 3 June.",  # June may be a name: a day before it needs a cue
    "we march 5 miles",
    "May 5 people come?",
    "in 1000 pieces",
    "it took 2019 steps",
    "the 31st of April",
    "winter 2022",
    "I have been in this job for two years and a half",
    "",
    "We live on the 3rd floor",
    "she got it right on the 2nd try",
    "I'm two weeks back from vacation",
    "I sat on Sun Street",
    "he at last sat down",
    "We always go to church at Christmas",
    "the Christmas tree is up",
    "I water them every other day",
    "on the weekend of the fair",
    "I usually relax over the weekend",
    "Fri night lights",
    "Saturday is my favourite day",
    "I have two kids now",
    "We shopped on Black Friday",
    "It was the last week before the exams",
    "the last day of school",
    # not days of one month
    "ages 3-10 may apply",
    "June 3 to 10 people came",
    # code
    "run `git log --since yesterday` to see it",
    "```\nnightly: every Monday\nsince: 2019-01-01\n```",
    # a habit, and a stretch said with no tense
    "I work Monday to Friday",
    "Monday to Friday is the busy stretch",
    # the week ahead of a time gone, told in the past
    "I was nervous about the week ahead",
    "I was nervous about the upcoming week",
    "the coming weeks of the war were hard",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_words_that_are_not_times_give_nothing(text: str) -> None:
    assert event_times(text, SAID) == []
    assert event_time(text, SAID) is None


def test_times_come_in_text_order() -> None:
    text = "Since 2019 I've lived in Lyon; last week I moved, and tomorrow I start a new job."
    times = event_times(text, SAID)
    assert [t.phrase for t in times] == ["Since 2019", "last week", "tomorrow"]
    assert [t.precision for t in times] == ["open", "week", "day"]
    assert times[0] == EventTime(day(2019, 1, 1), SAID, "open", "Since 2019")


def test_event_time_is_the_most_specific() -> None:
    text = "I've had this car since 2010 and I fixed it yesterday"
    assert event_time(text, SAID) == EventTime(day(2023, 5, 8), day(2023, 5, 9), "day", "yesterday")
    # between spans of one length, the first
    both = event_time("yesterday, not today", SAID)
    assert both is not None and both.phrase == "yesterday"


def test_a_longer_expression_wins_over_the_words_inside_it() -> None:
    assert [t.phrase for t in event_times("the day before yesterday", SAID)] == [
        "the day before yesterday"
    ]
    assert [t.phrase for t in event_times("I may go in May", SAID)] == ["in May"]


def test_said_at_in_another_zone_is_read_in_the_speakers_calendar() -> None:
    # 23:30 on the 9th where it was said is 04:30Z on the 10th: its yesterday is the 8th.
    said = datetime(2023, 5, 9, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    found = event_time("yesterday", said)
    assert found is not None and (found.start, found.end) == (day(2023, 5, 8), day(2023, 5, 9))
    ahead = datetime(2024, 1, 1, 2, 0, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    found = event_time("yesterday", ahead)  # 20:30Z on 31 December
    assert found is not None and found.start == day(2023, 12, 31)


@pytest.mark.parametrize(
    "said_at", [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, tzinfo=UTC)]
)
def test_the_ends_of_the_calendar_skip_what_falls_outside(said_at: datetime) -> None:
    texts = [
        "yesterday",
        "tomorrow",
        "5 years ago",
        "in two weeks",
        "last week",
        "next week",
        "last summer",
        "this summer",
        "next summer",
        "in the summer",
        "this winter",
        "in May",
        "on 3 May",
        "last month",
        "next month",
        "for five years now",
        "from May to July",
        "since May",
        "on Friday",
        "last weekend",
        "this weekend",
        "next weekend",
        "in December 9999",
        "9999-12-31",
        "in 9999",
    ]
    for text in texts:
        for found in event_times(text, said_at):
            assert found.start < found.end
    assert event_times("yesterday", datetime(1, 1, 1, tzinfo=UTC)) == []
    assert event_times("tomorrow", datetime(9999, 12, 31, 23, tzinfo=UTC)) == []
    assert event_times("in December 9999 and 9999-12-31", SAID) == []


# --- storing, showing and matching --------------------------------------------------------------

SAID_ON = datetime(2024, 5, 8, 18, tzinfo=UTC)


def test_event_times_round_trip_through_their_stored_form() -> None:
    times = event_times("Since September I've run, and yesterday I ran 10 km.", SAID_ON)
    assert len(times) == 2
    assert loaded(stored(times)) == tuple(times)
    assert stored([]) == "[]" and loaded("[]") == () and loaded(None) == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I fixed the roof yesterday.", "2024-05-07"),
        ("We moved here last month.", "2024-04"),
        ("I started painting in 2019.", "2019"),
        ("The trip was last week.", "2024-04-29/2024-05-05"),
        ("I have played chess since September.", "2023-09-01/.."),
    ],
)
def test_event_times_are_shown_in_iso_8601(text: str, expected: str) -> None:
    found = event_time(text, SAID_ON)
    assert found is not None and shown(found) == expected


def test_a_time_asked_meets_an_event_time_with_the_slack_of_its_precision() -> None:
    def day(d: int) -> datetime:
        return datetime(2024, 5, d, tzinfo=UTC)

    yesterday = event_time("I fixed the roof yesterday.", SAID_ON)  # 7 May
    last_month = event_time("We moved here last month.", SAID_ON)  # April
    assert yesterday is not None and last_month is not None
    assert overlaps(yesterday, day(7), day(8))
    assert overlaps(yesterday, day(8), day(9))  # a day either side
    assert not overlaps(yesterday, day(9), day(10))
    assert overlaps(last_month, day(6), day(7))  # a week past the month
    assert not overlaps(last_month, day(9), day(10))


def test_a_text_of_thousands_of_expressions_reads_each_sentence_s_tense_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One sentence of 3,500 weekdays (the 32,000 characters a memory may hold): its tense is
    # read once, not once per weekday; before, such a text took minutes.
    from doxa.store import event_time as module

    reads: list[str] = []
    past = module._PAST

    class Counting:
        def search(self, text: str) -> object:
            reads.append(text)
            return past.search(text)

    monkeypatch.setattr(module, "_PAST", Counting())
    text = "We went out " + "Saturday " * 3_500
    started = time.perf_counter()
    times = event_times(text, SAID)
    took = time.perf_counter() - started
    assert len(times) == 3_500
    assert {t.start for t in times} == {day(2023, 5, 6)}
    assert len(reads) == 1
    assert took < 10  # about 0.07 s here: a guard against quadratic time, not a speed target


def test_a_weekday_joins_a_named_week_only_in_one_breath() -> None:
    # A sentence mark between them: "last week" and a Tuesday of its own.
    phrases = [t.phrase for t in event_times("I went last week. Tuesday I rested.", SAID)]
    assert phrases == ["last week", "Tuesday"]


def test_days_out_of_order_are_no_span() -> None:
    # "from 10 to 3 June" is no stretch of June: only "3 June" is read, as before.
    [found] = event_times("we scored from 10 to 3 June", MONDAY)
    assert (found.phrase, found.precision, found.start) == ("3 June", "day", day(2023, 6, 3))


@pytest.mark.parametrize(
    ("text", "stated", "expected", "alone"),
    [
        # the fact begins on the day the words name: its year, not the one the words alone
        # give (the nearer 11 December, said in May, is the one gone)
        ("Back home in Berlin from 11 December.", [day(2024, 12, 11)], "2024-12-11", "2023-12-11"),
        # midnight of 11 December at +02:00, kept as 10 December 22:00Z
        (
            "Back home in Berlin from 11 December.",
            [datetime(2024, 12, 10, 22, tzinfo=UTC)],
            "2024-12-11",
            "2023-12-11",
        ),
        ("Back home in Berlin from 11 June.", [day(2024, 6, 11)], "2024-06-11", "2024-06-11"),
        ("Back home in Berlin in December.", [day(2024, 12, 1)], "2024-12", "2023-12"),
        # from today through the day it holds until
        (
            "I rent the flat until 30 September.",
            [day(2024, 5, 1), day(2024, 9, 30)],
            "2024-05-20/2024-09-30",
            "2024-05-20/2024-09-30",
        ),
        (
            "A flat in Lisbon from 1 to 30 December.",
            [day(2024, 12, 1)],
            "2024-12-01/2024-12-30",
            "2023-12-01/2023-12-30",
        ),
        (
            "A flat in Lisbon from 1 to 30 September.",
            [day(2024, 9, 1)],
            "2024-09-01/2024-09-30",
            # told with no cue of a plan, a day more than a season ahead is not read ahead
            "2023-09-01/2023-09-30",
        ),
        # a day the fact does not state is read as the words alone; so is "last June"
        ("Back home in Berlin from 12 December.", [day(2024, 12, 11)], "2023-12-12", "2023-12-12"),
        ("We were in Berlin last June.", [day(2024, 6, 11)], "2023-06", "2023-06"),
    ],
)
def test_a_date_without_its_year_takes_the_year_of_the_day_a_fact_states(
    text: str, stated: list[datetime], expected: str | None, alone: str | None
) -> None:
    said = datetime(2024, 5, 20, 10, tzinfo=UTC)
    found = event_time(text, said, stated=stated)
    assert (shown(found) if found else None) == expected
    # without what the fact states, the words alone: a day of a month told in no past
    # tense is the nearer of the one gone and the one to come
    read = event_time(text, said)
    assert (shown(read) if read else None) == alone


def test_code_beside_words_of_time_leaves_only_the_words() -> None:
    times = event_times("Yesterday I ran `git log --since 2020` again.", SAID)
    assert [(t.phrase, t.start) for t in times] == [("Yesterday", day(2023, 5, 8))]


def test_a_range_back_in_the_year_is_no_year_long_stretch() -> None:
    # "10 May to 3 May" read as 10 May to 3 May of the next year.
    [moved] = event_times("I moved the meeting 10 May to 3 May.", SAID)
    assert (moved.start, moved.end, moved.phrase) == (day(2023, 5, 3), day(2023, 5, 4), "3 May")


def test_code_of_one_word_and_an_unclosed_fence_on_a_line_are_words() -> None:
    # "`2024-05-01`" is a date set as code, and "``` but today" opens no block.
    [deadline] = event_times("Deadline `2024-05-01`, as agreed.", SAID)
    assert deadline.start == day(2024, 5, 1)
    [today] = event_times("``` but today it worked", SAID)
    assert today.phrase == "today"


JAN_3 = datetime(2025, 1, 3, 12, tzinfo=UTC)
SUNDAY = datetime(2024, 5, 12, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("said", "text"),
    [
        # Cues of a plan that tell of a finished event as often: "still" with the
        # progressive, a day said of a thing something comes from ("from the party on …"),
        # "reminds me of", a note's day of a month nearer gone than to come, and a note's
        # weekday followed by how it went.
        (JAN_3, "I'm still recovering from the party on 31 December."),
        (JAN_3, "We are still eating leftovers from the dinner on 25 December."),
        (JAN_3, "I'm still thinking about the concert on 28 December."),
        (JAN_3, "Dinner with Ana on 30 December: lovely evening."),
        (JAN_3, "She is still talking about the wedding on 29 December."),
        (JAN_3, "Dentist on 30 December: no cavities!"),
        (JAN_3, "I'm attaching the photos from the reunion on 28 December."),
        (SUNDAY, "I'm still thinking about the concert on Friday."),
        (SUNDAY, "I'm attaching the notes from the meeting on Friday."),
        (SUNDAY, "That reminds me of the picnic on Saturday, so much fun."),
        (SUNDAY, "My legs are aching from the race on Saturday."),
        (SUNDAY, "I'm sharing the pictures from the party on Saturday."),
        (SUNDAY, "Dentist on Friday: no cavities!"),
        (SUNDAY, "Dinner with Ana on Friday - lovely evening."),
        # a dash set close, as typeset text sets it
        (SUNDAY, "Checkup on Friday\u2014all clear."),
        (SUNDAY, "Dinner with Ana on Friday \u2013lovely evening."),
        (SUNDAY, "Recital on Saturday: a huge success!"),
        (SUNDAY, "Checkup on Friday: all clear."),
        # an emoji or a smiley after how it went
        (SUNDAY, "Dentist on Friday: no cavities \U0001f389"),
        (SUNDAY, "Dentist on Friday - no cavities \U0001f389\U0001f389!"),
        (SUNDAY, "Checkup on Friday: all clear :)"),
    ],
)
def test_a_weak_cue_of_a_plan_leaves_a_finished_event_in_the_past(
    said: datetime, text: str
) -> None:
    [found] = event_times(text, said)
    assert found.start < said, (text, found)


@pytest.mark.parametrize(
    "text",
    [
        "Dentist on Friday: bring the insurance card.",
        "Party on Saturday: great food and music.",
        "Dentist on Friday.",
        # how it will go
        "Dentist on Friday: no cavities, I hope.",
        "Dentist on Friday: no cavities \U0001f91e I hope.",
        "Dentist on Friday: no cavities \u20ac",  # a symbol, no emoji
        # crossed fingers or folded hands hope for it
        "Dentist on Friday: no cavities \U0001f91e",
        "Checkup on Friday: all clear \U0001f64f\U0001f3fc",
        # a hyphen set close joins words: no dash
        "Checkup on Friday-all clear.",
    ],
)
def test_a_note_of_an_event_without_how_it_went_is_still_a_plan(text: str) -> None:
    [found] = event_times(text, SUNDAY)
    assert found.start > SUNDAY, (text, found)


@pytest.mark.parametrize(
    "text",
    [
        "GPT-4o-2024-08-06 scores 88.7% on MMLU.",
        "Load results-2023-11-02.jsonl first.",
        "Resume training from step-2024-05-01.",
        "llama-3-2024-08-06 is the checkpoint.",
        "The logs are in logs/2024-05-01/app.log.",
    ],
)
def test_a_day_inside_a_name_is_no_event_time(text: str) -> None:
    # A model, a file, a checkpoint: "What did we do in April 2024?" found them first.
    assert event_times(text, SAID) == []


def test_a_day_alone_and_a_range_of_days_joined_by_a_dash_are_still_read() -> None:
    [alone] = event_times("We shipped on 2024-05-01.", SAID)
    [both] = event_times("Away 2024-05-01-2024-05-03.", SAID)
    assert (alone.start, both.start, both.end) == (
        day(2024, 5, 1),
        day(2024, 5, 1),
        day(2024, 5, 4),
    )


SATURDAY = datetime(2023, 5, 13, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("said", "text"),
    [
        # Errands, reminders and the progressive are plans however far ahead; a note's day
        # of a month a week ahead is not a year back; "about the …" is no thing told of.
        (
            datetime(2023, 6, 1, 12, tzinfo=UTC),
            "Remind me to renew the car insurance on 15 December.",
        ),
        (datetime(2023, 6, 1, 12, tzinfo=UTC), "Reminder: renew the car insurance on 15 December."),
        (datetime(2023, 5, 10, 12, tzinfo=UTC), "I'm getting married on 20 November!"),
        (
            datetime(2023, 5, 10, 12, tzinfo=UTC),
            "The user needs to renew the passport on 20 November.",
        ),
        (datetime(2023, 6, 10, 12, tzinfo=UTC), "We are having a big family party on 24 December."),
        (SATURDAY, "We need to talk about the budget on Friday."),
        (SATURDAY, "I'm worrying about the exam on Monday."),
        (SATURDAY, "I'm writing the agenda of the meeting on Monday."),
        (SATURDAY, "I'm stressing about the exam on 22 May."),
        (SATURDAY, "Dinner with Ana on 20 May: bring wine."),
        (SATURDAY, "Team offsite on 20 May: agenda TBD."),
        (SATURDAY, "Dentist on Monday: remember the x-rays."),
    ],
)
def test_a_plan_told_by_these_cues_is_a_day_to_come(said: datetime, text: str) -> None:
    [found] = event_times(text, said)
    assert found.start > said, (text, found)


@pytest.mark.parametrize(
    ("text", "ahead"),
    [
        # An errand told as one, its verb opening the note: a to-do list's day is to come
        # (the Monday gone, a plumber called days before the note was made).
        ("Call the plumber on Monday.", True),
        ("Pay the rent on the 20th.", True),
        ("Pick up Emma from school on Friday.", True),
        ("Please send Ana the invoice on Monday.", True),
        ("Buy milk. Call mum on Sunday.", True),
        ("Note: call the plumber on Monday.", True),
        ("TODO: pay the rent on the 20th.", True),
        # A call had, or a note of how it went, stays in the past.
        ("Called the plumber on Monday.", False),
        ("Call with Ana on Friday: lovely evening.", False),
        ("Call on Friday went well.", False),
        # A name or a noun the verb begins is no errand.
        ("Call of Duty tournament on Friday was fun.", False),
        ("Pay rise on Friday, finally.", False),
        ("Cancel culture on Friday was the topic.", False),
        # A verb that is also a noun is an errand told with its object's determiner ("Order
        # the cake on Friday" was the Friday gone) ...
        ("Order the cake on Friday.", True),
        ("Please book a table at Casa Nova on Friday.", True),
        ("Fix the sink on Monday.", True),
        ("Return the library books on Monday.", True),
        # ... and no errand without one.
        ("Order 17 shipped on Friday.", False),
        ("Book club on Friday was fun.", False),
    ],
)
def test_an_errand_told_by_its_verb_is_a_day_to_come(text: str, ahead: bool) -> None:
    [found] = event_times(text, SATURDAY)
    assert (found.start > SATURDAY) is ahead, (text, found)


@pytest.mark.parametrize(
    "text",
    [
        "Book a table for Tom's birthday dinner by Friday.",
        "Order the cake by Friday.",
        "Return the library books by Friday.",
    ],
)
def test_an_errand_due_by_a_day_is_from_today_through_that_day(text: str) -> None:
    # Each read no time: a deadline is read only of what looks ahead or is to be done.
    [found] = event_times(text, SATURDAY)
    assert shown(found) == f"{SATURDAY.date()}/{SATURDAY.date() + timedelta(days=6)}"


@pytest.mark.parametrize(
    ("text", "ahead"),
    [
        # What should be done is to come, as what must be done (it was the Friday gone) ...
        ("We should ship the release on Friday.", True),
        ("Sam should review the PR on Monday.", True),
        # ... but not what should have been
        ("We should have shipped the release on Friday.", False),
    ],
)
def test_what_should_be_done_is_a_day_to_come(text: str, ahead: bool) -> None:
    [found] = event_times(text, SATURDAY)
    assert (found.start > SATURDAY) is ahead, (text, found)


def test_two_days_of_an_interval_written_with_a_slash_or_two_dots_are_read() -> None:
    slash = event_times("Vacation 2024-05-01/2024-05-03.", SAID)
    dots = event_times("Sprint ran 2024-05-01..2024-05-14.", SAID)
    assert [e.start for e in slash] == [day(2024, 5, 1), day(2024, 5, 3)]
    assert [e.start for e in dots] == [day(2024, 5, 1), day(2024, 5, 14)]


THURSDAY_3_DECEMBER = datetime(2026, 12, 3, 10, tzinfo=UTC)
MARCH_10 = datetime(2024, 3, 10, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("said", "text", "expected"),
    [
        # A full stop of a title, a short form or a time ends no sentence: the plan's words
        # before it still count ("Dr." made Monday the one gone, "10.30" a year back).
        (
            FRIDAY_4 := datetime(2026, 12, 4, 10, tzinfo=UTC),
            "Maya has an appointment with Dr. Kim on Monday at 9:00.",
            "2026-12-07",
        ),
        (FRIDAY_4, "A call with the bank at 10 a.m. on Tuesday.", "2026-12-08"),
        (FRIDAY_4, "I met Anna at 10 a.m. I have a dentist appointment on Friday.", "2026-12-11"),
        (
            THURSDAY_3_DECEMBER,
            'Maya said "we went to Rome." She has an exam on Friday.',
            "2026-12-04",
        ),
        (THURSDAY_3_DECEMBER, "I got a B. The exam is on Friday.", "2026-12-04"),
        (THURSDAY_3_DECEMBER, "A call at 10.30 on 10 December.", "2026-12-10"),
        (THURSDAY_3_DECEMBER, "Oh no. We went hiking on Saturday.", "2026-11-28"),
        # A day of a month told in no past tense is the nearer of the one gone and the one
        # to come (it was the one gone, a year back).
        (THURSDAY_3_DECEMBER, "Maya has a check-in with her manager on 10 December.", "2026-12-10"),
        (THURSDAY_3_DECEMBER, "Maya has tickets for the concert on 20 December.", "2026-12-20"),
        (THURSDAY_3_DECEMBER, "Her passport expires on 10 January.", "2027-01-10"),
        (THURSDAY_3_DECEMBER, "The photos of 1 December are online.", "2026-12-01"),
        # ... and so is a thing booked (the day is the flight's, not the booking's).
        (THURSDAY_3_DECEMBER, "Maya booked a flight to Osaka on 12 December.", "2026-12-12"),
        (THURSDAY_3_DECEMBER, "Maya booked a table at Nobu for 12 December.", "2026-12-12"),
        # A past tense keeps the day gone; so does a record of a day.
        (THURSDAY_3_DECEMBER, "I went to Paris on 10 December.", "2025-12-10"),
        (THURSDAY_3_DECEMBER, "Maya bought a coat on 10 December.", "2025-12-10"),
        (THURSDAY_3_DECEMBER, "Wedding photos from 10 December.", "2025-12-10"),
        (THURSDAY_3_DECEMBER, "The minutes of 10 December are in the drive.", "2025-12-10"),
        # ... unless it is to be done; a past tense not known before tells of a day gone, and
        # so does a booking's past tense of something else; told with no cue of a plan, a
        # day more than a season ahead is not read ahead.
        (THURSDAY_3_DECEMBER, "The report of 10 December is due.", "2026-12-10"),
        (THURSDAY_3_DECEMBER, "Reminder: send the summary of 10 December to Ana.", "2026-12-10"),
        (THURSDAY_3_DECEMBER, "Born on 3 June.", "2026-06-03"),
        (THURSDAY_3_DECEMBER, "We arranged it all and the party was on 10 December.", "2025-12-10"),
        (datetime(2024, 3, 1, tzinfo=UTC), "Maya broke her arm on 20 August.", "2023-08-20"),
        (datetime(2024, 3, 1, tzinfo=UTC), "Maya fell on 20 August.", "2023-08-20"),
        # From a second review: booked told in the present is ahead however far; a thing
        # something comes from is of a day gone even in an errand; what expires is a plan;
        # initials, "a.m." before a day named and ".," go on; "still having" is no plan;
        # "LED", "I want to quit" are no past tense.
        (MARCH_10, "The surgery is booked for 15 September.", "2024-09-15"),
        (MARCH_10, "We're scheduled to fly out on 20 October.", "2024-10-20"),
        (MARCH_10, "My passport expires on 20 August.", "2024-08-20"),
        (MARCH_10, "Q3 planning kickoff on 1 July.", "2024-07-01"),
        (MARCH_10, "The LED strip arrives on 20 March.", "2024-03-20"),
        (MARCH_10, "I want to quit smoking on 1 April.", "2024-04-01"),
        (MARCH_10, "Send Ana the photos from the wedding on 3 June.", "2023-06-03"),
        (
            THURSDAY_3_DECEMBER,
            "I have a meeting with Mr. Tanaka and A. Patel on Friday.",
            "2026-12-04",
        ),
        (THURSDAY_3_DECEMBER, "I have a call with Acme at 3 p.m. Friday.", "2026-12-04"),
        (
            THURSDAY_3_DECEMBER,
            "Maya has an appointment with the vet at 9 a.m., Friday.",
            "2026-12-04",
        ),
        (
            THURSDAY_3_DECEMBER,
            "I'm still having nightmares about the crash on Saturday.",
            "2026-11-28",
        ),
        # A plan kept is a plan; "still" of a thought is of a day gone.
        (THURSDAY_3_DECEMBER, "We're still meeting on Saturday.", "2026-12-05"),
        (THURSDAY_3_DECEMBER, "We're still on for Saturday.", "2026-12-05"),
        (THURSDAY_3_DECEMBER, "I'm still thinking about the concert on Saturday.", "2026-11-28"),
    ],
)
def test_a_day_told_in_no_past_tense_is_the_nearer_and_short_forms_end_no_sentence(
    said: datetime, text: str, expected: str
) -> None:
    [found] = event_times(text, said)
    assert shown(found) == expected, text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The next visit is in June.", "2024-06"),
        ("Dentist in June.", "2024-06"),
        ("My birthday is in August.", "2024-08"),
        ("Concert in October.", "2024-10"),  # a concert is a plan's: however far ahead
        # A past tense keeps the month gone, and so does one more than a season ahead
        # told with no cue of a plan; this month is this one.
        ("We went to the concert in June.", "2023-06"),
        ("I was born in June.", "2023-06"),
        ("Born in June.", "2023-06"),
        ("Her first-born arrives in June.", "2024-06"),
        ("Maya fell ill in October.", "2023-10"),
        ("Trip to Rome in March.", "2024-03"),
        ("Rent is due in May.", "2024-05"),
    ],
)
def test_a_month_told_in_no_past_tense_is_the_nearer_within_a_season(
    text: str, expected: str
) -> None:
    """As a day of a month is: "the next visit is in June", said in May, was the June a
    year back."""
    [found] = event_times(text, MAY_12)
    assert shown(found) == expected, text


MAY_12 = datetime(2024, 5, 12, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    ["Maya goes running on Tuesday and Thursday mornings.", "We have yoga on Monday evenings."],
)
def test_a_weekday_s_mornings_or_evenings_are_a_habit_no_day(text: str) -> None:
    assert event_times(text, THURSDAY_3_DECEMBER) == []
    # of that weekday alone
    [met] = event_times("I met Maya on Tuesday and she swims on Thursday mornings.", SATURDAY)
    assert shown(met) == "2023-05-09"


# A Thursday evening in November.
NOV_5 = datetime(2026, 11, 5, 18, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected", "phrase"),
    [
        # A weekday said with a day of the month is that day, in the nearest month where it
        # falls on that weekday: "Thursday the 19th" was read as the weekday alone (the 12th).
        ("Dentist on Thursday the 19th.", day(2026, 11, 19), "on Thursday the 19th"),
        (
            "I have a dentist appointment on Thursday the 19th.",
            day(2026, 11, 19),
            "on Thursday the 19th",
        ),
        ("Lunch with Ana on Friday the 20th.", day(2026, 11, 20), "on Friday the 20th"),
        ("We met on Tuesday the 3rd.", day(2026, 11, 3), "on Tuesday the 3rd"),
        (
            "The party is on Saturday, the 5th of December.",
            day(2026, 12, 5),
            "on Saturday, the 5th of December",
        ),
        ("Dinner with Sam on Tuesday 1st at 8.", day(2026, 12, 1), "on Tuesday 1st"),
        ("Parents' evening is on Wed 18th.", day(2026, 11, 18), "on Wed 18th"),
        ("Dentist Thurs. 19th at 10", day(2026, 11, 19), "Thurs. 19th"),
        ("The recital was on Sunday the 25th.", day(2026, 10, 25), "on Sunday the 25th"),
    ],
)
def test_a_weekday_with_an_ordinal_day_is_that_day_in_the_nearest_month_it_fits(
    text: str, expected: datetime, phrase: str
) -> None:
    times = event_times(text, NOV_5)
    assert [(t.start, t.precision, t.phrase) for t in times] == [(expected, "day", phrase)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Told in the past tense, or with how it went: the latest gone, not the nearest (18
        # December, to come).
        ("I met Ana on Friday the 18th.", day(2026, 9, 18)),
        ("Dentist on Friday the 18th: all clear.", day(2026, 9, 18)),
        # Else the nearest.
        ("Lunch with Ana on Friday the 18th.", day(2026, 12, 18)),
        ("The party was moved to Friday the 18th.", day(2026, 12, 18)),
    ],
)
def test_a_weekday_with_its_day_told_as_gone_is_the_latest_gone(
    text: str, expected: datetime
) -> None:
    said = datetime(2026, 12, 6, 12, tzinfo=UTC)  # a Sunday
    [found] = event_times(text, said)
    assert found.start == expected, text


@pytest.mark.parametrize("text", ["She sat 3rd in the exam hall.", "I sat the 3rd row."])
def test_sat_and_sun_in_lower_case_are_no_weekdays_before_a_day(text: str) -> None:
    assert event_times(text, NOV_5) == []


@pytest.mark.parametrize(
    "text", ["I'm superstitious about Friday the 13th.", "Friday the 13th scared me as a kid."]
)
def test_friday_the_13th_without_on_is_the_name_of_one_not_a_day(text: str) -> None:
    # The superstition's or the film's; "on Friday the 13th" is a day.
    assert event_times(text, NOV_5) == []
    [day_of] = event_times("The dentist is on Friday the 13th.", NOV_5)
    assert day_of.start == day(2026, 11, 13)


@pytest.mark.parametrize(
    ("text", "expected", "phrase"),
    [
        # A plan someone moved: the new day is ahead, as "was moved to" says ("the dentist
        # moved my appointment to Thursday" was read as the Thursday gone, today).
        ("The dentist moved my appointment to Thursday.", day(2026, 11, 12), "Thursday"),
        ("They pushed the meeting back to Monday.", day(2026, 11, 9), "Monday"),
        ("I rescheduled my haircut for Saturday.", day(2026, 11, 7), "Saturday"),
        ("Ana moved our lunch to 20 November.", day(2026, 11, 20), "20 November"),
        # Whatever was moved, moved to a day ("it", "dinner with Ana", "got pushed").
        ("The dentist moved it to Friday.", day(2026, 11, 6), "Friday"),
        ("We've rescheduled dinner with Ana for Saturday.", day(2026, 11, 7), "Saturday"),
        ("Dinner with Ana got pushed to Saturday.", day(2026, 11, 7), "Saturday"),
        ("They moved it to next Monday.", day(2026, 11, 9), "next Monday"),
        ("They moved it to 20 November.", day(2026, 11, 20), "20 November"),
        ("We moved it to the 3rd of December.", day(2026, 12, 3), "the 3rd of December"),
        # A plan that slipped, was bumped or extended to a day, moved as any other ("the launch
        # slipped to March 17", said in December, was the March gone).
        ("Marketing says the launch slipped to 17 March.", day(2027, 3, 17), "17 March"),
        ("The release slips to March 17.", day(2027, 3, 17), "March 17"),
        ("The launch slid to 20 November.", day(2026, 11, 20), "20 November"),
        ("The launch was bumped to Monday.", day(2026, 11, 9), "Monday"),
        ("They bumped the demo to Friday.", day(2026, 11, 6), "Friday"),
        ("The deadline was extended to 20 November.", day(2026, 11, 20), "20 November"),
        ("The deadline has been extended to Friday.", day(2026, 11, 6), "Friday"),
        # A move of no event is the day gone.
        ("We moved the sofa to the garden on Friday.", day(2026, 10, 30), "on Friday"),
        ("I moved to Berlin on Friday.", day(2026, 10, 30), "on Friday"),
        ("I brought cake for Friday.", day(2026, 10, 30), "Friday"),
        ("I moved the plants to the sun on Friday.", day(2026, 10, 30), "on Friday"),
        # A month or weekday that is a name's or a place's names no day moved to.
        ("I moved my things to May's flat on Friday.", day(2026, 10, 30), "on Friday"),
        ("On Friday I moved the boxes to June\u2019s garage.", day(2026, 10, 30), "On Friday"),
        ("On Friday I moved the plants to the Sun room.", day(2026, 10, 30), "On Friday"),
    ],
)
def test_a_plan_someone_moved_is_on_the_day_ahead(
    text: str, expected: datetime, phrase: str
) -> None:
    times = event_times(text, NOV_5)
    assert [(t.start, t.precision, t.phrase) for t in times] == [(expected, "day", phrase)]


# A Sunday afternoon in December.
DEC_6 = datetime(2026, 12, 6, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "said_at", "start", "end", "phrase"),
    [
        # Ordinal days with no month: this month's if the first is today or ahead, else next
        # month's; in the past tense the latest whose first day is gone.
        (
            "We're in Porto from the 20th to the 23rd.",
            DEC_6,
            day(2026, 12, 20),
            day(2026, 12, 24),
            "from the 20th to the 23rd",
        ),
        (
            "We're in Porto from the 20th until the 23rd.",
            DEC_6,
            day(2026, 12, 20),
            day(2026, 12, 24),
            "from the 20th until the 23rd",
        ),
        ("We're in Porto 20th-23rd.", DEC_6, day(2026, 12, 20), day(2026, 12, 24), "20th-23rd"),
        (
            "Ana is visiting between the 20th and the 23rd.",
            DEC_6,
            day(2026, 12, 20),
            day(2026, 12, 24),
            "between the 20th and the 23rd",
        ),
        (
            "We're in Porto from the 6th to the 9th.",
            DEC_6,
            day(2026, 12, 6),
            day(2026, 12, 10),
            "from the 6th to the 9th",
        ),
        (
            "We're in Porto from the 2nd to the 4th.",
            DEC_6,
            day(2027, 1, 2),
            day(2027, 1, 5),
            "from the 2nd to the 4th",
        ),
        (
            "We were in Porto from the 2nd to the 4th.",
            DEC_6,
            day(2026, 12, 2),
            day(2026, 12, 5),
            "from the 2nd to the 4th",
        ),
        (
            "We were in Porto from the 20th to the 23rd.",
            DEC_6,
            day(2026, 11, 20),
            day(2026, 11, 24),
            "from the 20th to the 23rd",
        ),
        # A stretch under way (its last day today or ahead) is this month's, as "from 5 to
        # 8 December" is.
        (
            "We're in Porto from the 5th to the 8th.",
            DEC_6,
            day(2026, 12, 5),
            day(2026, 12, 9),
            "from the 5th to the 8th",
        ),
        # A day the month has not: the next month that has it.
        (
            "I'm off from the 30th to the 31st.",
            datetime(2026, 11, 10, tzinfo=UTC),
            day(2026, 12, 30),
            day(2027, 1, 1),
            "from the 30th to the 31st",
        ),
    ],
)
def test_ordinal_days_with_no_month_are_a_span_of_the_month_they_fall_in(
    text: str, said_at: datetime, start: datetime, end: datetime, phrase: str
) -> None:
    times = event_times(text, said_at)
    assert [(t.start, t.end, t.precision, t.phrase) for t in times] == [
        (start, end, "span", phrase)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "We moved from the 1st to the 3rd floor.",
        "It was built in the 18th-19th century.",
        "I usually travel from the 20th to the 23rd.",
        "We're in Porto from the 23rd to the 20th.",
        "She finished 2nd-3rd place.",
        "I was 1st-2nd in line.",
        "She finished 2nd-3rd.",
    ],
)
def test_ordinals_that_are_no_days_or_no_order_are_no_span(text: str) -> None:
    assert event_times(text, DEC_6) == []


@pytest.mark.parametrize(
    ("text", "said_at", "month", "phrase"),
    [
        # As "the end of March" is March: the month whose end it is; ahead, this month.
        ("I'll finish the report by the end of the month.", DEC_6, 12, "by the end of the month"),
        ("The rent is due at the end of the month.", DEC_6, 12, "the end of the month"),
        ("We're going to Lisbon at the end of the month.", DEC_6, 12, "the end of the month"),
        # a deadline told of what is to be done, as "by Friday"
        ("Please send it by the end of the month.", DEC_6, 12, "by the end of the month"),
        # In the past tense, the latest whose last seven days have begun.
        ("We moved at the end of the month.", DEC_6, 11, "the end of the month"),
        (
            "We moved at the end of the month.",
            datetime(2026, 12, 28, 9, tzinfo=UTC),
            12,
            "the end of the month",
        ),
        (
            "By the end of the month we had moved.",
            DEC_6,
            11,
            "By the end of the month",
        ),
    ],
)
def test_the_end_of_the_month_is_that_month(
    text: str, said_at: datetime, month: int, phrase: str
) -> None:
    times = event_times(text, said_at)
    year = 2026
    assert [(t.start, t.end, t.precision, t.phrase) for t in times] == [
        (day(year, month, 1), day(year + month // 12, month % 12 + 1, 1), "month", phrase)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "I pay rent at the end of the month.",
        "I usually pay rent at the end of the month.",
        "The end of the month-long trip was sad.",
    ],
)
def test_the_end_of_the_month_told_as_a_habit_or_with_no_tense_is_no_time(text: str) -> None:
    assert event_times(text, DEC_6) == []


@pytest.mark.parametrize(
    ("text", "friday", "phrase"),
    [
        # A deadline: from today to the end of the day named.
        ("I have to finish the report by Friday.", day(2026, 12, 11), "by Friday"),
        ("The essay is due by Friday.", day(2026, 12, 11), "by Friday"),
        ("Please send it by Friday.", day(2026, 12, 11), "by Friday"),
        ("I'll be back by Thursday.", day(2026, 12, 10), "by Thursday"),
        ("The essay is due by next Friday.", day(2026, 12, 11), "by next Friday"),
    ],
)
def test_by_a_weekday_to_come_is_the_span_up_to_it(
    text: str, friday: datetime, phrase: str
) -> None:
    times = event_times(text, DEC_6)
    assert [(t.start, t.end, t.precision, t.phrase) for t in times] == [
        (day(2026, 12, 6), friday + timedelta(days=1), "span", phrase)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "I finished it by Friday.",
        "By Friday I was exhausted.",
        "I usually get it done by Friday.",
        "I'll stop by Friday's place.",
        "I needed it by Friday.",
        "I had it ready by Friday.",
        "I usually want it by Friday.",
    ],
)
def test_by_a_weekday_gone_or_habitual_is_no_time(text: str) -> None:
    assert event_times(text, DEC_6) == []


# A Friday morning.
FRI_11 = datetime(2026, 12, 11, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "end", "phrase"),
    [
        # Said on a Friday, "by Friday" is today (it was read as the Friday a week away).
        ("I need to send it by Friday.", day(2026, 12, 12), "by Friday"),
        ("The essay is due by this Friday.", day(2026, 12, 12), "by this Friday"),
        # "next" and "this coming" still skip today
        ("The essay is due by next Friday.", day(2026, 12, 19), "by next Friday"),
        ("The essay is due by this coming Friday.", day(2026, 12, 19), "by this coming Friday"),
        # another weekday: the first to come
        ("Please send it by Thursday.", day(2026, 12, 18), "by Thursday"),
    ],
)
def test_by_the_weekday_it_is_said_on_is_today(text: str, end: datetime, phrase: str) -> None:
    times = event_times(text, FRI_11)
    assert [(t.start, t.end, t.precision, t.phrase) for t in times] == [
        (day(2026, 12, 11), end, "span", phrase)
    ]


@pytest.mark.parametrize(
    ("text", "end", "phrase"),
    [
        # What one needs, wants, or will have ready by a day is due then, as "is due by".
        ("I need it by Friday.", day(2026, 12, 12), "by Friday"),
        ("Ana needs this by Thursday.", day(2026, 12, 11), "by Thursday"),
        ("We need them by next Monday.", day(2026, 12, 8), "by next Monday"),
        ("I want it by Friday.", day(2026, 12, 12), "by Friday"),
        ("Can you have it ready by Thursday?", day(2026, 12, 11), "by Thursday"),
        ("Let's get it done by 15 December.", day(2026, 12, 16), "by 15 December"),
        ("The client needs it by December 15th.", day(2026, 12, 16), "by December 15th"),
    ],
)
def test_what_is_needed_by_a_day_is_due_then(text: str, end: datetime, phrase: str) -> None:
    times = event_times(text, DEC_6)
    assert [(t.start, t.end, t.precision, t.phrase) for t in times] == [
        (day(2026, 12, 6), end, "span", phrase)
    ]


@pytest.mark.parametrize(
    ("text", "expected", "phrase"),
    [
        # A weekday after "coming", "arriving", "leaving" told in the present progressive:
        # the one to come ("coming" was taken for "this coming" and left it unread).
        ("Sam is coming Thursday.", day(2026, 12, 10), "Thursday"),
        ("They're coming Thursday for dinner.", day(2026, 12, 10), "Thursday"),
        ("The kids are arriving Monday.", day(2026, 12, 7), "Monday"),
        ("We're leaving Friday.", day(2026, 12, 11), "Friday"),
        ("Sam is coming this coming Thursday.", day(2026, 12, 10), "this coming Thursday"),
        # "is" contracted after a name or a noun, as after a pronoun
        ("Sam's coming Thursday.", day(2026, 12, 10), "Thursday"),
        ("My sister\u2019s arriving Monday.", day(2026, 12, 7), "Monday"),
        ("Sam's coming on Thursday.", day(2026, 12, 10), "on Thursday"),
        ("Ana's leaving Friday for Lisbon.", day(2026, 12, 11), "Friday"),
    ],
)
def test_a_weekday_someone_is_coming_is_the_one_to_come(
    text: str, expected: datetime, phrase: str
) -> None:
    times = event_times(text, DEC_6)
    assert [(t.start, t.precision, t.phrase) for t in times] == [(expected, "day", phrase)]


@pytest.mark.parametrize(
    "text", ["Coming Thursday: the new album.", "I love coming Thursday nights."]
)
def test_coming_before_a_weekday_with_no_tense_or_as_a_habit_is_no_time(text: str) -> None:
    assert event_times(text, DEC_6) == []


@pytest.mark.parametrize(
    ("text", "said_at", "end", "phrase"),
    [
        # A deadline of a day or a month's end: from today through it, as "by Friday" (after
        # "by" the date was dropped).
        ("The report is due by the end of March.", DEC_6, day(2027, 4, 1), "by the end of March"),
        ("I need to finish the draft by end of March.", DEC_6, day(2027, 4, 1), "by end of March"),
        ("Please send it by 15 December.", DEC_6, day(2026, 12, 16), "by 15 December"),
        ("I need to have it by December 15th.", DEC_6, day(2026, 12, 16), "by December 15th"),
        (
            "I'll have it done by the 15th of December.",
            DEC_6,
            day(2026, 12, 16),
            "by the 15th of December",
        ),
        ("The essay is due by 3 January.", DEC_6, day(2027, 1, 4), "by 3 January"),
        ("We must move out by 31 March 2027.", DEC_6, day(2027, 4, 1), "by 31 March 2027"),
        (
            "The grant is due by the end of December.",
            DEC_6,
            day(2027, 1, 1),
            "by the end of December",
        ),
        ("Please send it by 2026-12-15.", DEC_6, day(2026, 12, 16), "by 2026-12-15"),
    ],
)
def test_by_a_date_or_a_months_end_to_come_is_the_span_up_to_it(
    text: str, said_at: datetime, end: datetime, phrase: str
) -> None:
    times = event_times(text, said_at)
    assert [(t.start, t.end, t.precision, t.phrase) for t in times] == [
        (day(2026, 12, 6), end, "span", phrase)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "I finished it by 15 December.",
        "By the end of March I was exhausted.",
        "I usually file it by 15 December.",
        "The house was sold by 3 March.",
        "I read a book by 15 December.",
        # a deadline gone, with its year
        "Please send it by 15 December 2025.",
    ],
)
def test_by_a_date_gone_habitual_or_with_no_deadline_is_no_time(text: str) -> None:
    assert event_times(text, DEC_6) == []


@pytest.mark.parametrize(
    ("text", "end", "phrase"),
    [
        # A state that holds from now through a time to come: from today through it (after
        # "until" the time was dropped: "I'm in Berlin until Friday" placed nothing).
        ("I'm in Berlin until Friday.", day(2026, 12, 12), "until Friday"),
        ("The office is closed until Monday.", day(2026, 12, 8), "until Monday"),
        ("I'm on leave till Thursday.", day(2026, 12, 11), "till Thursday"),
        ("I will be away until 15 December.", day(2026, 12, 16), "until 15 December"),
        ("I'm in Rome until the end of the month.", day(2027, 1, 1), "until the end of the month"),
        ("The trial runs until the end of March.", day(2027, 4, 1), "until the end of March"),
        (
            "The trial runs until the end of March next year.",
            day(2027, 4, 1),
            "until the end of March next year",
        ),
        (
            "The trial runs until the end of January next year.",
            day(2027, 2, 1),
            "until the end of January next year",
        ),
        ("The trial runs until January.", day(2027, 2, 1), "until January"),
        ("She is staying with us until Christmas.", day(2026, 12, 26), "until Christmas"),
        ("Stay until the 20th.", day(2026, 12, 21), "until the 20th"),
        ("We have until tomorrow to decide.", day(2026, 12, 8), "until tomorrow"),
        # "until next week" (month, year): until it begins, on Monday (the first); told on
        # a Sunday, through today ("until the end of next week" is through it).
        ("The road is closed until next week.", day(2026, 12, 7), "until next week"),
        ("I'm in Berlin until next month.", day(2027, 1, 1), "until next month"),
        ("The trial runs until next year.", day(2027, 1, 1), "until next year"),
        (
            "I'm in Rome until the end of next week.",
            day(2026, 12, 14),
            "until the end of next week",
        ),
        (
            "I'm in Rome until the end of next month.",
            day(2027, 2, 1),
            "until the end of next month",
        ),
        ("The trial runs until the end of the year.", day(2027, 1, 1), "until the end of the year"),
        # "extended to": the state's new end ("her contract was extended to June" was no time).
        ("Her contract was extended to June.", day(2027, 7, 1), "extended to June"),
        # a day or month of a year said relative to this one, of it (this year's March or
        # no time beside the whole year)
        ("I'm in Berlin until March next year.", day(2027, 4, 1), "until March next year"),
        ("I'm staying till 3 March next year.", day(2027, 3, 4), "till 3 March next year"),
        (
            "Her contract was extended to May of next year.",
            day(2027, 6, 1),
            "extended to May of next year",
        ),
    ],
)
def test_until_a_time_to_come_is_the_span_up_to_it(text: str, end: datetime, phrase: str) -> None:
    times = event_times(text, DEC_6)
    assert [(t.start, t.end, t.precision, t.phrase) for t in times] == [
        (day(2026, 12, 6), end, "span", phrase)
    ]


@pytest.mark.parametrize(
    ("text", "moved_to", "phrase"),
    [
        # A plan moved "until" a day is on that day, as one moved "to" it.
        ("The call is postponed until Friday.", day(2026, 12, 11), "until Friday"),
        ("The meeting was pushed back until 15 December.", day(2026, 12, 15), "until 15 December"),
    ],
)
def test_a_plan_moved_until_a_day_is_that_day(text: str, moved_to: datetime, phrase: str) -> None:
    times = event_times(text, DEC_6)
    assert [(t.start, t.end, t.precision, t.phrase) for t in times] == [
        (moved_to, moved_to + timedelta(days=1), "day", phrase)
    ]


@pytest.mark.parametrize(
    "text",
    [
        # Told in the past, "until" says when something ended, not when it began.
        "I lived in Paris until March.",
        "I stayed until Friday.",
        "I was on holiday until last Friday.",
        "I worked there until 2019.",
        # a habit, or no time named
        "I usually work until Friday.",
        "The shop is open until further notice.",
        "Keep stirring until it thickens.",
        # a time gone or today
        "The sale runs until today.",
        "I was in Berlin until last week.",
        "The road is closed until the end of the week.",  # told on a Sunday: today
        # Up to next Monday or through the seven days from now: no one reading.
        "I'm in Berlin until the coming week.",
        "I'm in Berlin until the week ahead.",
        "Her contract was extended to June last year.",
    ],
)
def test_until_told_in_the_past_as_a_habit_or_of_no_time_to_come_is_no_time(text: str) -> None:
    assert event_times(text, DEC_6) == []


#: Words for the first weekend not yet begun, each read alike.
WEEKEND_TO_COME = [
    "the upcoming weekend",
    "the coming weekend",
    "this coming weekend",
    "this upcoming weekend",
]


@pytest.mark.parametrize("words", WEEKEND_TO_COME)
@pytest.mark.parametrize(
    ("said", "saturday"),
    [
        # Said on a Wednesday: this week's.
        (datetime(2026, 12, 9, 10, tzinfo=UTC), day(2026, 12, 12)),
        # Said at a weekend, that one has begun: the next.
        (datetime(2026, 12, 12, 10, tzinfo=UTC), day(2026, 12, 19)),
        (datetime(2026, 12, 13, 10, tzinfo=UTC), day(2026, 12, 19)),
    ],
)
def test_the_coming_weekend_is_the_first_not_yet_begun(
    words: str, said: datetime, saturday: datetime
) -> None:
    weekend = (saturday, saturday + timedelta(days=2), "weekend", words)
    times = event_times(f"Dinner with Ana {words}.", said)
    assert [(t.start, t.end, t.precision, t.phrase) for t in times] == [weekend]
    # Booked: arranged for it, no past of a weekend then to come.
    [booked] = event_times(f"We booked a cabin for {words}.", said)
    assert (booked.start, booked.end, booked.precision) == weekend[:3]
    assert booked.phrase.endswith(words)


@pytest.mark.parametrize("words", WEEKEND_TO_COME)
def test_the_coming_weekend_told_in_the_past_is_no_time(words: str) -> None:
    # As "I was nervous about the week ahead": a weekend then to come, not now.
    assert event_times(f"I was nervous about {words}.", DEC_6) == []


@pytest.mark.parametrize(
    "words",
    [
        "this coming week",
        "this upcoming week",
        "this coming month",
        "this upcoming month",
        "this coming year",
        "this upcoming year",
    ],
)
def test_this_coming_week_told_in_the_past_is_no_time(words: str) -> None:
    # As "the week ahead" and "this coming weekend": a week then to come, not now.
    assert event_times(f"I was nervous about {words}.", DEC_6) == []
    # Planning it is no other past: the rest of the sentence tells.
    assert event_times(f"I was nervous about {words} we had planned.", DEC_6) == []


@pytest.mark.parametrize(
    ("words", "start", "end", "precision"),
    [
        # The seven days from now, as without the booking.
        ("the coming week", DEC_6, DEC_6 + timedelta(days=7), "span"),
        ("the upcoming week", DEC_6, DEC_6 + timedelta(days=7), "span"),
        ("the week ahead", DEC_6, DEC_6 + timedelta(days=7), "span"),
        # The calendar week after this one.
        ("this coming week", day(2026, 12, 7), day(2026, 12, 14), "week"),
        ("this upcoming week", day(2026, 12, 7), day(2026, 12, 14), "week"),
    ],
)
@pytest.mark.parametrize(
    "booked", ["booked", "reserved", "scheduled", "arranged", "planned", "organised", "organized"]
)
def test_a_week_to_come_booked_in_the_past_is_that_week(
    words: str, start: datetime, end: datetime, precision: str, booked: str
) -> None:
    # As "we booked a cabin for the coming weekend": the booking arranged it, no past of a
    # week then to come.
    times = event_times(f"We {booked} a cabin for {words}.", DEC_6)
    assert [(t.start, t.end, t.precision) for t in times] == [(start, end, precision)]
    assert times[0].phrase.endswith(words)


@pytest.mark.parametrize("words", WEEKEND_TO_COME)
@pytest.mark.parametrize(
    ("said", "begins"),
    [
        (datetime(2026, 12, 9, 10, tzinfo=UTC), day(2026, 12, 12)),
        (datetime(2026, 12, 12, 10, tzinfo=UTC), day(2026, 12, 19)),
    ],
)
def test_until_the_coming_weekend_is_up_to_its_start(
    words: str, said: datetime, begins: datetime
) -> None:
    # As "until this weekend" and "until next weekend": until it begins.
    times = event_times(f"Sam is in Berlin until {words}.", said)
    today = said.replace(hour=0)
    assert [(t.start, t.end, t.precision, t.phrase) for t in times] == [
        (today, begins, "span", f"until {words}")
    ]


@pytest.mark.parametrize(
    ("text", "start", "end", "phrase"),
    [
        # A day or month of a year said relative to this one is of that year (each was read
        # as the month or day alone, this year's, beside the whole year named).
        ("I went to Rome in May last year.", day(2025, 5, 1), day(2025, 6, 1), "in May last year"),
        ("We met in May of last year.", day(2025, 5, 1), day(2025, 6, 1), "in May of last year"),
        (
            "We met on March 17 last year.",
            day(2025, 3, 17),
            day(2025, 3, 18),
            "on March 17 last year",
        ),
        (
            "The launch slipped to March 17 last year.",
            day(2025, 3, 17),
            day(2025, 3, 18),
            "March 17 last year",
        ),
        ("We marry on 3 June next year.", day(2027, 6, 3), day(2027, 6, 4), "on 3 June next year"),
        ("We married in June this year.", day(2026, 6, 1), day(2026, 7, 1), "in June this year"),
        ("I've lived here since May last year.", day(2025, 5, 1), DEC_6, "since May last year"),
    ],
)
def test_a_date_of_last_or_next_year_is_of_that_year(
    text: str, start: datetime, end: datetime, phrase: str
) -> None:
    assert [(t.start, t.end, t.phrase) for t in event_times(text, DEC_6)] == [(start, end, phrase)]


@pytest.mark.parametrize(
    "text",
    [
        # A name's thing in -ing, no verb: "Sam's flying lessons" tell no plan.
        "Sam's flying lessons Thursday.",
        "Sam's driving test Thursday.",
        "Sam's visiting hours Thursday.",
        "Sam's coming-out party Thursday.",
        "Sam's leaving party Friday.",
    ],
)
def test_a_names_thing_in_ing_before_a_weekday_is_no_plan(text: str) -> None:
    assert event_times(text, DEC_6) == []


@pytest.mark.parametrize(
    ("text", "said_at", "start", "end"),
    [
        # Ordinal days across a month's end: the first in one month, the last in the next.
        ("We're in Porto from the 28th to the 3rd.", DEC_6, day(2026, 12, 28), day(2027, 1, 4)),
        ("Ana is visiting 30th-2nd.", DEC_6, day(2026, 12, 30), day(2027, 1, 3)),
        ("We were in Porto from the 28th to the 3rd.", DEC_6, day(2026, 11, 28), day(2026, 12, 4)),
        # under way (begun last month, its last day ahead): last month's, as "from the 5th to
        # the 8th" said on the 6th is this month's
        (
            "We're in Porto from the 28th to the 3rd.",
            datetime(2026, 12, 1, tzinfo=UTC),
            day(2026, 11, 28),
            day(2026, 12, 4),
        ),
        # a month without the first day: the next that has it
        (
            "I'm off from the 30th to the 2nd.",
            datetime(2027, 2, 3, tzinfo=UTC),
            day(2027, 3, 30),
            day(2027, 4, 3),
        ),
    ],
)
def test_ordinal_days_across_a_months_end_are_a_span_into_the_next_month(
    text: str, said_at: datetime, start: datetime, end: datetime
) -> None:
    times = event_times(text, said_at)
    assert [(t.start, t.end, t.precision) for t in times] == [(start, end, "span")]


@pytest.mark.parametrize(
    "text",
    [
        # longer than three weeks: no stretch of days said so
        "We're in Porto from the 23rd to the 20th.",
        "We're in Porto from the 10th to the 5th.",
        "I usually travel from the 28th to the 3rd.",
    ],
)
def test_ordinal_days_backwards_by_more_than_three_weeks_are_no_span(text: str) -> None:
    assert event_times(text, DEC_6) == []


def test_a_text_of_thousands_of_extended_to_reads_its_words_before_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One sentence of "x extended to Friday" to the 32,000 characters a memory may hold: the
    # plan's name before "extended" is looked for once in the sentence, not in all the words
    # before each "extended" (which took half a minute).
    from doxa.store import event_time as module

    plan = module._EXTENDED_PLAN
    read: list[int] = []

    class Counting:
        def search(self, text: str, *bounds: int) -> re.Match[str] | None:
            start, end = (bounds[0], bounds[1]) if len(bounds) == 2 else (0, len(text))
            read.append(end - start)
            return plan.search(text, *bounds)

    monkeypatch.setattr(module, "_EXTENDED_PLAN", Counting())
    text = ("x extended to Friday " * 1_600)[:32_000]
    event_times(text, SAID)
    assert sum(read) <= 2 * len(text)


@pytest.mark.parametrize("name", ["_TOLD_OF", "_RECORD_OF"])
def test_a_text_of_thousands_of_dates_reads_the_words_just_before_each(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # One sentence of "in May last year" to the 32,000 characters a memory may hold: what a
    # day is of ("the photos from", "the minutes of") is looked for in the words just before
    # it, not in all the sentence's before it (which took a quarter of a minute).
    from doxa.store import event_time as module

    pattern = getattr(module, name)
    read: list[int] = []

    class Counting:
        def search(self, text: str, *bounds: int) -> re.Match[str] | None:
            start, end = (bounds[0], bounds[1]) if len(bounds) == 2 else (0, len(text))
            read.append(end - start)
            return pattern.search(text, *bounds)

    monkeypatch.setattr(module, name, Counting())
    text = ("in May last year " * 1_900)[:32_000]
    assert len(event_times(text, SAID)) > 1_000
    assert sum(read) <= 200 * len(read)
