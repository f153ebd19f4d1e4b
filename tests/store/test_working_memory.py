"""The working memory's name keys (``topic_key``): what is one name and what is two."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doxa.store.working_memory import topic_key


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("the user", "User"),
        ("The Beatles", "Beatles"),
        ("the Hague", "HAGUE"),
        ("An  apple", "apple"),
        ("a Team", "team"),
        ("The A Team", "A Team"),
        ("THE the band", "Band"),
        ("Café", "the Cafe\u0301"),
    ],
)
def test_names_differing_by_a_leading_article_are_one_key(one: str, other: str) -> None:
    assert topic_key(one) == topic_key(other)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("A", "a"),
        ("The", "the"),
        ("The The", "the the"),
        ("an A", "an a"),
        ("a.k.a. Bob", "a.k.a. bob"),
        ("The 1975", "the 1975"),
        ("Theatre Royal", "theatre royal"),
        ("Anne", "anne"),
        ("the 'user'", "the 'user'"),
    ],
)
def test_an_article_that_is_the_name_or_stands_before_no_word_is_kept(name: str, key: str) -> None:
    assert topic_key(name) == key


@given(st.lists(st.sampled_from(["the", "A", "an", "The", "x", "Beatles", "1975", "a.k.a."])))
def test_a_key_is_its_own_key(words: list[str]) -> None:
    # Filters, the page and ranking key what may already be a key: it must not move again.
    key = topic_key(" ".join(words))
    assert topic_key(key) == key
