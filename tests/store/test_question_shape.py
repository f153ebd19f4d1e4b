"""Which questions ask for several things (their answers are spread over episodes)."""

from __future__ import annotations

import pytest

from doxa.store.question_shape import asks_for_many


@pytest.mark.parametrize(
    "question",
    [
        "Which cities has John been to?",
        "What activities does Melanie partake in?",
        "What are the names of John's children?",
        "How many games has John mentioned winning?",
        "What video games does Nate play?",
        "What kinds of books does Tim like?",
        "What types of pottery have Melanie and her kids made?",  # several kinds of a mass
        "Which sorts of music does she play?",
        "Where has Melanie camped?",
        "Where have you lived?",
        "What people has Maria met while volunteering?",
        "Which city have both Jean and John visited?",
        "List the places we shipped to.",
    ],
)
def test_questions_for_several_things(question: str) -> None:
    assert asks_for_many(question)


@pytest.mark.parametrize(
    "question",
    [
        "What did Caroline research?",
        "What is Melanie's favorite book?",
        "When did Melanie go camping?",
        "What does John do for work?",
        "What was discussed?",
        "Where does Alice live?",
        "Where did Melanie camp last summer?",
        "Where is the car?",
        "What status is the build in?",  # "status" ends in s and is one thing
        "What kind of pot did Mel make with clay?",  # one kind
        "What type of diet do Nate's turtles have?",
        "",
    ],
)
def test_questions_for_one_thing(question: str) -> None:
    assert not asks_for_many(question)
