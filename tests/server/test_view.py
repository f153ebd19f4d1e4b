"""``doxa view`` and ``/view`` as a user meets them: the page written from a memory with a few
entities, facts and a conflict, loaded in headless Chromium (its DOM after the scripts ran,
and a screenshot); the page of very long names measured in a wide and a narrow window; and
the same page over HTTP behind the bearer token, from the server that owns the data
directory."""

from __future__ import annotations

import html as html_module
import json
import re
import shutil
import struct
import subprocess
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import numpy as np
import pytest
from conftest import hash_settings

from doxa.server.cli import main
from doxa.server.tokens import TokenStore
from doxa.store import Memory, MemoryDraft
from doxa.store.drafts import FactDraft

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium is not installed (Debian: apt-get install -y chromium;"
    " .ci/run installs it)",
)

#: Flags for a headless Chromium on a machine without network or desktop.
HEADLESS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WIDTH, HEIGHT = 1280, 800
#: The conflict's red (``.node.conflict circle`` stroke, ``.conflict`` border).
CONFLICT_RED = (0xD9, 0x30, 0x25)


def fill(data_dir: Path) -> None:
    """A memory of eight entities, eight facts (one superseded, one beginning in 2999, one
    never held), a note, and two conflicts (an explicit contradiction and two agents'
    clashing facts)."""
    memory = Memory.open(hash_settings(data_dir).store)
    memory.warm_up()
    try:
        said = memory.remember(
            [
                MemoryDraft(
                    text="Alice lives in Berlin.",
                    agent="scout",
                    observed_at="2026-01-05T10:00:00Z",
                    fact=FactDraft("Alice", "lives in", "Berlin"),
                ),
                MemoryDraft(
                    text="Alice works at Acme.",
                    agent="scout",
                    fact=FactDraft("Alice", "works at", "Acme"),
                ),
                MemoryDraft(
                    text="Bob manages Alice.",
                    agent="scout",
                    fact=FactDraft("Bob", "manager of", "Alice"),
                ),
                MemoryDraft(
                    text="Acme is in Berlin.",
                    agent="scout",
                    fact=FactDraft("Acme", "based in", "Berlin"),
                ),
                MemoryDraft(
                    text="Alice will chair Zeta from 2999.",
                    agent="scout",
                    fact=FactDraft("Alice", "chairs", "Zeta", valid_from="2999-01-01T00:00:00Z"),
                ),
                MemoryDraft(
                    text="Met Alice and Bob at the Acme launch </script><b>x</b>.",
                    agent="scout",
                    topics=["Alice", "Bob", "Acme"],
                ),
            ],
            batch=True,
        )
        memory.remember(
            [
                MemoryDraft(
                    text="Alice moved to Hamburg in March.",
                    agent="scout",
                    observed_at="2026-03-10T10:00:00Z",
                    fact=FactDraft("Alice", "lives in", "Hamburg"),
                )
            ]
        )
        memory.remember(
            [
                MemoryDraft(
                    text="Alice lives in Munich.",
                    agent="critic",
                    fact=FactDraft("Alice", "lives in", "Munich"),
                )
            ]
        )
        # Never held: told in March, with only an end already past.
        memory.remember(
            [
                MemoryDraft(
                    text="Alice sold her bike on 10 February.",
                    agent="scout",
                    observed_at="2026-03-01T10:00:00Z",
                    fact=FactDraft("Alice", "owns", "bike", valid_until="2026-02-10T00:00:00Z"),
                )
            ]
        )
        memory.remember(
            [
                MemoryDraft(
                    text="Acme is not in Berlin.",
                    agent="critic",
                    contradicts=[said[3].observation_id],
                )
            ]
        )
        assert memory.settle(timeout=30)
    finally:
        memory.close()


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *HEADLESS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def png_pixels(data: bytes, rows: int) -> tuple[int, int, list[bytes]]:
    """(width, height, RGB pixels of the first ``rows`` rows) of an 8-bit, non-interlaced
    PNG, checking that the image data holds every row. Only the top is decoded: undoing the
    Paeth filter byte by byte in Python takes seconds for the whole screenshot."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, chunks, header = 8, [], b""
    while at < len(data):
        (size,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + size]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        at += 12 + size
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and interlace == 0 and colour in (2, 6), (depth, colour, interlace)
    step = 3 if colour == 2 else 4
    stride = width * step
    raw = zlib.decompress(b"".join(chunks))
    assert len(raw) == height * (stride + 1), "the image data does not hold every row"
    pixels: list[bytes] = []
    previous = np.zeros(stride, dtype=np.uint8)
    for y in range(min(rows, height)):
        kind = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).copy()
        if kind == 1:  # Sub: a running sum of each channel
            line = np.cumsum(line.reshape(width, step), axis=0, dtype=np.uint8).reshape(-1)
        elif kind == 2:  # Up
            line += previous
        elif kind in (3, 4):  # Average, Paeth: each byte depends on the one decoded before
            out, up = bytearray(line.tobytes()), previous.tolist()
            for x in range(stride):
                left = out[x - step] if x >= step else 0
                if kind == 3:
                    out[x] = (out[x] + (left + up[x]) // 2) & 0xFF
                    continue
                corner = up[x - step] if x >= step else 0
                guess = left + up[x] - corner
                near = min((abs(guess - left), 0, left), (abs(guess - up[x]), 1, up[x]))
                near = min(near, (abs(guess - corner), 2, corner))
                out[x] = (out[x] + near[2]) & 0xFF
            line = np.frombuffer(bytes(out), np.uint8)
        pixels += [line[i : i + 3].tobytes() for i in range(0, stride, step)]
        previous = line
    return width, height, pixels


def isolates_dropped(dom: str) -> str:
    """The page's text without the marks that isolate the memory's words."""
    return dom.replace("\u2068", "").replace("\u2069", "")


@needs_chromium
def test_the_page_in_chromium_names_the_entities_marks_the_conflicts_and_draws_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, page = tmp_path / "m", tmp_path / "memory.html"
    fill(data_dir)
    assert (
        main(["view", "--embedder", "hash", "--data-dir", str(data_dir), "--out", str(page)]) == 0
    )
    assert capsys.readouterr().out.startswith(f"wrote {page} (")
    html = page.read_text(encoding="utf-8")
    # Nothing fetched at view time; the note's markup stays text inside the data.
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html and "</script><b>" not in html

    shown = chromium("--dump-dom", page.as_uri(), profile=tmp_path / "profile").stdout
    # The memory's words are isolated from the text around them (a right-to-left override
    # in a name reordered the agents after it).
    assert ">\u2068Alice\u2069</text>" in shown
    assert "\u2068Alice lives in Munich.\u2069 (\u2068critic\u2069)" in shown
    dom = isolates_dropped(shown)
    assert 'data-rendered-ms="' in dom, "the page's script did not finish"
    for name in ("Alice", "Acme", "Berlin", "Bob", "Hamburg", "Munich"):
        assert f">{name}</text>" in dom, name  # drawn in the graph
        assert f">{name}</b>" in dom, name  # and listed for the search
    # Alice, selected first: her clash is shown as a conflict, her superseded fact as old.
    assert '<div class="conflict"><b>clash </b>' in dom
    assert "Alice lives in Munich. (critic)" in dom
    assert '<div class="conflict"><b>contradiction </b>' in dom
    assert '<g class="node conflict on"' in dom
    assert "superseded: Alice lives in Berlin (by Hamburg)" in dom
    # A fact that begins later is set apart, not struck through as replaced.
    assert '<tr class="later"><td>chairs</td>' in dom
    assert "&lt;b&gt;x&lt;/b&gt;" in dom  # the note's markup shown as text, never run
    # A fact never held shows its end alone (its start was after it); the day its words
    # place an event is listed with when the memory learnt it (it showed when it was said).
    assert '<td>owns</td><td><span class="link">bike</span>' in dom
    assert '<td class="when">until 2026-02-10</td>' in dom
    learnt = re.search(r'happened: Alice lives in Hamburg</td><td class="when">([\d-]+)<', dom)
    assert learnt is not None and learnt[1] != "2026-03-10"
    # Related entities are set apart (spaces alone collapsed: "Acme Bob" read as one).
    assert '<span class="link">Acme</span><span class="muted"> · </span>' in dom

    # A link to one entity: the search box holds its name and the entity is shown.
    found = chromium("--dump-dom", page.as_uri() + "#munich", profile=tmp_path / "profile")
    munich = isolates_dropped(found.stdout)
    assert "<h2>Munich</h2>" in munich
    listed = re.findall(r'<li[^>]*data-i="\d+"[^>]*><b[^>]*>([^<]+)</b>', munich)
    assert listed == ["Munich", "Alice"]  # by its name, then by a fact (Alice lives in Munich)

    shot = tmp_path / "shot.png"
    chromium(
        f"--screenshot={shot}",
        f"--window-size={WIDTH},{HEIGHT}",
        page.as_uri(),
        profile=tmp_path / "profile",
    )
    # The top 300 rows: the header, the list, the graph's top and the conflicts' boxes.
    width, height, pixels = png_pixels(shot.read_bytes(), rows=300)
    assert (width, height) == (WIDTH, HEIGHT)
    colours = set(pixels)
    assert len(colours) > 50, "the screenshot is nearly blank"
    assert bytes(CONFLICT_RED) in colours, "no conflict drawn in red"


#: An organisation's name of 120 characters, one unbroken token of 60, and names that crowd
#: the graph: all tied to the first, the most mentioned (the entity shown when the page opens).
LONG_NAME = (
    "The International Consortium for the Advancement of Extremely Long Entity Names"
    " in Knowledge Graphs and Memory Servers Limited"
)[:120]
TOKEN = "Supercalifragilistic" * 3
CROWD = [
    "Zoë Ångström-Müller of the Northern Research Institute",
    "Αθηνά Παπαδοπούλου of the Athens Observatory of Long Names",
    "A second quite long entity name that should also be cut in the graph",
    "Another long-ish entity name for overlapping labels",
    "Yet another entity whose name runs on and on and on",
    "Alice",
    "Bob",
    *(f"Member {n} of the Working Group on Overlapping Labels" for n in range(1, 9)),
]
#: Run in the page after its own script: where the timeline, the list's counts and the graph's
#: labels ended up, written into the DOM for ``--dump-dom``.
MEASURE = """<script>
(function () {
  var vw = document.documentElement.clientWidth, out = {vw: vw, wide: [], hidden: [], labels: [],
    overlaps: [], outside: []};
  document.querySelectorAll("#side table, #side table *").forEach(function (x) {
    var r = x.getBoundingClientRect();
    if (r.left < -0.5 || r.right > vw + 0.5)
      out.wide.push(x.tagName + " " + x.textContent.slice(0, 30));
  });
  var side = document.getElementById("side"), list = document.getElementById("list");
  out.sideOverflow = side.scrollWidth - side.clientWidth;
  out.pageOverflow = document.documentElement.scrollWidth - vw;
  var box = list.getBoundingClientRect(), right = box.left + list.clientLeft + list.clientWidth;
  document.querySelectorAll("#list li[data-i]").forEach(function (li) {
    var n = li.querySelector("span").getBoundingClientRect();
    var b = li.querySelector("b").getBoundingClientRect();
    if (n.width < 1 || n.left < b.right - 0.5 || n.right > right + 0.5)
      out.hidden.push(li.title || li.textContent);
  });
  var svg = document.getElementById("svg").getBoundingClientRect();
  out.graph = svg.width;
  var shown = Array.prototype.filter.call(document.querySelectorAll("#svg text"), function (t) {
    return getComputedStyle(t).display !== "none";
  }).map(function (t) { return [t.textContent, t.getBoundingClientRect()]; });
  shown.forEach(function (a, n) {
    out.labels.push(a[0]);
    var r = a[1];
    if (r.left < svg.left - 0.5 || r.right > svg.right + 0.5 ||
        r.top < svg.top - 0.5 || r.bottom > svg.bottom + 0.5) out.outside.push(a[0]);
    shown.slice(n + 1).forEach(function (b) {
      var s = b[1], w = Math.min(r.right, s.right) - Math.max(r.left, s.left);
      var h = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
      if (w > 0.5 && h > 0.5) out.overlaps.push([a[0], b[0]]);
    });
  });
  document.body.setAttribute("data-measured", JSON.stringify(out));
})();
</script></body>"""


def fill_long_names(data_dir: Path) -> None:
    """Facts tying ``LONG_NAME`` to ``TOKEN`` and to each of ``CROWD``."""
    memory = Memory.open(hash_settings(data_dir).store)
    memory.warm_up()
    try:
        drafts = [
            MemoryDraft(
                text=f"{LONG_NAME} partners with {TOKEN}.",
                agent="scout",
                fact=FactDraft(LONG_NAME, "partner of", TOKEN),
            ),
            MemoryDraft(
                text=f"{TOKEN} met {LONG_NAME} again.",
                agent="scout",
                topics=[TOKEN, LONG_NAME],
            ),
        ]
        drafts += [
            MemoryDraft(
                text=f"{name} works with {LONG_NAME}.",
                agent="scout",
                fact=FactDraft(name, "works with", LONG_NAME),
            )
            for name in CROWD
        ]
        drafts += [
            MemoryDraft(text=f"{a} knows {b}.", agent="critic", fact=FactDraft(a, "knows", b))
            for a, b in zip(CROWD, [*CROWD[1:], TOKEN], strict=True)
        ]
        memory.remember(drafts, batch=True)
        assert memory.settle(timeout=30)
    finally:
        memory.close()


@needs_chromium
@pytest.mark.parametrize("width", [1280, 700])
def test_long_names_and_a_narrow_window_keep_the_page_on_screen(tmp_path: Path, width: int) -> None:
    """At 1280 and 700 px, measured in the page: the entity's tables fit the window, the list
    shows every count, the graph keeps its width and no two of its labels overlap."""
    data_dir, page = tmp_path / "m", tmp_path / "memory.html"
    fill_long_names(data_dir)
    assert (
        main(["view", "--embedder", "hash", "--data-dir", str(data_dir), "--out", str(page)]) == 0
    )
    html = page.read_text(encoding="utf-8")
    measuring = tmp_path / "measuring.html"
    measuring.write_text(html.replace("</body>", MEASURE), encoding="utf-8")
    dom = chromium(
        f"--window-size={width},900", "--dump-dom", measuring.as_uri(), profile=tmp_path / "p"
    ).stdout
    found = re.search(r'data-measured="([^"]*)"', dom)
    assert found, "the page's script or the measuring one did not finish"
    seen = json.loads(
        html_module.unescape(found.group(1)).replace("\u2068", "").replace("\u2069", "")
    )
    assert width - 20 <= seen["vw"] <= width  # less a scrollbar
    assert isolates_dropped(dom).count(f"<h2>{LONG_NAME}</h2>") == 1  # the long name shown first
    # The timeline's record times stay in the window: the table fits it, nothing scrolls sideways.
    assert "Timeline (valid time; recorded)" in dom and f"partner of {TOKEN}" in isolates_dropped(
        dom
    )
    assert seen["wide"] == [] and seen["sideOverflow"] <= 0 and seen["pageOverflow"] <= 0, seen
    # Every entity's count is shown, beside its name cut to fit (the whole name is its title).
    assert seen["hidden"] == [], seen["hidden"]
    assert re.search(f'title="\u2068{TOKEN}\u2069: \\d+ observations?"', dom)
    # The graph keeps its room (a narrow window puts it under the list, not beside it) and its
    # labels cover one another nowhere: long ones are cut, crowded ones moved or hidden.
    assert seen["graph"] >= min(600, seen["vw"] - 80), seen["graph"]
    assert len(seen["labels"]) >= 6, seen["labels"]
    assert seen["overlaps"] == [], seen["overlaps"]
    assert seen["outside"] == [], seen["outside"]
    assert any(label.endswith("…") for label in seen["labels"]), seen["labels"]


@needs_chromium
def test_a_page_of_no_entities_says_so_rather_than_that_a_search_found_none(
    tmp_path: Path,
) -> None:
    data_dir, page = tmp_path / "m", tmp_path / "memory.html"
    where = ["--embedder", "hash", "--data-dir", str(data_dir)]
    assert main(["remember", "A note about nothing in particular.", *where]) == 0
    record = '{"type": "Track", "fields": {"name": "Help"}}'
    assert main(["remember", "--record", record, *where]) == 0
    assert main(["view", *where, "--out", str(page)]) == 0
    dom = chromium("--dump-dom", page.as_uri(), profile=tmp_path / "profile").stdout
    assert 'data-rendered-ms="' in dom, "the page's script did not finish"
    # A memory of notes and records that name no entity is not empty (the page said it was,
    # under "2 observations" in its header).
    assert '<p class="muted">The memory is empty.</p>' not in dom
    assert (
        '<p class="muted">2 observations, no entity: none names a topic or states a fact'
        " (doxa recall --all lists them).</p>"
    ) in dom
    assert '<li class="more">no entities yet</li>' in dom  # it said "nothing matches"


@needs_chromium
def test_a_page_of_no_observations_says_the_memory_is_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, page = tmp_path / "m", tmp_path / "memory.html"
    where = ["--embedder", "hash", "--data-dir", str(data_dir)]
    assert main(["remember", "A note soon gone.", "--json", *where]) == 0
    said = json.loads(capsys.readouterr().out)
    assert main(["forget", said["observation_id"], "--mode", "purge", *where]) == 0
    assert main(["view", *where, "--out", str(page)]) == 0
    dom = chromium("--dump-dom", page.as_uri(), profile=tmp_path / "profile").stdout
    assert 'data-rendered-ms="' in dom, "the page's script did not finish"
    assert '<p class="muted">The memory is empty.</p>' in dom


def test_view_counts_what_it_drew_in_words_that_fit_the_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir, page = tmp_path / "m", tmp_path / "memory.html"
    where = ["--embedder", "hash", "--data-dir", str(data_dir)]
    assert main(["remember", "A note on Solo.", "--topic", "Solo", *where]) == 0
    capsys.readouterr()
    assert main(["view", *where, "--out", str(page)]) == 0
    assert "1 entity, 0 facts, 0 conflicts;" in capsys.readouterr().out  # "1 entities"


def test_view_to_a_dash_writes_the_page_to_standard_output_said_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # --out - wrote a file named "-" (export - writes to standard output).
    monkeypatch.chdir(tmp_path)
    where = ["--embedder", "hash", "--data-dir", str(tmp_path / "m")]
    assert main(["remember", "A note on Solo.", "--topic", "Solo", *where]) == 0
    capsys.readouterr()
    assert main(["view", *where, "--out", "-"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("<!doctype html>") and out.rstrip().endswith("</html>"), out[:80]
    assert err.startswith("wrote the page to standard output (")
    assert err.endswith(" KB): 1 entity, 0 facts, 0 conflicts\n"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_the_page_lists_entities_of_a_count_alphabetically_in_any_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Sorted as code points, "active" came after "Zoë" and "Bob".
    where = ["--embedder", "hash", "--data-dir", str(tmp_path / "m")]
    for topic in ("Zoë", "active", "Bob", "Émile"):
        assert main(["remember", f"A note on {topic}.", "--topic", topic, *where]) == 0
    assert main(["remember", "Bob again.", "--topic", "Bob", *where]) == 0
    capsys.readouterr()
    assert main(["view", *where, "--out", "-"]) == 0
    page = capsys.readouterr().out
    data = page.split('<script type="application/json" id="data">')[1].split("</script>")[0]
    assert [e[0] for e in json.loads(data)["e"]] == ["Bob", "active", "Zoë", "Émile"]


@needs_chromium
def test_a_cancelled_plans_timeline_on_the_page_is_as_about_tells_it(tmp_path: Path) -> None:
    """The Lisbon trip called off on 3 December: ``about`` shows one event, the plan
    superseded when the cancellation was told; the page showed the cancellation's own
    ``ended`` too (it held at no time), and the plan superseded at its own start."""
    memory = Memory.open(hash_settings(tmp_path / "m").store)
    memory.warm_up()
    trip = ("we", "trip to", "Lisbon")
    try:
        memory.remember(
            [
                MemoryDraft(
                    "We fly to Lisbon from 10 to 17 January.",
                    observed_at="2026-12-01T10:00:00Z",
                    fact=FactDraft(*trip, valid_from="2027-01-10", valid_until="2027-01-17"),
                )
            ]
        )
        memory.remember(
            [
                MemoryDraft(
                    "The Lisbon trip is cancelled.",
                    observed_at="2026-12-03T10:00:00Z",
                    fact=FactDraft(*trip, valid_until="2026-12-03T09:59:55Z"),
                )
            ]
        )
        told = [(e["event"], e["at"].isoformat()) for e in memory.about("we")["timeline"]]
        assert memory.settle(timeout=10)
    finally:
        memory.close()
    page = tmp_path / "memory.html"
    where = ["--embedder", "hash", "--data-dir", str(tmp_path / "m")]
    assert main(["view", *where, "--out", str(page)]) == 0
    shown = chromium("--dump-dom", page.as_uri() + "#we", profile=tmp_path / "profile").stdout
    rows = re.findall(
        r'<td class="when">([^<]*)</td><td>(\w+): we trip to Lisbon[^<]*</td>',
        isolates_dropped(shown),
    )
    assert told == [("superseded", "2026-12-03T10:00:00+00:00")]
    assert [(event, at) for at, event in rows if event != "happened"] == [
        ("superseded", "2026-12-03 10:00")
    ]


@needs_chromium
def test_a_clash_to_come_is_shown_with_where_it_begins(tmp_path: Path) -> None:
    """scout has Sam in Berlin; driver plans his move to Munich from 10 January 2999: the
    two disagree about January, listed now (``find_conflicts``), and the page says from
    when, in Sam's conflicts and in the list of all."""
    memory = Memory.open(hash_settings(tmp_path / "m").store)
    memory.warm_up()
    try:
        memory.remember(
            [
                MemoryDraft(
                    "Sam lives in Berlin.",
                    agent="scout",
                    fact=FactDraft("Sam", "lives in", "Berlin"),
                ),
                MemoryDraft(
                    "Sam moves to Munich.",
                    agent="driver",
                    fact=FactDraft("Sam", "lives in", "Munich", valid_from="2999-01-10"),
                ),
            ]
        )
        assert memory.settle(timeout=10)
    finally:
        memory.close()
    page = tmp_path / "memory.html"
    where = ["--embedder", "hash", "--data-dir", str(tmp_path / "m")]
    assert main(["view", *where, "--out", str(page)]) == 0
    shown = chromium("--dump-dom", page.as_uri() + "#sam", profile=tmp_path / "profile").stdout
    dom = isolates_dropped(shown)
    assert '<b>clash </b><span class="muted">from 2999-01-10</span>' in dom
    assert '<b>clash </b><span class="muted">from 2999-01-10 </span>' in dom


