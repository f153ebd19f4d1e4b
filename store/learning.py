"""What recall learns from judgements: decaying query-to-memory links, and a small model.

Every judged recall is a set of training examples: each judged result's *features* as recall
saw them (kept on its ``RETURNED`` edge) and its judgement (accepted: 1, rejected: 0). The
features are the ranking's components, the base score, and what earlier judgements say of the
result for this query, as continuous values (no similarity cut-off), so a paraphrase of a
judged query is helped as much as its similarity warrants:

- ``accept_close`` / ``accept_far`` / ``reject_close`` / ``reject_far``: the strongest link
  from a past judged query that accepted (rejected) the result: that query's cosine to this
  one, halved every ``half_life_days`` since the judgement; an accepted link is also halved
  every ``impression_half_life`` impressions the result has had since its last hit. Links
  from queries at least ``CLOSE`` alike (the same question, reworded) and from the others
  are separate features, so a linear model can weigh a rewording and a different question
  differently; a query less than ``RELATED`` alike makes no link;
- ``hit_rate`` (hits / (impressions + 1)), ``impressions`` and ``unrewarded`` (impressions
  since the last hit), both as log(1 + n).

The model is a logistic regression over the standardised features (Newton's method, a few
milliseconds for thousands of examples), whose weights keep the signs ``WEIGHT_SIGNS`` gives
(relevance and acceptances never count against a result, rejections never for it, and how
often a result was accepted and shown, ``POPULARITY``, is not weighed: kept for the export). Once
``min_judgements`` exist it is trained in the background (``trainer``), checked on held-out
judged recalls against the base score, and used only while it ranks significantly more of
them better than worse (a sign test) and orders at least ``min_ordering`` of their pairs right
(``train``); then a result's score is ``learned_share`` x the model's probability + the rest x
the base score scaled to the pool's best. It is kept as JSON in ``<data dir>/ranker.json``
with its version; a missing or damaged file means the base ranking (and a warning).
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from doxa.store.judged_queries import Judgements
from doxa.store.settings import LearningSettings

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float64]

#: The ranking components a feature vector holds (weighted, as recall's ``scores`` shows them).
COMPONENTS = (
    "vector",
    "text",
    "neighbourhood",
    "topic",
    "time",
    "dated",
    "fact",
    "field",
    "confidence",
    "feedback",
    "hit_rate",
)
#: What earlier judgements say of a result (see the module docstring).
SIGNALS = (
    "accept_close",
    "accept_far",
    "reject_close",
    "reject_far",
    "impressions",
    "unrewarded",
)
#: Cosine from which a judged query counts as the same question (a "close" link).
CLOSE = 0.85
#: Cosine below which a judged query is about something else: it makes no link.
RELATED = 0.2
#: Every feature, in the order the model takes them; ``base`` is the fused score.
FEATURES = (*COMPONENTS, "base", *SIGNALS)
#: What a result's judgements say whatever the question: how often it was accepted and shown.
#: Not weighed by the model (kept as features, for the export): they are the same for every
#: question, so a model that weighed them ranked what was accepted often above what a question
#: asks for. Trained where the same questions came back, one weighed ``hit_rate`` 1.95 and
#: relevance 0: 31 of 40 lookups of a support ticket by its own words lost it from the top
#: to notes often accepted for other questions. ``hit_rate`` stays in the base score, weighed
#: as cross-validation on LoCoMo chose.
POPULARITY = ("hit_rate", "impressions", "unrewarded")
#: The sign each feature's weight may take (0: none, held at 0: ``POPULARITY``). More
#: relevance, or an acceptance, never counts against a result, nor a rejection for it:
#: judgements biased by rank (an agent accepting from the top 40 but rejecting only in the
#: top 10) otherwise taught a model to prefer the least relevant, and its held-out check,
#: biased alike, passed it (new questions' R@10 0.84 -> 0.01 in bench/feedback.py --noise
#: --depth 40).
WEIGHT_SIGNS = tuple(
    -1.0 if name.startswith("reject_") else 0.0 if name in POPULARITY else 1.0 for name in FEATURES
)

MODEL_FILE = "ranker.json"
_MICROS_PER_DAY = 86_400 * 10**6


@dataclass(frozen=True)
class RankerModel:
    """A trained logistic regression over ``features`` (standardised by ``mean``/``scale``).

    ``active`` is whether it ranked the held-out judgements better than the base score when
    it was trained; an inactive model is kept only to say so (recall uses the base).
    """

    version: int
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    active: bool
    examples: int
    trained_at: str
    held_out: dict[str, float] = field(default_factory=dict)
    #: The fingerprint of the embedder whose recalls it learned from ("": not known, a model
    #: kept before models said so).
    embedder: str = ""

    def probability(self, x: FloatArray) -> FloatArray:
        """P(accepted) for each row of ``x`` (columns in ``features`` order)."""
        z = ((x - np.asarray(self.mean)) / np.asarray(self.scale)) @ np.asarray(self.coef)
        result: FloatArray = 1.0 / (1.0 + np.exp(-(z + self.intercept)))
        return result

    def as_json(self) -> dict[str, Any]:
        """The model as a JSON object."""
        return {
            "version": self.version,
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "coef": list(self.coef),
            "intercept": self.intercept,
            "active": self.active,
            "examples": self.examples,
            "trained_at": self.trained_at,
            "held_out": self.held_out,
            "embedder": self.embedder,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RankerModel:
        """Read a model written by ``as_json``.

        Raises:
            ValueError: a value is missing, of the wrong type, not finite, or the features
                are not this code's.
        """
        try:
            features = tuple(str(f) for f in data["features"])
            numbers = {k: tuple(float(v) for v in data[k]) for k in ("mean", "scale", "coef")}
            model = cls(
                version=_whole(data["version"], "version"),
                features=features,
                mean=numbers["mean"],
                scale=numbers["scale"],
                coef=numbers["coef"],
                intercept=float(data["intercept"]),
                active=_flag(data["active"], "active"),
                examples=_whole(data["examples"], "examples"),
                trained_at=str(data["trained_at"]),
                held_out=_held_out(data.get("held_out", {})),
                embedder=str(data.get("embedder", "")),
            )
        except (KeyError, TypeError, ValueError, OverflowError) as error:
            raise ValueError(f"not a ranker model: {error!r}") from None
        if features != FEATURES:
            raise ValueError(f"features {list(features)} are not this version's {list(FEATURES)}")
        values = [*model.mean, *model.scale, *model.coef, model.intercept]
        if any(len(v) != len(FEATURES) for v in (model.mean, model.scale, model.coef)):
            raise ValueError("mean, scale and coef must each hold one value per feature")
        if not all(math.isfinite(v) for v in values) or min(model.scale) <= 0:
            raise ValueError("a value is not finite, or a scale is not positive")
        return model


#: The held-out figures that count recalls, and those that are shares of pairs (0 to 1).
_HELD_OUT_COUNTS = ("recalls", "examples", "better", "worse")
_HELD_OUT_SHARES = ("blend", "base")
#: More recalls than ``training_recalls`` may ever hold out.
_MOST_RECALLS = 10_000_000


def _held_out(value: object) -> dict[str, float]:
    """A model's held-out figures as the file must hold them: counts whole and not negative
    (better and worse within the recalls held out, those within the judged results held out),
    shares from 0 to 1 (``1e400``, NaN or a million recalls of 68 judged results are damage:
    at start the sign test failed on them, every call with it)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"held_out must be an object, got {value!r}")
    figures = {str(k): float(v) for k, v in value.items()}
    for key, figure in figures.items():
        if not math.isfinite(figure) or figure < 0:
            raise ValueError(f"held_out.{key} must be a finite number, not negative")
    for key in _HELD_OUT_COUNTS:
        # Recalls are bounded by ``training_recalls``; their judged results are not.
        bound = math.inf if key == "examples" else _MOST_RECALLS
        if key in figures and (not figures[key].is_integer() or figures[key] > bound):
            raise ValueError(f"held_out.{key} must be a whole number, not beyond what is held")
    for key in _HELD_OUT_SHARES:
        if figures.get(key, 0) > 1:
            raise ValueError(f"held_out.{key} must be a share from 0 to 1")
    recalls = figures.get("recalls", math.inf)
    if figures.get("better", 0) + figures.get("worse", 0) > recalls:
        raise ValueError("held_out.better and worse must be within held_out.recalls")
    if recalls > figures.get("examples", math.inf):  # each held out with its judged results
        raise ValueError("held_out.recalls must be within held_out.examples")
    return figures


