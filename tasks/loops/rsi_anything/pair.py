"""RSI-Anything's pair, pure: the proposer policy (a bandit-updated distribution over
`mutate`'s single-parent operators), the world model (ridge on code features predicting
a child's public-score gain over its parent), the WM reliability check, and the
compatibility gate that accepts the assembled pair only when it beats the old pair.

Deviations from the paper (no arXiv id; the notes end at its dataset section): the
policy is an operator distribution, not an LLM coder; the WM predicts the clipped gain in
`neg_excess_pct` on the public (select) cases rather than a pass probability; "coverage"
is the share of the current candidates whose operator the WM was trained on; the
validation the paper leaves unspecified is a batch of fresh children per policy, all
executed on the public cases (never used to fit the WM under test)."""

from __future__ import annotations

import ast
import json
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tasks.gate.stats import paired_bootstrap_ci

OPERATORS = ("constant", "operator", "compare", "statement", "swap_lines")
"""`mutate`'s single-parent operators: the arms of the policy's bandit."""
FEATURES = (*OPERATORS, "edits", "const_shift", "size_delta")


@dataclass(frozen=True)
class Policy:
    """The proposing policy: a probability per operator (summing to 1)."""

    probs: tuple[float, ...]

    @classmethod
    def uniform(cls) -> "Policy":
        return cls(tuple(1.0 / len(OPERATORS) for _ in OPERATORS))

    def weights(self) -> dict[str, float]:
        return dict(zip(OPERATORS, self.probs))

    def code(self) -> str:
        return json.dumps({"policy": self.weights()}, sort_keys=True)

    @classmethod
    def from_code(cls, code: str) -> "Policy":
        w = json.loads(code)["policy"]
        return cls(tuple(float(w[op]) for op in OPERATORS))


def bandit_update(policy: Policy, outcomes: Sequence[tuple[str, float]], lr: float, floor: float,
                  scale: float) -> Policy:
    """Exponential-weights update from (operator, gain) outcomes: each operator's log
    weight moves by `lr` times (its mean gain − the mean gain of all outcomes) / `scale`
    (gains are clipped to ±scale, so the step is at most 2·lr); probabilities are then
    floored at `floor` and renormalised (no arm dies). No outcomes: the policy unchanged."""
    if not outcomes:
        return policy
    overall = sum(g for _, g in outcomes) / len(outcomes)
    logw = [math.log(p) for p in policy.probs]
    for i, op in enumerate(OPERATORS):
        mine = [g for o, g in outcomes if o == op]
        if mine:
            logw[i] += lr * (sum(mine) / len(mine) - overall) / scale
    top = max(logw)
    raw = [math.exp(v - top) for v in logw]
    probs = [max(floor, r / sum(raw)) for r in raw]
    return Policy(tuple(round(p / sum(probs), 6) for p in probs))


def _numbers(source: str) -> list[float]:
    return [float(n.value) for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool)]


def code_features(parent: str, child: str, operator: str, edits: int) -> tuple[float, ...]:
    """The WM's view of a child: one-hot operator, number of edits, the summed |log ratio|
    of its numeric literals against the parent's (1 per literal count change; capped at 5),
    and the AST node-count change / 10. A child that does not parse (an LLM answer that
    gave no program) has the largest shift and no size change."""
    try:
        ast.parse(child)
    except SyntaxError:
        return (*(float(operator == op) for op in OPERATORS), float(edits), 5.0, 0.0)
    a, b = _numbers(parent), _numbers(child)
    if len(a) == len(b):
        shift = sum(abs(math.log((abs(y) + 1e-6) / (abs(x) + 1e-6))) for x, y in zip(a, b))
    else:
        shift = float(abs(len(a) - len(b)))
    size = (sum(1 for _ in ast.walk(ast.parse(child))) - sum(1 for _ in ast.walk(ast.parse(parent)))) / 10.0
    return (*(float(operator == op) for op in OPERATORS), float(edits), min(shift, 5.0), size)


@dataclass(frozen=True)
class WorldModel:
    """A ridge model of gain from code features: prediction = intercept + coef · x.
    The zero model (no training pairs) predicts 0 for every child."""

    coef: tuple[float, ...]
    intercept: float
    train_pairs: int
    train_ops: tuple[str, ...] = ()
    """The operators its training children used (what its coverage is measured against)."""

    @classmethod
    def zero(cls) -> "WorldModel":
        return cls(tuple(0.0 for _ in FEATURES), 0.0, 0)

    def predict(self, x: Sequence[float]) -> float:
        return self.intercept + float(np.dot(self.coef, x))

    def code(self) -> str:
        return json.dumps({"wm": {"coef": list(self.coef), "intercept": self.intercept,
                                  "train_pairs": self.train_pairs, "train_ops": list(self.train_ops)}}, sort_keys=True)

    @classmethod
    def from_code(cls, code: str) -> "WorldModel":
        w = json.loads(code)["wm"]
        return cls(tuple(w["coef"]), float(w["intercept"]), int(w["train_pairs"]), tuple(w["train_ops"]))