@pytest.mark.anyio
async def test_view_over_http_asks_for_the_token_and_comes_from_the_owning_server(
    tmp_path: Path, start_server: Callable[..., Awaitable[Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "m"
    fill(data_dir)
    server = await start_server("http", data_dir)
    url = f"http://127.0.0.1:{server.port}/view"
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=30) as http:
            open_page = await http.get(url)
            assert open_page.status_code == 200  # loopback and no token yet: as /mcp
            assert "default-src 'none'" in open_page.headers["content-security-policy"]
            assert '["Alice",' in open_page.text
            rebound = await http.get(url, headers={"Host": "evil.example:80"})
            assert rebound.status_code == 421  # DNS rebinding refused, as on /mcp

            _, secret = TokenStore(data_dir).create("viewer", read_only=True)
            refused = await http.get(url)
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"].startswith("Bearer")
            allowed = await http.get(url, headers={"Authorization": f"Bearer {secret}"})
            assert allowed.status_code == 200
            assert allowed.headers["content-type"].startswith("text/html")
            assert '["Munich",' in allowed.text and '"clash"' in allowed.text

    # The command while the server owns the directory: the picture comes from the server.
    page = tmp_path / "relayed.html"
    code = await anyio.to_thread.run_sync(
        main, ["view", "--embedder", "hash", "--data-dir", str(data_dir), "--out", str(page)]
    )
    assert code == 0
    assert "8 entities, 8 facts, 2 conflicts" in capsys.readouterr().out
    assert '["Alice",' in page.read_text(encoding="utf-8")
