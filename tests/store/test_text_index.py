"""Full-text search of the working memory: analysis (stems, stop words, folding), BM25
order, filters applied before the limit, and forgetting."""

from __future__ import annotations

import numpy as np

from doxa.store.text_index import TextIndex

TEXTS = [
    "The harbour master owns a red boat.",  # 0
    "Caroline remembered the support group meeting in May.",  # 1
    "The boat, the boat, the boat: everyone talks about the boat.",  # 2
    "A very long note about many unrelated things, with a boat mentioned once at the end.",  # 3
    "Café Olé serves crème brûlée.",  # 4
]


def index_of(texts: list[str]) -> TextIndex:
    index = TextIndex()
    for row, text in enumerate(texts):
        index.add(row, text)
    return index


def everything(n: int = len(TEXTS)) -> np.ndarray:
    return np.ones(n, dtype=bool)


def rows(found: list[tuple[int, float]]) -> list[int]:
    return [row for row, _ in found]


def test_words_match_by_stem_case_and_accents_not_by_stop_words() -> None:
    index = index_of(TEXTS)
    assert rows(index.search("Who REMEMBERS meetings?", 10, everything())) == [1]
    assert rows(index.search("cafe ole creme brulee", 10, everything())) == [4]
    assert index.search("the what is of", 10, everything()) == []
    assert index.analyzer.terms("I'm remembering the boats") == ["rememb", "boat"]


def test_a_checksum_is_a_word_and_a_blob_is_none() -> None:
    sha = "e2e495ec" * 8  # a SHA-256 in hex: 64 characters, one token
    blob = "QUJD" * 17
    index = index_of([f"Release 1.4.2 artifact sha256 is {sha}.", f"Attached: {blob}"])
    assert rows(index.search(sha, 10, everything(2))) == [0]
    assert index.analyzer.terms(blob) == []


def test_bm25_prefers_more_occurrences_and_shorter_texts() -> None:
    index = index_of(TEXTS)
    found = index.search("boat", 10, everything())
    assert rows(found) == [2, 0, 3]
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0


def test_a_rare_word_outweighs_a_common_one() -> None:
    index = index_of(TEXTS)
    # "harbour" is in one text, "boat" in three: the harbour text wins on "harbour boat".
    assert rows(index.search("harbour boat", 10, everything()))[0] == 0


def test_filters_apply_before_the_limit() -> None:
    index = index_of(TEXTS)
    allowed = everything()
    allowed[[0, 2]] = False
    assert rows(index.search("boat", 1, allowed)) == [3]
    assert rows(index.search("boat", 10, everything(2))) == [0]  # rows past the mask: none


def test_removed_rows_are_not_found_and_leave_the_statistics() -> None:
    index = index_of(TEXTS)
    index.remove(2, TEXTS[2])
    index.remove(2, TEXTS[2])  # twice: no effect
    assert 2 not in dict(index.search("harbour boat", 10, everything()))
    # Exactly as if the row had never been added: document count, lengths and frequencies.
    never = TextIndex()
    for row, text in enumerate(TEXTS):
        if row != 2:
            never.add(row, text)
    for query in ("harbour boat", "boat", "the long note about many things"):
        assert index.search(query, 10, everything()) == never.search(query, 10, everything())


def test_query_text_is_data() -> None:
    index = index_of(TEXTS)
    for hostile in ['boat" OR 1=1 --', "boat'); DROP TABLE x; --", "(boat) AND NOT", "*", ""]:
        found = index.search(hostile, 10, everything())
        assert set(rows(found)) <= {0, 2, 3}


def test_a_path_or_a_version_is_found_whole_before_notes_sharing_its_words() -> None:
    notes = [
        "tests/store/test_graph.py covers the graph store.",
        "src/store/graph_utils.py holds helpers for walking edges.",
        "The session cache bug lives in src/store/graph.py, in open_connection().",
        "src/api/graph.py exposes the GraphQL endpoint.",
        "Release v2.3.10 fixed the importer.",
        "Release v2.3.1 fixed the exporter.",
    ]
    index = index_of(notes)
    assert rows(index.search("what is in src/store/graph.py?", 10, everything(6)))[0] == 2
    assert rows(index.search("v2.3.1", 10, everything(6)))[0] == 5
    # Its words alone still find the others.
    assert set(rows(index.search("graph", 10, everything(6)))) == {0, 1, 2, 3}
    assert index.analyzer.terms("see api.example.com") == [
        "see",
        "api",
        "exampl",
        "com",
        "api.example.com",
    ]


def test_to_do_is_the_word_todo() -> None:
    # "to" and "do" are stop words: "what's still to do?" found no "TODO:" note by words.
    index = index_of(["TODO: add rate limiting to the login.", "The login is rate limited."])
    assert rows(index.search("what's still to do?", 10, everything(2))) == [0]
    assert index.analyzer.terms("my to-do list") == ["todo", "list"]
    assert index.analyzer.terms("a trip to Dover") == ["trip", "dover"]


