"""Full-text search over the working memory: BM25 on an in-process inverted index.

LanceDB's full-text index answered in 2.5-5 ms per query whatever the store's size (at
1,000 memories as at 100,000), more than the vector scan and the ranking together below
100k memories. This index lives next to the working memory's other arrays, is updated with
them (under the working memory's write lock), is searched by parallel recalls (under its read
lock), and answers in a fraction of a millisecond; it is rebuilt from the graph's texts at
start-up (about a second per 100k memories).

Text is analysed the way LanceDB's English full-text index did it (split on anything that is
not a letter or digit, lower-cased and folded to ASCII, English stop words removed, Snowball
(Porter2) stemming, so "remembered" finds "remember"), but tokens are dropped only over 64
characters, not 40, so a SHA-256 in hex is found, words joined by marks are a term of
their own too, so a path or a version is found whole (``_COMPOUND``), and a camelCase word's
parts are words too (``_CAMEL``).

A text longer than a passage (``PASSAGE_WORDS``) is indexed as overlapping passages, and a row
scores as its best passage: over a whole design document BM25's length normalisation made
four of a question's words in one of its sections count for less than one word in a short
note. Shorter texts, every chat turn among them, are one passage each. BM25's counts (how many
passages hold a term, their average length) are of passages.
"""

from __future__ import annotations

import array
import math
import re
import threading
import unicodedata
from collections import Counter

import numpy as np
import numpy.typing as npt

#: BM25 parameters (the usual ones, as Lucene and tantivy use them).
K1 = 1.2
B = 0.75
#: Longer tokens are dropped (a base64 blob is no word to search by); 64 keeps a SHA-256 in
#: hex, a git commit and a UUID's parts findable: at 40, a sha256 named in a query found
#: nothing by its words, and ranked below four notes that shared none.
MAX_TOKEN = 64
#: Words (split at white space) of a passage of a long text, and how far the next one starts:
#: passages overlap by a third, so a phrase cut by one is whole in the next.
PASSAGE_WORDS = 150
PASSAGE_STEP = 100

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
#: Words joined by marks into one name: a path, a version, a host, an identifier, a flag
#: ("src/store/graph.py", "v2.3.1", "api.example.com", "refresh_token", "--no-cache"). Each
#: is a term of its own too, beside its words: "src/store/graph.py" shares every word with
#: "tests/store/test_graph.py" and "src/api/graph.py", and a note naming it came fourth.
#: Words joined by hyphens alone ("self-care") are words, unless a digit is in them or a
#: hyphen before them (a flag).
_COMPOUND = re.compile(r"(-?)([^\W_]+(?:[./:_-][^\W_]+)+)", re.UNICODE)
_NAME_MARKS = re.compile(r"[./:_0-9]")
#: A word in camelCase or PascalCase ("PaymentRetryPolicy", "getUserProfile",
#: "XMLHttpRequest"): its parts are words too, beside it whole, as snake_case's are (split at
#: "_"): "payment retry policy" found no note naming PaymentRetryPolicy by its words, and
#: "parseInvoiceLine" none naming parse_invoice_line.
_CAMEL = re.compile(r"[A-Za-z0-9]*(?:[a-z0-9][A-Z]|[A-Z][A-Z][a-z])[A-Za-z0-9]*")
#: What only such a word holds: most texts hold none and are not read again for one.
_CASE_CHANGE = re.compile(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z]")
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
#: "to do" and "to-do" are the word "todo": "to" and "do" are stop words, so "what's still to
#: do?" found no note saying "TODO:" by its words.
_TO_DO = re.compile(r"\bto[\s-]?do\b")

#: The Snowball English stop-word list (plus the pieces contractions split into).
_STOP_WORDS_TEXT = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his
himself she her hers herself it its itself they them their theirs themselves what which
who whom this that these those am is are was were be been being have has had having do
does did doing would should could ought i'm you're he's she's it's we're they're i've
you've we've they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll
they'll isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't
wouldn't shan't shouldn't can't cannot couldn't mustn't let's that's who's what's here's
there's when's where's why's how's a an the and but if or because as until while of at by
for with about against between into through during before after above below to from up
down in out on off over under again further then once here there when where why how all
any both each few more most other some such no nor not only own same so than too very
s t m d ll re ve
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