def fit_ridge(xs: Sequence[Sequence[float]], ys: Sequence[float], lam: float) -> WorldModel:
    """Ridge regression with an unpenalised intercept (features and target centred);
    coefficients rounded to 9 digits so equal data give the same content id."""
    if not xs:
        return WorldModel.zero()
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    mx, my = x.mean(axis=0), y.mean()
    xc = x - mx  # (n, d)
    coef = np.linalg.solve(xc.T @ xc + lam * np.eye(x.shape[1]), xc.T @ (y - my))
    intercept = my - float(mx @ coef)
    ops = tuple(op for i, op in enumerate(OPERATORS) if x.shape[1] == len(FEATURES) and x[:, i].any())
    return WorldModel(tuple(round(float(c), 9) for c in coef), round(float(intercept), 9), len(ys), ops)


def clip_gain(gain: float, clip: float) -> float:
    """A child's gain bounded to [-clip, clip] (an invalid child scores the suite's floor)."""
    return max(-clip, min(clip, gain))


def pick(wm: WorldModel, features: Sequence[Sequence[float]]) -> int:
    """The index of the WM's top pick (the first on ties: the zero model picks the first)."""
    preds = [wm.predict(x) for x in features]
    return preds.index(max(preds))


@dataclass(frozen=True)
class Check:
    """The WM reliability check on the current candidate distribution."""

    status: str
    """reliable | insufficient_evidence | unreliable."""
    calib_error: float | None
    """Mean |prediction − actual| over the version's own pairs (None: no pairs)."""
    coverage: float
    n_pairs: int


def reliability(pairs: Sequence[tuple[float, float]], train_ops: set[str], current_ops: Sequence[str],
                min_pairs: int, max_error: float, min_coverage: float) -> Check:
    """`pairs` are (prediction, actual) made by one WM version. Coverage below
    `min_coverage`, or fewer than `min_pairs` pairs: insufficient evidence (not "reliable");
    calibration error above `max_error`: unreliable; else reliable."""
    coverage = sum(op in train_ops for op in current_ops) / len(current_ops) if current_ops else 0.0
    error = float(np.mean([abs(p - a) for p, a in pairs])) if pairs else None
    if coverage < min_coverage or len(pairs) < min_pairs:
        status = "insufficient_evidence"
    else:
        status = "unreliable" if error > max_error else "reliable"
    return Check(status, error, coverage, len(pairs))


def should_adapt(check: Check, available_pairs: int, min_pairs: int) -> bool:
    """Adapt the WM only when the check flags a problem and the data suffice."""
    return check.status == "unreliable" and available_pairs >= min_pairs


@dataclass(frozen=True)
class Batch:
    """One validation draw of a policy: each child's features and actual (clipped) gain."""

    features: tuple[tuple[float, ...], ...]
    gains: tuple[float, ...]


def pair_value(wm: WorldModel, batch: Batch) -> float:
    """What the pair earns on one draw: the actual gain of the WM's top pick."""
    return batch.gains[pick(wm, batch.features)]


def mae(wm: WorldModel, batches: Sequence[Batch]) -> float:
    return float(np.mean([abs(wm.predict(x) - g) for b in batches for x, g in zip(b.features, b.gains)]))


def pair_gate(old_wm: WorldModel, new_wm: WorldModel | None, old_batches: Sequence[Batch],
              new_batches: Sequence[Batch] | None, mode: str, margin: float = 0.0) -> tuple[bool, bool, bool, dict]:
    """(accept, policy part kept, WM part kept, evidence). Batch i of `old_batches`
    (the old policy's children) and of `new_batches` (the new policy's) share a seed.
    Parts: the new policy passes when its children's mean gain beats the old policy's;
    the new WM passes when its error on the old policy's children (never its training
    data) is below the old WM's. The passing parts are assembled; mode "pair" accepts the
    assembly only when its pick beats the old pair's pick by more than `margin` on average
    over the draws, mode "parts" accepts it whenever a part passed."""
    policy_ok = new_batches is not None and float(np.mean([np.mean(b.gains) for b in new_batches])) > \
        float(np.mean([np.mean(b.gains) for b in old_batches]))
    wm_ok = new_wm is not None and mae(new_wm, old_batches) < mae(old_wm, old_batches)
    wm = new_wm if wm_ok else old_wm
    batches = new_batches if policy_ok else old_batches
    metric_old = [pair_value(old_wm, b) for b in old_batches]
    metric_new = [pair_value(wm, b) for b in batches]
    diffs = [n - o for n, o in zip(metric_new, metric_old)]
    delta = float(np.mean(diffs))
    changed = policy_ok or wm_ok
    accept = changed and (mode == "parts" or delta > margin)
    low, high = paired_bootstrap_ci(diffs)
    evidence = {"mode": mode, "policy_part": policy_ok, "wm_part": wm_ok, "metric_old": float(np.mean(metric_old)),
                "metric_new": float(np.mean(metric_new)), "delta": delta, "ci": [low, high], "per_draw": diffs,
                "wm_mae_old": mae(old_wm, old_batches),
                "wm_mae_new": None if new_wm is None else mae(new_wm, old_batches)}
    return accept, accept and policy_ok, accept and wm_ok, evidence
