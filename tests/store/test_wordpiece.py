"""The pure-Python WordPiece tokenizer gives the bundled model exactly the ids Hugging Face
``tokenizers`` gives it: on every code point, on every string literal of the tests and
benchmarks, on LoCoMo's turns when the data set is at hand, and on a few thousand generated
texts mixing scripts, accents, emoji, control characters, long words, URLs and overlong texts."""

from __future__ import annotations

import ast
import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest

from doxa.store import bert_characters
from doxa.store.embedder import bundled_model_path
from doxa.store.onnx_embedder import HubTokenizer, load_tokenizer
from doxa.store.wordpiece import UnsupportedTokenizer, WordPieceTokenizer

REPO = Path(__file__).resolve().parents[2]
LOCOMO = REPO.parent / "shared" / "bench" / "locomo" / "locomo-dev.json"
#: The length OnnxModel truncates to: the bundled model's max_seq_length.
MAX_LENGTH = 256


@pytest.fixture(scope="module")
def tokenizer_file() -> Path:
    return bundled_model_path() / "tokenizer.json"


@pytest.fixture(scope="module")
def wordpiece(tokenizer_file: Path) -> WordPieceTokenizer:
    return WordPieceTokenizer.from_file(tokenizer_file, MAX_LENGTH)


@pytest.fixture(scope="module")
def hub(tokenizer_file: Path) -> Any:
    tokenizers = pytest.importorskip(
        "tokenizers", reason="tokenizers (the torch extra) is the reference compared with"
    )
    tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_LENGTH)
    return tokenizer


def assert_same_ids(hub: Any, wordpiece: WordPieceTokenizer, texts: list[str]) -> None:
    expected = [encoding.ids for encoding in hub.encode_batch(texts)]
    got = wordpiece.encode_batch(texts)
    differing = [(text, e, g) for text, e, g in zip(texts, expected, got, strict=True) if e != g]
    assert not differing, f"{len(differing)} of {len(texts)} differ, first: {differing[0]!r}"


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("Hello, World!", [101, 7592, 1010, 2088, 999, 102]),
        ("Café naïve Über", [101, 7668, 15743, 19169, 102]),  # accents stripped, lowercase
        ("unaffable", [101, 14477, 20961, 3468, 102]),  # una ##ffa ##ble
        ("中文 ok", [101, 1746, 1861, 7929, 102]),  # each ideograph a word
        ("a[SEP]b [mask]", [101, 1037, 102, 1038, 1031, 7308, 1033, 102]),  # only exact specials
        ("x" * 101, [101, 100, 102]),  # over max_input_chars_per_word: [UNK]
        ("tab\there\x00\x07done", [101, 21628, 2182, 5280, 2063, 102]),  # controls dropped
        ("🙂", [101, 100, 102]),
        ("", [101, 102]),
    ],
)
def test_known_texts_get_known_ids(
    wordpiece: WordPieceTokenizer, text: str, ids: list[int]
) -> None:
    assert wordpiece.encode(text) == ids


def test_long_texts_are_truncated_to_the_model_length(wordpiece: WordPieceTokenizer) -> None:
    ids = wordpiece.encode("word " * 1000)
    assert len(ids) == MAX_LENGTH
    assert ids[0] == 101 and ids[-1] == 102 and set(ids[1:-1]) == {2773}


@pytest.mark.slow
def test_every_code_point_is_normalised_and_split_as_tokenizers_does(
    hub: Any, wordpiece: WordPieceTokenizer
) -> None:
    # One text holding every code point between letters: the normaliser and pre-tokenizer of
    # tokenizers against ours, the character tables of bert_characters included.
    surrogates = range(0xD800, 0xE000)
    text = "".join(f"a{chr(c)}b " for c in range(0x110000) if c not in surrogates)
    expected = [
        word for word, _ in hub.pre_tokenizer.pre_tokenize_str(hub.normalizer.normalize_str(text))
    ]
    assert wordpiece.pre_tokenize(text) == expected
    upper = "".join(f"Q{chr(c)}{chr(c)}Z " for c in range(0x110000) if c not in surrogates)
    expected = [
        word for word, _ in hub.pre_tokenizer.pre_tokenize_str(hub.normalizer.normalize_str(upper))
    ]
    assert wordpiece.pre_tokenize(upper) == expected


def test_every_vocabulary_entry_gets_the_ids_tokenizers_gives(
    hub: Any, wordpiece: WordPieceTokenizer
) -> None:
    entries = list(wordpiece.vocab)
    texts = [entry for entry in entries] + [f"x{entry}y {entry.upper()}" for entry in entries]
    assert_same_ids(hub, wordpiece, texts)


def test_the_string_literals_of_tests_and_benchmarks_get_the_ids_tokenizers_gives(
    hub: Any, wordpiece: WordPieceTokenizer
) -> None:
    texts = sorted(
        {
            node.value
            for path in [*REPO.glob("tests/**/*.py"), *REPO.glob("bench/*.py")]
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            # tokenizers takes no lone surrogate (ours drops it, as cleaning drops Cs)
            and not any("\ud800" <= char <= "\udfff" for char in node.value)
        }
    )
    assert len(texts) > 1000
    assert_same_ids(hub, wordpiece, texts)


def test_locomo_turns_get_the_ids_tokenizers_gives(hub: Any, wordpiece: WordPieceTokenizer) -> None:
    if not LOCOMO.is_file():
        pytest.skip(f"the LoCoMo data set is not at {LOCOMO}")
    texts: list[str] = []
    for conversation in json.loads(LOCOMO.read_text(encoding="utf-8")):
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                texts += [f"{turn['speaker']}: {turn['text']}" for turn in session]
        texts += [str(qa.get("question", "")) for qa in conversation.get("qa", [])]
    assert len(texts) > 1000
    assert_same_ids(hub, wordpiece, texts)