def _whole(value: object, key: str) -> int:
    """A count as the file must hold it: a JSON integer (``"3"``, ``1e400`` or ``true`` is
    damage, not a count)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{key} must be a whole number, got {value!r}")
    return value


def _flag(value: object, key: str) -> bool:
    """A flag as the file must hold it: JSON ``true`` or ``false`` (the text ``"false"`` is
    damage: read as Python reads it, it would mean true)."""
    if not isinstance(value, bool):
        raise ValueError(f"{key} must be true or false, got {value!r}")
    return value


def keeps_signs(model: RankerModel) -> bool:
    """Whether every weight of ``model`` has the sign ``WEIGHT_SIGNS`` allows it (0 where it
    allows none)."""
    return all(c * s > 0 or c == 0 for c, s in zip(model.coef, WEIGHT_SIGNS, strict=True))


def load_model(data_dir: Path) -> RankerModel | None:
    """The model kept in ``data_dir``, or None when there is none; a damaged one is logged
    as a warning and taken as none (recall uses the base ranking)."""
    path = data_dir / MODEL_FILE
    try:
        kept = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        log.warning("ranker model %s unreadable (%s): using the base ranking", path, error)
        return None
    try:
        return RankerModel.from_json(json.loads(kept))
    # json.JSONDecodeError and UnicodeDecodeError are ValueErrors; RecursionError: nested deep
    except (ValueError, RecursionError) as error:
        log.warning("ranker model %s is damaged (%s): using the base ranking", path, error)
        return None


def save_model(data_dir: Path, model: RankerModel) -> None:
    """Write the model to ``data_dir`` atomically (a crash leaves the old one or the new).

    Raises:
        OSError: it could not be written (nothing is left behind).
    """
    path = data_dir / MODEL_FILE
    partial = path.with_suffix(".json.partial")
    try:
        with open(partial, "w", encoding="utf-8") as out:
            json.dump(model.as_json(), out, indent=1)
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)
    except OSError:
        partial.unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Learned:
    """What one recall needs of learning: the model (None: base ranking), the time, and the
    decay settings."""

    model: RankerModel | None
    now: int
    settings: LearningSettings


@dataclass(frozen=True)
class Links:
    """One kind of judged link: the rows linked (ascending, each once) and each row's
    strongest link."""

    rows: npt.NDArray[np.int64]
    strength: FloatArray

    def at(self, rows: npt.NDArray[np.int64]) -> FloatArray:
        """The strength of each of ``rows`` (0 where none)."""
        found: FloatArray = np.zeros(len(rows), dtype=np.float64)
        if len(self.rows) == 0:
            return found
        place = np.minimum(np.searchsorted(self.rows, rows), len(self.rows) - 1)
        hit = self.rows[place] == rows
        found[hit] = self.strength[place[hit]]
        return found


NO_LINKS = Links(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


def judged_links(judged: Judgements, now: int, settings: LearningSettings) -> dict[str, Links]:
    """The strongest decayed link per row, by kind ("accept_close", "accept_far",
    "reject_close", "reject_far"): row -> max of cosine x 0.5 ** (age / half-life)."""
    links = dict.fromkeys(SIGNALS[:4], NO_LINKS)
    if len(judged.rows) == 0:
        return links
    # Per query first: its likeness and its decay hold for every result judged on it.
    age = np.maximum(now - judged.judged_at, 0) / (settings.half_life_days * _MICROS_PER_DAY)
    related = judged.similarity >= RELATED
    lent = np.where(related, judged.similarity * np.power(0.5, age), 0.0)
    rows, signs, of = judged.on(lent > 0)  # a link decayed to nothing is none
    strength = lent[of]
    accepted, close = signs > 0, (judged.similarity >= CLOSE)[of]
    # In numpy, and kept as arrays: every recall computes this over all the judgements (a
    # soak's 36,000 made it a third of each recall's time; dicts of the rows, 1,000 judged
    # recalls of ten results, 1.6 ms of a 4.3 ms recall).
    for kind, chosen in (
        ("accept_close", accepted & close),
        ("accept_far", accepted & ~close),
        ("reject_close", ~accepted & close),
        ("reject_far", ~accepted & ~close),
    ):
        linked_rows = rows[chosen]
        if len(linked_rows) == 0:
            continue
        # The strongest per row, in a scratch array as long as the rows: 40 times faster
        # than sorting 10,000 judgements (every strength is > 0, so 0 means "no link").
        strongest = np.zeros(int(linked_rows.max()) + 1, dtype=np.float64)
        np.maximum.at(strongest, linked_rows, strength[chosen])
        linked = np.flatnonzero(strongest)
        links[kind] = Links(linked, strongest[linked])
    return links


def impression_decay(unrewarded: FloatArray, settings: LearningSettings) -> FloatArray:
    """How much an accepted link still counts after this many impressions without a hit."""
    decay: FloatArray = np.power(0.5, unrewarded / settings.impression_half_life)
    return decay


def feature_matrix(
    components: Mapping[str, npt.NDArray[np.float32]],
    base: npt.NDArray[np.float32],
    signals: Mapping[str, FloatArray],
    n: int,
) -> FloatArray:
    """One row of ``FEATURES`` per candidate (a component the recall had not: 0)."""
    x = np.zeros((n, len(FEATURES)), dtype=np.float64)
    for j, name in enumerate(FEATURES):
        if name == "base":
            x[:, j] = base
        elif name in components:
            x[:, j] = components[name]
        elif name in signals:
            x[:, j] = signals[name]
    return x


def features_text(x: FloatArray) -> str:
    """A feature vector as the JSON object kept on its ``RETURNED`` edge."""
    return json.dumps({name: round(float(v), 6) for name, v in zip(FEATURES, x, strict=True) if v})


def features_of(text: str | None) -> FloatArray | None:
    """A stored feature vector back (None: the recall kept none, or it is unreadable)."""
    if not text:
        return None
    try:
        values = json.loads(text)
        return np.array([float(values.get(name, 0.0)) for name in FEATURES])
    except (ValueError, TypeError, AttributeError):
        return None


def blended(model: RankerModel, x: FloatArray, base: FloatArray, share: float) -> FloatArray:
    """``share`` x P(accepted) + (1 - ``share``) x base scaled by the pool's largest."""
    top = float(np.max(np.abs(base))) if len(base) else 0.0
    scaled = base / top if top > 0 else base
    result: FloatArray = share * model.probability(x) + (1.0 - share) * scaled
    return result


