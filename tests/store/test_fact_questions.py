"""Which questions name a fact: its subject or object, and its predicate by stem."""

from __future__ import annotations

import pytest

from doxa.store.fact_questions import (
    names_fact,
    names_only_relation,
    names_relation,
    question_words,
    stem,
)


@pytest.mark.parametrize(
    ("a", "b"),
    [("live", "lives"), ("lived", "living"), ("manager", "manages"), ("likes", "like")],
)
def test_forms_of_a_word_share_a_stem(a: str, b: str) -> None:
    assert stem(a) == stem(b)


@pytest.mark.parametrize(
    ("question", "fact"),
    [
        ("Where does Alice live?", ("Alice", "lives in", "Berlin")),
        ("where does alice live now", ("Alice", "lives_in", "Berlin")),
        ("Who is Alice's manager?", ("Bob", "manager of", "Alice")),
        ("What does Alice like?", ("Alice", "likes", "jazz")),
        ("Which skills does Alice have?", ("Alice", "has_skill", "Rust")),
        ("Where does Alice van Dijk live?", ("Alice van Dijk", "Lives-In", "Utrecht")),
    ],
)
def test_a_question_naming_an_entity_and_the_relation_names_the_fact(
    question: str, fact: tuple[str, str, str]
) -> None:
    assert names_fact(question_words(question), *fact)


@pytest.mark.parametrize(
    ("question", "fact"),
    [
        ("What does Alice like?", ("Alice", "lives in", "Berlin")),  # another relation
        ("Where does Bob live?", ("Alice", "lives in", "Berlin")),  # another entity
        ("Where does Alice van live?", ("Alice van Dijk", "lives in", "Utrecht")),  # part of it
        ("Is Alice in Berlin?", ("Alice", "is in", "Berlin")),  # only filler words
        ("Tell me about Alice", ("Alice", "lives in", "Berlin")),  # no relation at all
    ],
)
def test_a_question_that_misses_the_entity_or_the_relation_does_not(
    question: str, fact: tuple[str, str, str]
) -> None:
    assert not names_fact(question_words(question), *fact)


def test_a_question_naming_the_relation_alone_names_it_but_not_the_fact() -> None:
    asked = question_words("What database do we use?")
    assert names_relation(asked, "database")
    assert names_only_relation(asked, "acme-api", "database", "SQLite")
    assert not names_fact(asked, "acme-api", "database", "SQLite")
    bob = question_words("Where does Bob live?")
    assert names_relation(bob, "lives in")
    assert not names_only_relation(bob, "Alice", "lives in", "Paris")  # another name said
    assert not names_relation(asked, "lives in")
    assert not names_relation(asked, "is in")  # filler words alone name nothing


@pytest.mark.parametrize(
    "question", ["What did I eat yesterday?", "What do I eat at home?", "Where do We eat?"]
)
def test_the_one_asking_is_no_name(question: str) -> None:
    # "I" is written in capitals, yet names no one but the speaker.
    asked = question_words(question)
    assert asked.names == frozenset()
    assert names_only_relation(asked, "user", "eats", "ramen")
    assert not names_only_relation(question_words("What did Sam eat?"), "user", "eats", "ramen")
