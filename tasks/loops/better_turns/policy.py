"""The agent under test: a behaviour-cloned policy over toolsim turns. Pure (numpy).

A softmax regression from one-hot context features (``history.State.features``, plus a
bias) to the next delexicalised action, fitted by minibatch SGD on the cross-entropy of
the reference agent's decisions (sequence-free: every decision is one example; the loss
is the batch mean). The vocabulary (features and actions) is read once from every train
conversation, like a tokenizer, so base and SFT checkpoints share one shape and SFT
continues the base's weights.

Deviations from the paper (stated): the paper fine-tunes 4B–14B LMs for 5 epochs on
5,834 decisions; here "SFT" is this small model, and the base is the same model trained
on few logs of mismatched templates (``BetterTurnsConfig.base_templates``), not a
pretrained LM. A prediction is the argmax action (greedy decoding).
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tasks.loops.better_turns.turns import Action

BIAS = "bias"
Example = tuple[Sequence[str], str]
"""(features, action label) of one decision."""


@dataclass(frozen=True)
class Policy:
    features: tuple[str, ...]
    labels: tuple[str, ...]
    weights: np.ndarray  # (F, C)

    @staticmethod
    def initial(examples: Sequence[Example], seed: int) -> "Policy":
        """A fresh policy over the examples' vocabulary, weights ~ N(0, 0.01²) from ``seed``."""
        features = tuple(sorted({BIAS} | {f for fs, _ in examples for f in fs}))
        labels = tuple(sorted({label for _, label in examples}))
        weights = np.random.default_rng(seed).normal(0.0, 0.01, size=(len(features), len(labels)))
        return Policy(features, labels, weights)

    def _encode(self, features: Sequence[str]) -> np.ndarray:
        index = {f: i for i, f in enumerate(self.features)}
        x = np.zeros(len(self.features))
        for f in (BIAS, *features):
            if f in index:
                x[index[f]] = 1.0
        return x

    def probabilities(self, features: Sequence[str]) -> np.ndarray:  # (C,)
        return _softmax(self._encode(features)[None, :] @ self.weights)[0]

    def predict(self, features: Sequence[str]) -> Action:
        """The most probable action (the first label on a tie)."""
        return Action.of_label(self.labels[int(np.argmax(self.probabilities(features)))])

    def to_bytes(self) -> bytes:
        """A deterministic serialisation (its sha256 is the checkpoint's candidate id)."""
        buffer = io.BytesIO()
        np.save(buffer, self.weights.astype(np.float64), allow_pickle=False)
        header = json.dumps({"features": self.features, "labels": self.labels}).encode()
        return header + b"\n" + buffer.getvalue()

    @staticmethod
    def from_bytes(blob: bytes) -> "Policy":
        header, _, array = blob.partition(b"\n")
        vocab = json.loads(header)
        return Policy(tuple(vocab["features"]), tuple(vocab["labels"]), np.load(io.BytesIO(array), allow_pickle=False))


def _softmax(logits: np.ndarray) -> np.ndarray:  # (B, C) -> (B, C)
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def train(policy: Policy, examples: Sequence[Example], epochs: int, lr: float, batch_size: int,
          seed: int) -> tuple[Policy, list[float]]:
    """(the policy after ``epochs`` passes of minibatch SGD over ``examples`` in a seeded
    order, the mean cross-entropy of each epoch). Actions outside the vocabulary are refused."""
    labels = {label: i for i, label in enumerate(policy.labels)}
    unknown = sorted({label for _, label in examples} - set(labels))
    if unknown:
        raise ValueError(f"actions {unknown[:3]} are not in the policy's vocabulary; build it from every train log")
    x = np.stack([policy._encode(fs) for fs, _ in examples])  # (N, F)
    y = np.array([labels[label] for _, label in examples])  # (N,)
    weights, rng, losses = policy.weights.copy(), np.random.default_rng(seed), []
    for _ in range(epochs):
        order, total = rng.permutation(len(examples)), 0.0
        for start in range(0, len(order), batch_size):
            batch = order[start:start + batch_size]
            p = _softmax(x[batch] @ weights)  # (B, C)
            total += float(-np.log(np.clip(p[np.arange(len(batch)), y[batch]], 1e-12, None)).sum())
            p[np.arange(len(batch)), y[batch]] -= 1.0
            weights -= lr * (x[batch].T @ p) / len(batch)
        losses.append(total / max(1, len(examples)))
    return Policy(policy.features, policy.labels, weights), losses


def mean_loss(policy: Policy, examples: Sequence[Example]) -> float:
    """Mean cross-entropy of the policy on ``examples`` (nan for none)."""
    if not examples:
        return math.nan
    labels = {label: i for i, label in enumerate(policy.labels)}
    return float(np.mean([-math.log(max(1e-12, policy.probabilities(fs)[labels[label]])) for fs, label in examples]))