# ---- training ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One judged result: its recall, features and judgement (1 accepted, 0 rejected)."""

    recall_id: str
    features: FloatArray
    accepted: bool


def fit(
    x: FloatArray, y: FloatArray, l2: float, signs: Sequence[float] | None = None
) -> tuple[FloatArray, FloatArray, FloatArray, float]:
    """Logistic regression by Newton's method: (mean, scale, coef, intercept).

    ``signs`` (one per column; +1 at least 0, -1 at most 0, 0 held at 0; None: any)
    constrains the weights: the column whose weight is furthest out of its sign is held at 0
    and the rest refitted, until every weight keeps its sign (an active set, one column a
    round).
    """
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    wanted = np.zeros(x.shape[1]) if signs is None else np.asarray(signs, dtype=np.float64)
    free = np.ones(z.shape[1], dtype=bool)
    if signs is not None:
        free[:-1] = wanted != 0
    while True:
        w = np.zeros(z.shape[1])
        w[free] = _newton(z[:, free], y, l2)
        against = w[:-1] * wanted
        if against.min(initial=0.0) >= 0:
            return mean, scale, w[:-1], float(w[-1])
        free[int(np.argmin(against))] = False


def _newton(z: FloatArray, y: FloatArray, l2: float) -> FloatArray:
    """The weights of a logistic regression on ``z`` (its last column the intercept's)."""
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0  # the intercept is not shrunk
    for _ in range(30):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty * w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return w