class Analyzer:
    """Turns text into index terms (see the module docstring); stems are cached per word.
    Thread-safe: recalls analyse their queries in parallel."""

    def __init__(self) -> None:
        import Stemmer  # PyStemmer: the Snowball stemmers in C

        self._stemmer = Stemmer.Stemmer("english")
        self._stemming = threading.Lock()
        self._stems: dict[str, str] = {}

    def terms(self, text: str) -> list[str]:
        """The index terms of ``text``, in order, repeats kept."""
        folded = unicodedata.normalize("NFKD", text.casefold())
        plain = _TO_DO.sub("todo", folded.encode("ascii", "ignore").decode())
        words = [w for w in _TOKEN.findall(plain) if len(w) <= MAX_TOKEN and w not in STOP_WORDS]
        # Split as its plain letters: an accented one ended the word before it ("naïveBayes"
        # was "bay" alone, "getÜberMode" "ber" and "mode").
        cased = text
        if not text.isascii():
            cased = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
        if _CASE_CHANGE.search(cased):
            words += self._camel_parts(cased)
        names = [
            name
            for flag, name in _COMPOUND.findall(plain)
            if len(name) <= MAX_TOKEN and (flag or _NAME_MARKS.search(name))
        ]
        stems = self._stems
        if len(stems) > 500_000:  # a bounded cache: rare words are cheap to stem again
            # Replaced, not cleared: recalls running in parallel keep the dict they hold.
            self._stems = stems = {}
        unknown = [w for w in set(words) if w not in stems]
        if unknown:
            with self._stemming:  # a Snowball stemmer keeps state: one thread at a time
                stems.update(zip(unknown, self._stemmer.stemWords(unknown), strict=True))
        return [stems[w] for w in words] + names

    @staticmethod
    def _camel_parts(text: str) -> list[str]:
        """The parts of ``text``'s camelCase words, lower-cased, stop words left out."""
        return [
            part
            for camel in _CAMEL.findall(text)
            if len(camel) <= MAX_TOKEN
            for part in map(str.lower, _CAMEL_PART.findall(camel))
            if part not in STOP_WORDS
        ]


def passages(text: str) -> list[str]:
    """``text`` as the passages it is indexed by: itself when it holds at most
    ``PASSAGE_WORDS`` words, else windows of that many words, ``PASSAGE_STEP`` apart, the
    last one reaching the text's end."""
    words = text.split()
    if len(words) <= PASSAGE_WORDS:
        return [text]
    starts = list(range(0, len(words) - PASSAGE_WORDS, PASSAGE_STEP))
    starts.append(len(words) - PASSAGE_WORDS)
    return [" ".join(words[start : start + PASSAGE_WORDS]) for start in starts]


def passage_span(text: str, number: int, count: int) -> tuple[int, int] | None:
    """Where in ``text`` passage ``number`` of its ``count`` ``passages`` lies: (start, end)
    characters, from its first word's start to its last word's end; None if it has no such
    passage. Found by the regular expression engine, words skipped without a list of them:
    ``text.split()`` of ten texts of 30,000 characters took 20 ms a recall."""
    if count < 2 or not 0 <= number < count:
        return None
    if number < count - 1:
        start = re.compile(rf"\s*(?:\S+\s+){{{number * PASSAGE_STEP}}}").match(text)
        end = start and _PASSAGE.match(text, start.end())
        return None if not start or not end else (start.end(), end.end())
    # The last passage reaches the text's end: its words counted back from there.
    backwards = text[::-1]
    trailing = len(backwards) - len(backwards.lstrip())
    last = _PASSAGE.match(backwards, trailing)
    return None if last is None else (len(text) - last.end(), len(text) - trailing)


#: A passage's words from its first (``str.split``'s words: both split at what
#: ``str.isspace`` calls a space).
_PASSAGE = re.compile(rf"(?:\S+\s+){{{PASSAGE_WORDS - 1}}}\S+")


#: A source's term of digits alone counts by itself only from this many digits ("2606" of
#: "arxiv:2606.04321", a ticket's "4521"); a shorter one only beside a word of the same source
#: ("issue 12" of ".../issues/12"): a day of the month asked of ("on 16 November") is no
#: reference to the turn "D5:16" or to page 16.
_NUMBER_ALONE = 3


