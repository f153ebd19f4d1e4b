"""A text's details: the words that make it say what it says, and when two texts agree or
differ by them."""

from __future__ import annotations

from doxa.store.details import (
    agree,
    details,
    differ,
    same_way_round,
    says_no_more,
    values,
    words_in_order,
)


def test_details_are_the_words_that_make_a_text_say_what_it_says() -> None:
    found, words = details("Caroline: I met Bob on Monday. It wasn't 3.5 hours; it may rain")
    assert found == {"caroline", "bob", "monday", "wasn't", "3.5"}  # "may", "I": other words
    assert {"caroline", "met", "it", "may"} <= words
    assert details("We met in May.")[0] == {"may"}
    assert details("Nobody came.")[0] == {"nobody"}


def test_a_rewording_agrees_another_invoice_differs_a_narrower_text_neither() -> None:
    def both(a: str, b: str) -> tuple[bool, bool]:
        return agree(details(a), details(b)), differ(details(a), details(b))

    assert both("The deploy needs Python 3.11.", "deploy requires python 3.11") == (True, False)
    assert both("total of invoice 98", "total of invoice 99") == (False, True)
    assert both("standup on Monday", "standup on Tuesday") == (False, True)
    assert both("lunch served yesterday", "lunch served today") == (False, True)
    assert both("what did I eat yesterday", "what did I have yesterday") == (True, False)
    # One says more: not the same (pruning keeps both), yet no other thing (a query link).
    assert both("ferry timetable", "ferry timetable in winter") == (False, False)
    assert both("the printer is broken", "the printer is not broken") == (False, False)


def test_a_sentences_first_word_is_a_name_unless_a_common_opener() -> None:
    assert details("Alice ordered what?")[0] == {"alice"}
    assert details("What did Alice order? The Printer broke. Find it's")[0] == {"alice", "printer"}
    assert details("What's new? It's late. Let's go. I'm here.")[0] == set()
    assert differ(details("Alice ordered what?"), details("Bob ordered what?"))
    # A first word read as a name that the other text holds too agrees.
    assert agree(details("Printer on floor 2 is broken."), details("the printer on floor 2 broke"))


def test_a_time_relative_to_now_in_two_words_is_one_detail() -> None:
    assert details("lunch last  week")[0] == {"last week"}
    assert differ(details("lunch last week"), details("lunch this week"))
    assert agree(details("lunch last week"), details("what was lunch last week?"))
    assert not agree(details("lunch last week"), details("the week's last lunch"))
    assert details("the last weekend of the month")[0] == set()  # no time relative to now


def test_a_path_a_flag_a_host_an_identifier_is_a_detail() -> None:
    # One word each, with no capital or digit: questions about two paths were the same
    # question to feedback, and "--no-cache" the same flag as "--cache" to a prune.
    found, _ = details(
        "We use --no-cache; src/config/loader.py reads api.example.com: refresh_token"
    )
    assert found == {"no-cache", "src/config/loader.py", "api.example.com", "refresh_token"}
    assert differ(
        details("what does src/config/loader.py read?"),
        details("what does src/legacy/loader.py read?"),
    )
    assert not agree(details("Use the --no-cache flag."), details("Use the --cache flag."))
    assert agree(details("Build with --no-cache."), details("build it with --no-cache"))


def test_twins_are_said_the_same_way_round_but_a_shared_word_is_no_negation() -> None:
    def round_(a: str, b: str) -> bool:
        return same_way_round(words_in_order(a), words_in_order(b), details(a))

    assert not round_("This call is safe to retry.", "This call is unsafe to retry.")
    assert not round_("We pinned numpy<2.", "We pinned numpy>=2.")
    assert round_("Please inform Bob about the form.", "Please tell Bob about the form.")


def test_a_copy_says_no_word_its_original_lacks_but_fillers() -> None:
    def no_more(twin: str, keeper: str) -> bool:
        return says_no_more(words_in_order(twin), words_in_order(keeper))

    assert no_more("The printer on floor 2 is broken!", "the printer on floor 2 is broken.")
    assert no_more("Build with --no-cache.", "Please build it with --no-cache.")
    assert no_more("The printer is broken.", "The printer is broken again.")
    assert not no_more("The printer is broken again.", "The printer is broken.")
    assert not no_more("Caching decreases memory use.", "Caching increases memory use.")
    assert not no_more("The job exports records.", "The job imports records.")


def test_values_are_numbers_and_names_not_speakers_greetings_or_compounds() -> None:
    assert values("Python 3.12 is the minimum; bumped to 3.13 by Alice in June.")[0] == {
        "3.12",
        "3.13",
        "alice",
        "june",
    }
    # A speaker before a colon, a greeting, one spoken to, a negation, a relative time: none.
    assert values("Joanna: Thanks, Nate! I'll not keep you waiting, see you today.")[0] == set()
    assert values("Caroline: Hey Mel! See you on Friday at 5.")[0] == {"friday", "5"}
    assert values("No problem, Joanna! Finding self-acceptance took years.")[0] == set()
    assert values("We moved it to acme-group/widgets, near Porto.")[0] == {
        "acme-group/widgets",
        "porto",
    }
    # A possessive is its name, among the values and the words.
    found, words = values("Bob now lives in Lisbon's Alfama district.")
    assert found == {"lisbon", "alfama"}
    assert {"lisbon", "lisbon's"} <= words