def ordering_quality(examples: Sequence[Example], scores: FloatArray) -> float:
    """Within each recall, the share of (accepted, rejected) pairs the scores order right
    (ties count half), over all recalls' pairs together; 0.5 when there are no pairs."""
    right = total = 0.0
    for good, bad in _pairs_by_recall(examples, scores):
        right += _ordered_right(good, bad)
        total += len(good) * len(bad)
    return right / total if total else 0.5


def _ordered_right(good: list[float], bad: list[float]) -> float:
    """(accepted, rejected) pairs scored in the right order; ties count half."""
    return sum(1.0 if g > b else 0.5 if g == b else 0.0 for g in good for b in bad)


def _pairs_by_recall(
    examples: Sequence[Example], scores: FloatArray
) -> list[tuple[list[float], list[float]]]:
    """Per recall with both judgements: (scores of accepted, scores of rejected)."""
    by_recall: dict[str, list[int]] = {}
    for i, example in enumerate(examples):
        by_recall.setdefault(example.recall_id, []).append(i)
    pairs = []
    for members in by_recall.values():
        good = [float(scores[i]) for i in members if examples[i].accepted]
        bad = [float(scores[i]) for i in members if not examples[i].accepted]
        if good and bad:
            pairs.append((good, bad))
    return pairs


