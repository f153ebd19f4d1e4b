"""The view page's data: entities by position, and memory text embedded so that no text can
end the page's script (the browser-level checks are in test_view.py)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from doxa.server.view_page import page_data, render
from doxa.store.picture import (
    Picture,
    PicturedConflict,
    PicturedEntity,
    PicturedFact,
    PicturedNote,
)

WHEN = datetime(2026, 3, 10, 10, 0, 30, tzinfo=UTC)
HOSTILE = "</script><script>alert(1)</script><!-- \u2028 & é"


def _picture() -> Picture:
    fact = PicturedFact(
        id="obs_1",
        subject=HOSTILE,
        subject_key="h",
        predicate="lives_in",
        object="Hamburg",
        object_key="hamburg",
        confidence="0.9",
        agents=("scout", "critic"),
        start=WHEN,
        end=None,
        observed_at=WHEN,
        recorded_at=WHEN,
        retracted_at=None,
        superseded_by=(),
        ended_by=None,
        superseded_known=None,
        current=True,
        later=False,
        held=True,
        events=("2026-03",),
    )
    return Picture(
        taken_at=WHEN,
        observations=2,
        entities=(PicturedEntity("h", HOSTILE, 2, 1), PicturedEntity("hamburg", "Hamburg", 1, 1)),
        facts=(fact,),
        mentioned_together=(("h", "hamburg", 1),),
        notes=(PicturedNote("obs_2", HOSTILE, WHEN, ("h",)),),
        conflicts=(
            PicturedConflict("clash", "obs_1", "obs_3", "a", "b", ("scout",), (), ("hamburg",)),
        ),
        left_out={"facts": 0, "notes": 0, "conflicts": 0},
    )


def test_page_data_names_entities_by_position_and_times_to_the_minute() -> None:
    data = page_data(_picture(), drawn=5)
    assert data["e"] == [[HOSTILE, 2, 1], ["Hamburg", 1, 1]]
    minute = "2026-03-10 10:00"
    # Not retracted, not superseded, current, its event time, no supersession, begun.
    ends = ["", "", 1, "2026-03", "", 0, "", 1]
    assert data["f"] == [
        ["obs_1", 0, "lives_in", 1, "0.9", "scout, critic", minute, "", minute, minute, *ends]
    ]
    assert data["m"] == [[0, 1, 1]] and data["n"] == [["obs_2", HOSTILE, "2026-03-10 10:00", [0]]]
    assert data["c"] == [["clash", "obs_1", "obs_3", "a", "b", ["scout"], [], [1], ""]]
    assert (data["d"], data["o"], data["t"]) == (5, 2, "2026-03-10 10:00")


def test_no_memory_text_can_end_the_pages_script() -> None:
    page = render(_picture())
    embedded = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert embedded is not None
    assert "<" not in embedded.group(1) and "\u2028" not in embedded.group(1)
    assert json.loads(embedded.group(1))["e"][0][0] == HOSTILE  # the text comes back whole
    assert page.count("</script>") == 2  # the data's and the page's own
