"""BERT's WordPiece tokenizer in pure Python: the same token ids as Hugging Face ``tokenizers``.

The bundled model (all-MiniLM-L6-v2) tokenizes with a BertTokenizer, and the ``tokenizers``
package that runs it drags huggingface_hub, hf_xet, pyyaml, fsspec and filelock (about 38 MB)
into every install. This module reads the same ``tokenizer.json`` and repeats its steps:

1. special tokens written in the text (``[SEP]``, ``[MASK]``...) are split out first, as is;
2. the BertNormalizer: control characters dropped and whitespace made a space, CJK ideographs
   spaced apart, accents stripped (NFD, nonspacing marks dropped) and lowercase, each as the
   file says;
3. the BertPreTokenizer: split on whitespace, then every punctuation character (Unicode P*
   and ASCII symbols) becomes a word of its own;
4. greedy longest-match-first WordPiece with ``##`` continuations, ``[UNK]`` for a word with
   no split or longer than ``max_input_chars_per_word``;
5. ``[CLS] ... [SEP]``, truncated to the maximum length with room for both.

Anything else in a ``tokenizer.json`` (another model, normalizer or template, added tokens
that are normalised or strip spaces) is refused with ``UnsupportedTokenizer``, and the caller
uses ``tokenizers`` instead. tests/store/test_wordpiece.py compares the ids with
``tokenizers`` on every code point and a few thousand mixed texts.

Characters are classified as ``tokenizers`` classifies them (``doxa.store.bert_characters``),
not by Python's ``unicodedata``, whose newer Unicode would part ways on recent characters.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from doxa.store.bert_characters import (
    LOWERCASE,
    NFD_KEPT,
    NONSPACING_MARKS,
    OTHER,
    PUNCTUATION,
    WHITESPACE,
    contains,
)

#: The CJK ideograph blocks BERT spaces apart (``is_chinese_char`` in tokenizers).
_CJK = re.compile(
    "([\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f"
    "\U0002b740-\U0002b81f\U0002b920-\U0002ceaf\uf900-\ufaff\U0002f800-\U0002fa1f])"
)
#: ASCII control characters cleaning drops, and the whitespace it makes a space.
_ASCII_CLEAN = {
    **{c: None for c in [*range(0x20), 0x7F] if c not in (0x09, 0x0A, 0x0D)},
    0x09: " ",
    0x0A: " ",
    0x0D: " ",
}
_WHITESPACE = frozenset(chr(c) for first, last in WHITESPACE for c in range(first, last + 1))
_SPLIT = re.compile("[" + "".join(sorted(_WHITESPACE)) + "]+")
_NFD_KEPT_SPLIT = re.compile(f"([{NFD_KEPT}])")
_ASCII_WORD = re.compile(r"[!-/:-@\[-`{-~]|[^!-/:-@\[-`{-~ ]+")


class UnsupportedTokenizer(ValueError):
    """The ``tokenizer.json`` asks for something this tokenizer does not do."""


@functools.cache
def _clean_char(char: str) -> str:
    """One non-ASCII character after BERT's cleaning: dropped, a space, or itself.

    Control characters are dropped before whitespace is looked for, as in ``tokenizers``:
    U+0085 (a control character and whitespace) is dropped.
    """
    if contains(OTHER, char):
        return ""
    return " " if char in _WHITESPACE else char


@functools.cache
def _is_punctuation(char: str) -> bool:
    return contains(PUNCTUATION, char)


@functools.cache
def _lower(char: str) -> str:
    """Lowercase one character alone: Rust maps each character, without the final sigma."""
    return chr(LOWERCASE[ord(char)]) if ord(char) in LOWERCASE else char.lower()


class WordPieceTokenizer:
    """Token ids for a BERT model, read from its ``tokenizer.json``.

    Args:
        config: the parsed ``tokenizer.json``.
        max_length: the longest encoding, ``[CLS]`` and ``[SEP]`` included.

    Raises:
        UnsupportedTokenizer: the file describes a tokenizer other than BERT's WordPiece.
    """

    def __init__(self, config: dict[str, Any], max_length: int) -> None:
        model = config.get("model") or {}
        if model.get("type") != "WordPiece":
            raise UnsupportedTokenizer(f"model {model.get('type')!r} is not WordPiece")
        normalizer = config.get("normalizer") or {}
        if normalizer.get("type") != "BertNormalizer":
            raise UnsupportedTokenizer(f"normalizer {normalizer.get('type')!r} is not Bert's")
        pre_tokenizer = config.get("pre_tokenizer") or {}
        if pre_tokenizer.get("type") != "BertPreTokenizer":
            raise UnsupportedTokenizer(f"pre-tokenizer {pre_tokenizer.get('type')!r} is not Bert's")
        self.vocab: dict[str, int] = dict(model["vocab"])
        self.prefix = str(model.get("continuing_subword_prefix", "##"))
        self.max_word = int(model.get("max_input_chars_per_word", 100))
        self.unk_id = self.vocab[model["unk_token"]]
        self.clean_text = bool(normalizer.get("clean_text", True))
        self.spaced_cjk = bool(normalizer.get("handle_chinese_chars", True))
        self.lowercase = bool(normalizer.get("lowercase", True))
        strip = normalizer.get("strip_accents")
        self.strip_accents = self.lowercase if strip is None else bool(strip)
        self.cls_id, self.sep_id = _template_ids(config.get("post_processor") or {})
        if max_length < 2:
            raise UnsupportedTokenizer(f"max_length {max_length} leaves no room for a token")
        self.max_tokens = max_length - 2
        self.added = _added_tokens(config.get("added_tokens") or [])
        self._added_split = (
            re.compile(
                "(" + "|".join(re.escape(t) for t in sorted(self.added, key=len)[::-1]) + ")"
            )
            if self.added
            else None
        )
        # Words repeat across texts: a word's pieces are computed once.
        self.word_ids = functools.lru_cache(maxsize=65536)(self._word_ids)

    @classmethod
    def from_file(cls, path: Path, max_length: int) -> WordPieceTokenizer:
        """The tokenizer described by ``path`` (a ``tokenizer.json``).

        Raises:
            UnsupportedTokenizer: it is not BERT's WordPiece.
            OSError, ValueError: the file cannot be read or parsed.
        """
        config = json.loads(path.read_text(encoding="utf-8"))
        try:
            return cls(config, max_length)
        except (KeyError, TypeError, AttributeError, IndexError, StopIteration) as error:
            raise UnsupportedTokenizer(f"{path} is not laid out as BERT's: {error!r}") from error

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``: ``[CLS]``, its tokens (truncated), ``[SEP]``."""
        ids: list[int] = []
        if self._added_split is None:
            self._extend(ids, text)
        else:
            for i, part in enumerate(self._added_split.split(text)):
                if len(ids) >= self.max_tokens:
                    break  # the rest is truncated away
                if i % 2:
                    ids.append(self.added[part])
                elif part:
                    self._extend(ids, part)
        return [self.cls_id, *ids[: self.max_tokens], self.sep_id]

    def encode_batch(self, texts: Iterable[str]) -> list[list[int]]:
        """``encode`` of each text."""
        return [self.encode(text) for text in texts]

    def pre_tokenize(self, text: str) -> list[str]:
        """The words of ``text`` WordPiece splits: normalised, split on whitespace and
        punctuation (special tokens are not split out here)."""
        return [
            piece for word in self.words(self.normalize(text)) for piece in _split_punctuation(word)
        ]

    def _extend(self, ids: list[int], text: str) -> None:
        word_ids, limit = self.word_ids, self.max_tokens
        for word in self.words(self.normalize(text)):
            ids.extend(word_ids(word))
            if len(ids) >= limit:
                return  # the rest is truncated away

    def normalize(self, text: str) -> str:
        """``text`` after the BertNormalizer; with cleaning on, its only whitespace is spaces."""
        if text.isascii():
            if self.clean_text:
                text = text.translate(_ASCII_CLEAN)
            return text.lower() if self.lowercase else text
        if self.clean_text:
            text = "".join(map(_clean_char, text))
        if self.spaced_cjk:
            text = _CJK.sub(r" \1 ", text)
        if self.strip_accents:
            text = "".join(c for c in _nfd(text) if not _is_mark(c))
        if self.lowercase:
            text = "".join(map(_lower, text))
        return text

    def words(self, text: str) -> list[str]:
        """The whitespace-separated words of normalised ``text``."""
        if self.clean_text:
            return [word for word in text.split(" ") if word]
        return [word for word in _SPLIT.split(text) if word]

    def _word_ids(self, word: str) -> tuple[int, ...]:
        """The ids of a whitespace-free word: punctuation split apart, then WordPiece."""
        pieces = _split_punctuation(word)
        ids: list[int] = []
        for piece in pieces:
            ids.extend(self._wordpiece(piece))
        return tuple(ids)

    def _wordpiece(self, word: str) -> list[int]:
        """Greedy longest-match-first WordPiece; ``[UNK]`` if any part has no match."""
        if len(word) > self.max_word:
            return [self.unk_id]
        vocab = self.vocab
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while start < end:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                found = vocab.get(piece)
                if found is not None:
                    ids.append(found)
                    break
                end -= 1
            else:
                return [self.unk_id]
            start = end
        return ids


