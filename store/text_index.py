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
        if _CASE_CHANGE.search(text):
            words += self._camel_parts(text)
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


class TextIndex:
    """An inverted index of the working memory's rows, scored with BM25."""

    def __init__(self) -> None:
        self.analyzer = Analyzer()
        # term -> rows holding it, and how often each holds it (parallel arrays).
        self._rows: dict[str, array.array[int]] = {}
        self._counts: dict[str, array.array[int]] = {}
        # Documents still searchable, per term (idf), and their total length (avgdl).
        self._frequency: Counter[str] = Counter()
        self._lengths = array.array("i")  # terms per row; -1: not searchable
        self._documents = 0
        self._total_length = 0

    def add(self, row: int, text: str) -> None:
        """Index ``text`` as row ``row`` (rows are added in order, from 0)."""
        terms = Counter(self.analyzer.terms(text))
        while len(self._lengths) <= row:
            self._lengths.append(-1)
        length = sum(terms.values())
        self._lengths[row] = length
        self._documents += 1
        self._total_length += length
        for term, count in terms.items():
            rows = self._rows.get(term)
            if rows is None:
                rows = self._rows[term] = array.array("q")
                self._counts[term] = array.array("i")
            rows.append(row)
            self._counts[term].append(count)
        self._frequency.update(terms.keys())

    def remove(self, row: int, text: str) -> None:
        """Stop finding row ``row`` (retracted or purged) and take it out of the statistics.

        Its postings stay and are skipped; ``text`` names the terms whose counts drop.
        """
        if row >= len(self._lengths) or self._lengths[row] < 0:
            return
        self._documents -= 1
        self._total_length -= self._lengths[row]
        self._lengths[row] = -1
        self._frequency.subtract(set(self.analyzer.terms(text)))

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
        found: list[npt.NDArray[np.int64]] = []
        scores: list[npt.NDArray[np.float64]] = []
        for term in terms:
            postings = self._rows.get(term)
            frequency = self._frequency.get(term, 0)
            if postings is None or frequency <= 0:
                continue
            rows = np.frombuffer(postings, dtype=np.int64)
            counts = np.frombuffer(self._counts[term], dtype=np.int32)
            keep = rows < n
            inside = rows[keep]
            keep[keep] = allowed[inside] & (lengths[inside] >= 0)  # removed rows: never
            rows, tf = rows[keep], counts[keep].astype(np.float64)
            if len(rows) == 0:
                continue
            idf = math.log(1.0 + (self._documents - frequency + 0.5) / (frequency + 0.5))
            norm = K1 * (1.0 - B + B * lengths[rows] / average)
            found.append(rows)
            scores.append(idf * tf * (K1 + 1.0) / (tf + norm))
        if not found:
            return []
        rows, score = np.concatenate(found), np.concatenate(scores)
        # Sum each row's terms: sort by row, then add up the runs.
        order = np.argsort(rows, kind="stable")
        rows, score = rows[order], score[order]
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        rows, score = rows[starts], np.add.reduceat(score, starts)
        if len(rows) > limit:
            top = np.argpartition(-score, limit - 1)[:limit]
            rows, score = rows[top], score[top]
        best = np.argsort(-score, kind="stable")
        return [(int(r), float(s)) for r, s in zip(rows[best], score[best], strict=True)]