def better_than_base(
    examples: Sequence[Example], base: FloatArray, blend: FloatArray, p_value: float
) -> tuple[bool, int, int]:
    """Whether the blend orders the held-out recalls better than the base score, by a sign
    test over recalls: (better, recalls it orders better, recalls it orders worse).

    Better means more recalls improved than worsened, with the chance of that many or more
    under a coin toss at most ``p_value``. A pooled "higher share of pairs" alone let models
    trained on random judgements through (a few lucky recalls decide it), and such a model
    reorders every later recall.
    """
    wins = losses = 0
    for (good_b, bad_b), (good_l, bad_l) in zip(
        _pairs_by_recall(examples, base), _pairs_by_recall(examples, blend), strict=True
    ):
        before, after = _ordered_right(good_b, bad_b), _ordered_right(good_l, bad_l)
        wins += after > before
        losses += after < before
    return significantly_more(wins, losses, p_value), wins, losses


def significantly_more(wins: int, losses: int, p_value: float) -> bool:
    """Whether ``wins`` over ``losses`` is more than a coin toss would give at ``p_value``
    (a one-sided sign test)."""
    n = wins + losses
    if wins <= losses:
        return False
    # P(X >= wins) for X ~ B(n, 1/2), from its largest term down (each next term is
    # (n - k) / (k + 1) times the one before) until the rest cannot change it: the exact sum
    # of big integers took 45 s at n = 10,000.
    term = math.exp(
        math.lgamma(n + 1) - math.lgamma(wins + 1) - math.lgamma(losses + 1) - n * math.log(2)
    )
    tail = 0.0
    # A relative slack for the rounding of lgamma and exp: a tail equal to ``p_value``
    # passes, as the exact sum said (3 of 3 at 0.125).
    limit = p_value * (1 + 1e-9)
    for k in range(wins, n + 1):
        tail += term
        if tail > limit:
            return False
        term *= (n - k) / (k + 1)
        if term <= tail * 1e-17:
            break
    return True


def passes(model: RankerModel, settings: LearningSettings) -> bool:
    """Whether ``model``'s held-out check passes ``settings`` (their significance and
    minimum ordering may have changed since it was trained); a model kept without its
    figures (by an earlier version) is taken as it was kept."""
    held_out = model.held_out
    if not {"better", "worse", "blend"} <= held_out.keys():
        return True
    wins, losses = int(held_out["better"]), int(held_out["worse"])
    return (
        significantly_more(wins, losses, settings.significance)
        and held_out["blend"] >= settings.min_ordering
    )