def _nfd(text: str) -> str:
    """``text`` in NFD, but for the characters ``tokenizers`` leaves whole (each a starter:
    nothing reorders across them)."""
    if not any(char in text for char in NFD_KEPT):
        return unicodedata.normalize("NFD", text)
    return "".join(
        part if part in NFD_KEPT else unicodedata.normalize("NFD", part)
        for part in _NFD_KEPT_SPLIT.split(text)
    )


def _split_punctuation(word: str) -> list[str]:
    """``word`` with each punctuation character split out as a word of its own."""
    if word.isascii():
        return _ASCII_WORD.findall(word)
    pieces = []
    start = 0
    for i, char in enumerate(word):
        if _is_punctuation(char):
            if start < i:
                pieces.append(word[start:i])
            pieces.append(char)
            start = i + 1
    if start < len(word):
        pieces.append(word[start:])
    return pieces


@functools.cache
def _is_mark(char: str) -> bool:
    return contains(NONSPACING_MARKS, char)


def _template_ids(processor: dict[str, Any]) -> tuple[int, int]:
    """The ids of the ``[CLS]`` and ``[SEP]`` a single sequence is wrapped in."""
    kind = processor.get("type")
    if kind == "BertProcessing":
        return int(processor["cls"][1]), int(processor["sep"][1])
    if kind != "TemplateProcessing":
        raise UnsupportedTokenizer(f"post-processor {kind!r} is not BERT's template")
    single = processor.get("single") or []
    names = [next(iter(step)) + ":" + str(step[next(iter(step))]["id"]) for step in single if step]
    if len(names) != 3 or names[1] != "Sequence:A" or not names[0].startswith("SpecialToken:"):
        raise UnsupportedTokenizer(f"template {names} is not [CLS] A [SEP]")
    if not names[2].startswith("SpecialToken:"):
        raise UnsupportedTokenizer(f"template {names} is not [CLS] A [SEP]")
    if any(step[next(iter(step))].get("type_id", 0) != 0 for step in single):
        raise UnsupportedTokenizer("the template gives a single text a type id other than 0")
    specials = processor["special_tokens"]
    first, last = single[0]["SpecialToken"]["id"], single[2]["SpecialToken"]["id"]
    if len(specials[first]["ids"]) != 1 or len(specials[last]["ids"]) != 1:
        raise UnsupportedTokenizer("a template token is more than one id")
    return int(specials[first]["ids"][0]), int(specials[last]["ids"][0])


def _added_tokens(tokens: list[dict[str, Any]]) -> dict[str, int]:
    """The added tokens split out of raw text, by content; refuses kinds this does not do."""
    added: dict[str, int] = {}
    for token in tokens:
        if token.get("normalized") or token.get("lstrip") or token.get("rstrip"):
            raise UnsupportedTokenizer(f"added token {token.get('content')!r} is normalised")
        if token.get("single_word"):
            raise UnsupportedTokenizer(f"added token {token.get('content')!r} is single-word")
        added[str(token["content"])] = int(token["id"])
    return added
