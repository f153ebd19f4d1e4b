"""A text's details: the words that make it say what it says, and when two texts agree or
differ by them."""

from __future__ import annotations

from doxa.store.details import agree, details, differ


def test_details_are_the_words_that_make_a_text_say_what_it_says() -> None:
    found, words = details("Caroline: I met Bob on Monday. It wasn't 3.5 hours; it may rain")
    assert found == {"bob", "monday", "wasn't", "3.5"}  # "may" and "I" are other words too
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