class SourceIndex:
    """The words of each row's ``source``, searched beside its text (``TextIndex``).

    A source is a short name (a URL, a person, a file, "email"), so its terms are scored as
    BM25 gives a term found once in a document of average length: its idf over the text
    index's passages, as a text word's (a source many rows share weighs little; a long text
    counts once per passage there). Kept apart from the text so a source's words
    neither lengthen the text's passages nor count once per passage.
    """

    def __init__(self, analyzer: Analyzer) -> None:
        self._analyzer = analyzer
        self._rows: dict[str, array.array[int]] = {}  # term -> rows whose source holds it
        self._frequency: Counter[str] = Counter()  # term -> searchable rows holding it
        self._held: dict[int, tuple[str, ...]] = {}  # row -> its source's terms (searchable)
        self._searchable = np.zeros(1024, dtype=bool)  # by row: in ``_held``

    def add(self, row: int, source: str) -> None:
        """Index ``source`` as row ``row``'s."""
        terms = tuple(dict.fromkeys(self._analyzer.terms(source)))
        if not terms:
            return
        self._held[row] = terms
        if row >= len(self._searchable):
            grown = np.zeros(max(2 * len(self._searchable), row + 1), dtype=bool)
            grown[: len(self._searchable)] = self._searchable
            self._searchable = grown
        self._searchable[row] = True
        for term in terms:
            rows = self._rows.get(term)
            if rows is None:
                rows = self._rows[term] = array.array("q")
            rows.append(row)
        self._frequency.update(terms)

    def remove(self, row: int) -> None:
        """Stop finding row ``row`` by its source (its postings stay and are skipped)."""
        terms = self._held.pop(row, None)
        if terms is not None:
            self._searchable[row] = False
            self._frequency.subtract(terms)

    def scores(
        self, terms: set[str], documents: int, allowed: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.float64] | None:
        """By row (as ``allowed``), the sum of the idf over ``documents`` passages of the
        ``terms`` its source holds (0: none, or a short number alone: ``_NUMBER_ALONE``);
        None when no source holds any."""
        n = len(allowed)
        # Dense, not sorted runs: a source many rows share ("email") would sort them all.
        score: npt.NDArray[np.float64] | None = None
        numbers: list[npt.NDArray[np.int64]] = []  # rows found by a short number alone, so far
        worded: list[npt.NDArray[np.int64]] = []
        searchable = self._searchable
        for term in terms:
            postings = self._rows.get(term)
            frequency = self._frequency.get(term, 0)
            if postings is None or frequency <= 0:
                continue
            rows = np.frombuffer(postings, dtype=np.int64)
            if int(rows[-1]) >= n:
                rows = rows[rows < n]
            rows = rows[allowed[rows] & searchable[rows]]
            if len(rows) == 0:
                continue
            if score is None:
                score = np.zeros(n)
            # A row holds each of its source's terms once: no repeats within ``rows``.
            score[rows] += math.log(1.0 + (documents - frequency + 0.5) / (frequency + 0.5))
            (worded if not term.isdigit() or len(term) >= _NUMBER_ALONE else numbers).append(rows)
        if score is not None and numbers:
            alone = np.zeros(n, dtype=bool)
            alone[np.concatenate(numbers)] = True
            if worded:
                alone[np.concatenate(worded)] = False
            score[alone] = 0.0
        return score