def held_out_recall(recall_id: str, share: float) -> bool:
    """Whether a judged recall is in the held-out share (fixed by its id, so a retrain
    checks on the same recalls as before plus new ones)."""
    import zlib

    return (zlib.crc32(recall_id.encode()) % 10_000) < share * 10_000


def asked_again(x: FloatArray, y: FloatArray, feedback_weight: float) -> FloatArray:
    """The examples as they would be if their query were asked again: the judgement's own
    link is close and fresh (1), and the base score holds the feedback it gives.

    A recall is judged before the same question is asked again, so the judged recalls hold
    no example of that case; without these the model would not learn that a question's own
    judgement stands (a user asking again wants what they accepted).
    """
    again = x.copy()
    accepted = y > 0
    close = {name: FEATURES.index(name) for name in ("accept_close", "reject_close")}
    again[accepted, close["accept_close"]] = 1.0
    again[~accepted, close["reject_close"]] = 1.0
    sign = np.where(accepted, 1.0, -1.0)
    again[:, FEATURES.index("feedback")] += sign * feedback_weight
    again[:, FEATURES.index("base")] += sign * feedback_weight
    return again


def train(
    examples: Sequence[Example],
    version: int,
    settings: LearningSettings,
    trained_at: str,
    feedback_weight: float = 0.6,
) -> RankerModel | None:
    """Train on ``examples`` (and each as if asked again, ``asked_again``) and check on the
    held-out recalls; None when there are too few examples (or only one judgement among
    them) to train at all.

    The model is active when, on the held-out recalls (as they were judged), the blend
    orders accepted above rejected results better than the base score alone in
    significantly more recalls than it orders worse (``better_than_base``), and orders at
    least ``min_ordering`` of their pairs right; it is then refitted on all.
    """
    if len(examples) < settings.min_judgements:
        return None
    y = np.array([1.0 if e.accepted else 0.0 for e in examples])
    if y.min() == y.max():
        return None
    x = np.stack([e.features for e in examples])
    test = np.array([held_out_recall(e.recall_id, settings.held_out) for e in examples])
    base_col = FEATURES.index("base")
    quality: dict[str, float] = {}
    active = False
    if test.any() and (~test).any() and len(set(y[~test].tolist())) == 2:
        xt, yt = x[~test], y[~test]
        trial = _fitted(xt, yt, version, settings, feedback_weight, trained_at, True, {})
        held = [e for e, t in zip(examples, test.tolist(), strict=True) if t]
        # Scaled per recall as recall scales it: by its own best base score.
        blend = np.zeros(len(held))
        base = x[test][:, base_col]
        positions: dict[str, list[int]] = {}
        for i, e in enumerate(held):
            positions.setdefault(e.recall_id, []).append(i)
        for members in positions.values():
            idx = np.array(members)
            blend[idx] = blended(trial, x[test][idx], base[idx], settings.learned_share)
        better, wins, losses = better_than_base(held, base, blend, settings.significance)
        quality = {
            "base": ordering_quality(held, base),
            "blend": ordering_quality(held, blend),
            "recalls": float(len(positions)),
            "examples": float(len(held)),
            "better": float(wins),
            "worse": float(losses),
        }
        active = better and quality["blend"] >= settings.min_ordering
    return _fitted(x, y, version, settings, feedback_weight, trained_at, active, quality)


def _fitted(
    x: FloatArray,
    y: FloatArray,
    version: int,
    settings: LearningSettings,
    feedback_weight: float,
    trained_at: str,
    active: bool,
    quality: dict[str, float],
) -> RankerModel:
    """The model fitted on ``x``/``y`` and on each example as if asked again."""
    mean, scale, coef, intercept = fit(
        np.vstack([x, asked_again(x, y, feedback_weight)]),
        np.concatenate([y, y]),
        settings.l2,
        WEIGHT_SIGNS,
    )
    return RankerModel(
        version,
        FEATURES,
        tuple(mean.tolist()),
        tuple(scale.tolist()),
        tuple(coef.tolist()),
        intercept,
        active,
        len(x),
        trained_at,
        quality,
    )