PIECES = [
    "the",
    "Quarterly",
    "budget",
    "MOVED",
    "naïve",
    "café",
    "señor",
    "Über",
    "Straße",
    "ÅNGSTRÖM",
    "İstanbul",
    "ΟΔΥΣΣΕΥΣ",
    "Москва",
    "東京",
    "中文字符",
    "한국어",
    "\uff26\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48",  # fullwidth
    "ﬁnance",
    "Ⅻ",
    "🙂",
    "👩‍💻",
    "🇫🇷",
    "🥲",
    "x²",
    "½",
    "3.14159",
    "1,000,000",
    "-42",
    "0x1F",
    "e=mc^2",
    "https://example.com/a/b?q=1&r=2#frag",
    "alice@example.org",
    "C:\\Users\\bob",
    "~/.cache",
    "don't",
    "it's",
    "«quoted»",
    "“smart”",
    "—",
    "…",
    "¿qué?",
    "¡sí!",
    "(a)",
    "[b]",
    "{c}",
    "[CLS]",
    "[SEP]",
    "[PAD]",
    "[UNK]",
    "[MASK]",
    "[mask]",
    "##ing",
    "##",
    "#hashtag",
    "@user",
    "\t",
    "\n",
    "\r\n",
    "\x00",
    "\x07",
    "\x1f",
    "\x7f",
    "\x85",
    "\u200b",
    "\ufeff",
    "\ufffd",
    "\u00a0",
    "\u3000",
    "\u2028",
    "e\u0301",
    "a\u0308\u0304",
    "\U0001d400",
    "\ue000",
    "supercalifragilisticexpialidocious",
    "pneumonoultramicroscopicsilicovolcanoconiosis",
]


def random_character(rng: random.Random) -> str:
    """ASCII, Latin to CJK, or anything up to the emoji, never a lone surrogate."""
    code = rng.choice(
        [rng.randint(0x20, 0x7E), rng.randint(0xA0, 0x2FFF), rng.randint(0x3000, 0x1FAFF)]
    )
    return chr(code) if not 0xD800 <= code <= 0xDFFF else "\ufffd"


def generated_texts(count: int, seed: int = 13) -> list[str]:
    """Texts drawn from PIECES, random code points, long words and overlong runs."""
    rng = random.Random(seed)
    texts = []
    for i in range(count):
        parts: list[str] = []
        for _ in range(rng.randint(1, 40)):
            roll = rng.random()
            if roll < 0.55:
                parts.append(rng.choice(PIECES))
            elif roll < 0.7:
                parts.append("".join(random_character(rng) for _ in range(rng.randint(1, 8))))
            elif roll < 0.8:
                parts.append(
                    "".join(
                        rng.choice("abcdefghijklmnopqrstuvwxyzé")
                        for _ in range(rng.randint(90, 110))
                    )
                )
            elif roll < 0.9:
                parts.append(str(rng.randint(0, 10**12)))
            else:
                parts.append(rng.choice(PIECES) * rng.randint(2, 30))
        separator = rng.choice([" ", "", "  ", "\t", "\n", ", ", "-", "/"])
        text = separator.join(parts)
        if i % 50 == 0:
            text = " ".join([text] * 60)  # far past the 256 tokens
        texts.append(text)
    return texts


def test_generated_texts_get_the_ids_tokenizers_gives(
    hub: Any, wordpiece: WordPieceTokenizer
) -> None:
    assert_same_ids(hub, wordpiece, generated_texts(2000))


def test_other_tokenizers_are_refused_and_run_by_tokenizers(
    tokenizer_file: Path, tmp_path: Path
) -> None:
    config = json.loads(tokenizer_file.read_text(encoding="utf-8"))
    config["model"]["type"] = "BPE"
    other = tmp_path / "tokenizer.json"
    other.write_text(json.dumps(config))
    with pytest.raises(UnsupportedTokenizer, match="BPE"):
        WordPieceTokenizer.from_file(other, MAX_LENGTH)
    assert isinstance(load_tokenizer(tokenizer_file, MAX_LENGTH), WordPieceTokenizer)
    pytest.importorskip("tokenizers", reason="the fallback needs tokenizers (the torch extra)")
    hub = HubTokenizer(tokenizer_file, MAX_LENGTH)
    assert hub.encode_batch(["Hello, World!"]) == [[101, 7592, 1010, 2088, 999, 102]]
    config["model"]["type"] = "WordPiece"
    config["normalizer"] = {"type": "Lowercase"}
    other.write_text(json.dumps(config))
    assert isinstance(load_tokenizer(other, MAX_LENGTH), HubTokenizer)


def test_character_ranges_are_sorted_and_do_not_overlap() -> None:
    for ranges in (
        bert_characters.OTHER,
        bert_characters.WHITESPACE,
        bert_characters.PUNCTUATION,
        bert_characters.NONSPACING_MARKS,
    ):
        assert all(first <= last for first, last in ranges)
        assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))
    assert bert_characters.contains(bert_characters.PUNCTUATION, "!")
    assert not bert_characters.contains(bert_characters.PUNCTUATION, "a")
    assert bert_characters.contains(bert_characters.OTHER, "\x00")
    assert not bert_characters.contains(bert_characters.OTHER, "\t")