class TextIndex:
    """An inverted index of the working memory's rows, scored with BM25 per passage (a
    row's text is one passage unless it is long: ``passages``), and by its source's words
    (``SourceIndex``)."""

    def __init__(self) -> None:
        self.analyzer = Analyzer()
        self._sources = SourceIndex(self.analyzer)
        # term -> passages holding it, and how often each holds it (parallel arrays).
        self._rows: dict[str, array.array[int]] = {}
        self._counts: dict[str, array.array[int]] = {}
        # Passages still searchable, per term (idf), and their total length (avgdl).
        self._frequency: Counter[str] = Counter()
        self._lengths = array.array("i")  # terms per passage; -1: not searchable
        self._row_of = array.array("q")  # the row of each passage
        self._first = array.array("q")  # each row's first passage (-1: none indexed)
        self._documents = 0
        self._total_length = 0

    def add(self, row: int, text: str, source: str | None = None) -> None:
        """Index ``text`` as row ``row`` (rows are added in order, from 0), and its
        ``source``: "what did arxiv 2606.04321 say?" names where a note came from, not what
        it says."""
        while len(self._first) <= row:
            self._first.append(-1)
        self._first[row] = len(self._lengths)
        for passage in passages(text):
            self._add_passage(row, Counter(self.analyzer.terms(passage)))
        if source:
            self._sources.add(row, source)

    def _add_passage(self, row: int, terms: Counter[str]) -> None:
        unit = len(self._lengths)
        length = sum(terms.values())
        self._lengths.append(length)
        self._row_of.append(row)
        self._documents += 1
        self._total_length += length
        for term, count in terms.items():
            units = self._rows.get(term)
            if units is None:
                units = self._rows[term] = array.array("q")
                self._counts[term] = array.array("i")
            units.append(unit)
            self._counts[term].append(count)
        self._frequency.update(terms.keys())

    def remove(self, row: int, text: str) -> None:
        """Stop finding row ``row`` (retracted or purged) and take it out of the statistics.

        Its postings stay and are skipped; ``text`` names the terms whose counts drop.
        """
        if row >= len(self._first) or self._first[row] < 0:
            return
        self._sources.remove(row)
        first = self._first[row]
        self._first[row] = -1
        for unit, passage in enumerate(passages(text), start=first):
            if unit >= len(self._lengths) or self._lengths[unit] < 0:
                continue
            self._documents -= 1
            self._total_length -= self._lengths[unit]
            self._lengths[unit] = -1
            self._frequency.subtract(set(self.analyzer.terms(passage)))

    def passage_scores(self, row: int, query: str, count: int) -> npt.NDArray[np.float64]:
        """BM25 score for ``query`` of each of the ``count`` passages of row ``row``, in
        order (as ``search`` scores them; zeros for a row not indexed)."""
        out = np.zeros(count, dtype=np.float64)
        if row >= len(self._first) or self._first[row] < 0 or self._documents <= 0:
            return out
        first = self._first[row]
        average = max(self._total_length / self._documents, 1e-9)
        lengths = np.frombuffer(self._lengths, dtype=np.int32)
        for term in set(self.analyzer.terms(query)):
            postings = self._rows.get(term)
            frequency = self._frequency.get(term, 0)
            if postings is None or frequency <= 0:
                continue
            # Passages are numbered as they are added, so a term's postings are in order.
            units = np.frombuffer(postings, dtype=np.int64)
            low, high = np.searchsorted(units, [first, first + count])
            if low == high:
                continue
            units = units[low:high]
            tf = np.frombuffer(self._counts[term], dtype=np.int32)[low:high].astype(np.float64)
            out[units - first] += self._bm25(frequency, tf, lengths[units], average)
        return out

    def _bm25(
        self,
        frequency: int,
        tf: npt.NDArray[np.float64],
        lengths: npt.NDArray[np.int32],
        average: float,
    ) -> npt.NDArray[np.float64]:
        """One term's BM25 score in passages of these ``lengths`` holding it ``tf`` times,
        the term in ``frequency`` passages of the index."""
        idf = math.log(1.0 + (self._documents - frequency + 0.5) / (frequency + 0.5))
        norm = K1 * (1.0 - B + B * lengths / average)
        result: npt.NDArray[np.float64] = idf * tf * (K1 + 1.0) / (tf + norm)
        return result

    def search(
        self, query: str, limit: int, allowed: npt.NDArray[np.bool_]
    ) -> list[tuple[int, float]]:
        """The best ``limit`` rows among ``allowed`` for ``query``: (row, BM25 score)."""
        terms = set(self.analyzer.terms(query))
        n = len(allowed)
        if not terms or limit <= 0 or self._documents <= 0 or n == 0:
            return []
        average = max(self._total_length / self._documents, 1e-9)
        lengths = np.frombuffer(self._lengths, dtype=np.int32)
        row_of = np.frombuffer(self._row_of, dtype=np.int64)
        found: list[npt.NDArray[np.int64]] = []
        scores: list[npt.NDArray[np.float64]] = []
        for term in terms:
            postings = self._rows.get(term)
            frequency = self._frequency.get(term, 0)
            if postings is None or frequency <= 0:
                continue
            units = np.frombuffer(postings, dtype=np.int64)
            counts = np.frombuffer(self._counts[term], dtype=np.int32)
            rows = row_of[units]
            keep = rows < n
            keep[keep] = allowed[rows[keep]] & (lengths[units[keep]] >= 0)  # removed: never
            units, tf = units[keep], counts[keep].astype(np.float64)
            if len(units) == 0:
                continue
            found.append(units)
            scores.append(self._bm25(frequency, tf, lengths[units], average))
        named = self._sources.scores(terms, self._documents, allowed)
        rows, score = np.zeros(0, np.int64), np.zeros(0, np.float64)
        if found:
            units, text_score = np.concatenate(found), np.concatenate(scores)
            # Sum each passage's terms: sort by passage, then add up the runs.
            order = np.argsort(units, kind="stable")
            units, text_score = units[order], text_score[order]
            starts = np.flatnonzero(np.r_[True, units[1:] != units[:-1]])
            units, text_score = units[starts], np.add.reduceat(text_score, starts)
            text_rows = row_of[units]
            if len(text_rows) > 1 and bool(np.any(text_rows[1:] == text_rows[:-1])):
                # A long text's passages: the row scores as its best one (passages of a row
                # are numbered in a run, so they sort together).
                starts = np.flatnonzero(np.r_[True, text_rows[1:] != text_rows[:-1]])
                text_rows = text_rows[starts]
                text_score = np.maximum.reduceat(text_score, starts)
            if named is None:
                rows, score = text_rows, text_score
            else:
                named[text_rows] += text_score  # a row's source adds to its best passage
        if named is not None:
            rows = np.flatnonzero(named)
            score = named[rows]
        if len(rows) == 0:
            return []
        if len(rows) > limit:
            top = np.argpartition(-score, limit - 1)[:limit]
            rows, score = rows[top], score[top]
        best = np.argsort(-score, kind="stable")
        return [(int(r), float(s)) for r, s in zip(rows[best], score[best], strict=True)]