def test_a_camel_case_word_is_found_by_its_parts_and_whole() -> None:
    # "payment retry policy" found no note naming PaymentRetryPolicy by its words, as
    # "parse invoice line" found parse_invoice_line; nor "parseInvoiceLine" that note.
    notes = [
        "PaymentRetryPolicy caps attempts at 7.",
        "Retry logic for emails lives in the mailer.",
        "The payment form validates card numbers.",
        "parse_invoice_line drops lines with a zero quantity.",
        "XMLHttpRequestWrapper swallows network errors.",
        "Get requests are cached by the CDN.",
    ]
    index = index_of(notes)
    assert rows(index.search("payment retry policy", 10, everything(6)))[0] == 0
    assert rows(index.search("RetryPolicy", 10, everything(6)))[0] == 0
    assert rows(index.search("PaymentRetryPolicy", 10, everything(6)))[0] == 0
    assert rows(index.search("parseInvoiceLine", 10, everything(6)))[0] == 3
    assert rows(index.search("xml http request wrapper", 10, everything(6)))[0] == 4
    assert index.analyzer.terms("getUserProfile in iOS") == [
        "getuserprofil",
        "io",
        "get",
        "user",
        "profil",
        "os",
    ]
    # A word in one case, or capitalised, is one word.
    assert index.analyzer.terms("HTTP Caroline") == ["http", "carolin"]


def _design_document() -> str:
    """A long document whose payments section (deep inside) answers one question."""
    filler = [
        f"Section {i}: the {topic} service keeps its state in the cluster and logs each"
        f" request with its latency, owner and region for later review by the team."
        for i, topic in enumerate(["search", "profile", "catalogue", "email", "report"] * 24)
    ]
    payments = (
        "Payments: calls to the payment gateway are retried with a retry budget of three"
        " attempts per minute, after which the gateway circuit opens."
    )
    return " ".join([*filler[:70], payments, *filler[70:]])


def test_a_long_document_is_found_by_words_of_one_of_its_sections() -> None:
    """Each short note holds one of the question's words; the document holds all of them in
    one passage. Scored whole, its length made its four words count for less than one."""
    document = _design_document()
    assert len(document.split()) > 3000
    notes = [
        "The payment was late.",
        "Gateway rebooted overnight.",
        "Retry later.",
        "Budget approved for Q3.",
        *(f"Standup {i}: nothing new." for i in range(12)),
    ]
    at = len(notes)
    index = index_of([*notes, document])
    found = index.search("payment gateway retry budget", 10, everything(at + 1))
    assert rows(found)[0] == at
    # Forgotten, none of its passages is found, and the statistics are those of the notes.
    index.remove(at, document)
    assert at not in rows(index.search("payment gateway retry budget", 10, everything(at + 1)))
    assert index.search("latency", 10, everything(at + 1)) == []
    alone = index_of(notes)
    assert index.search("retry", 10, everything(at + 1)) == alone.search(
        "retry", 10, everything(at)
    )


def test_a_camel_case_word_with_accents_is_split_as_its_plain_letters_are() -> None:
    # An accented letter ended the camelCase word before it: "naïveBayes" was "bay" alone
    # ("ve" a stop word), "ÉtatCivil" was "tat" and "civil", "getÜberMode" "ber" and "mode",
    # so "naive bayes" or "etat civil" did not find them by their words.
    terms = index_of(["x"]).analyzer.terms
    assert terms("naïveBayes") == terms("naiveBayes") == ["naivebay", "naiv", "bay"]
    assert terms("ÉtatCivil") == terms("EtatCivil") == ["etatcivil", "etat", "civil"]
    assert terms("getÜberMode") == ["getubermod", "get", "uber", "mode"]
    assert terms("readÜber") == ["readub", "read", "uber"]  # the accented capital alone


def test_a_source_is_found_by_its_words_beside_the_text() -> None:
    index = TextIndex()
    index.add(0, "Retrieval quality saturates beyond 10B parameters.", "arxiv:2501.01234")
    index.add(1, "Retrieval quality keeps improving up to 70B.", "arxiv:2606.04321")
    index.add(2, "We met for lunch.", None)
    assert rows(index.search("what did arxiv 2606.04321 say?", 10, everything(3)))[0] == 1
    assert rows(index.search("the paper 2606.04321", 10, everything(3))) == [1]
    # The text's words and its source's add up: both notes say "retrieval", one is cited.
    assert rows(index.search("retrieval in 2606.04321", 10, everything(3))) == [1, 0]


def test_a_short_number_of_a_source_counts_only_beside_its_words() -> None:
    index = TextIndex()
    index.add(0, "Caroline went hiking.", "D5:16")
    index.add(1, "We looked at issue twelve.", "https://github.com/doxa/doxa/issues/12")
    index.add(2, "Nothing here.", "page 2606")
    # "16 November" asks of a day, not of the turn D5:16 or of page 16.
    assert index.search("what happened on 16 November?", 10, everything(3)) == []
    assert index.search("d5 16", 10, everything(3))[0][0] == 0
    assert rows(index.search("what did issue 12 say", 10, everything(3))) == [1]
    assert index.search("12", 10, everything(3)) == []
    assert rows(index.search("2606", 10, everything(3))) == [2]


def test_a_source_many_rows_share_weighs_little_and_a_purged_row_is_not_found_by_it() -> None:
    index = TextIndex()
    for row in range(8):
        index.add(row, f"note {row} about the budget", "email")
    index.add(8, "the budget is due", "Dr. Patel")
    shared = dict(index.search("email", 10, everything(9)))
    named = dict(index.search("patel", 10, everything(9)))
    assert len(shared) == 8 and max(shared.values()) < named[8]
    index.remove(8, "the budget is due")
    assert index.search("patel", 10, everything(9)) == []
    # Filters apply to a source's rows as to a text's.
    allowed = everything(9)
    allowed[:4] = False
    assert sorted(rows(index.search("email", 10, allowed))) == [4, 5, 6, 7]
