"""MASS's "shared model" on toolsim: a tiny torch policy over state features that
decides, per menu rule, whether to apply it. Pure (torch, no I/O).

State features are the request's own (its template, one-hot): the workflow is **not**
an input (the paper removes the explicit workflow prompt from the SFT data), so what
the workflow's roles did must be carried by the weights. One linear layer
(templates -> K logits), an independent Bernoulli per rule; behaviour cloning is
full-batch binary cross-entropy on (features, decisions) examples with Adam, a fixed
number of epochs of plain gradient descent from zero weights (deterministic: no
sampling; the loss is convex, and torch.optim is not needed: its first use imports
torch's compiler, seconds on a busy CPU). Greedy = p > 0.5."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import nn

from tasks.training.policy import pin_cpu_threads


class RulePolicy(nn.Module):
    def __init__(self, templates: Sequence[str], n_rules: int) -> None:
        super().__init__()
        self.templates = tuple(templates)
        self.linear = nn.Linear(len(self.templates), n_rules)
        with torch.no_grad():
            self.linear.weight.zero_()
            self.linear.bias.zero_()

    def features(self, templates: Sequence[str]) -> torch.Tensor:
        """(B, T) one-hot template features."""
        unknown = [t for t in templates if t not in self.templates]
        if unknown:
            raise KeyError(f"mass: templates {sorted(set(unknown))} are not in the policy")
        x = torch.zeros(len(templates), len(self.templates))
        x[torch.arange(len(templates)), torch.tensor([self.templates.index(t) for t in templates])] = 1.0
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)  # (B, K) logits


def make_policy(templates: Sequence[str], n_rules: int) -> RulePolicy:
    pin_cpu_threads()
    return RulePolicy(templates, n_rules)


@dataclass(frozen=True)
class Fit:
    loss: float
    """Final mean BCE over the examples."""
    examples: int
    epochs: int


def behaviour_clone(policy: RulePolicy, templates: Sequence[str], targets: Sequence[Sequence[int]],
                    epochs: int, lr: float) -> Fit:
    """Fit the policy to the (template, decisions) examples; no examples = unchanged."""
    if not templates:
        return Fit(0.0, 0, 0)
    x, y = policy.features(templates), torch.tensor([list(t) for t in targets], dtype=torch.float32)
    params = list(policy.parameters())
    for _ in range(epochs):
        loss = nn.functional.binary_cross_entropy_with_logits(policy(x), y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= lr * g
    with torch.no_grad():
        final = nn.functional.binary_cross_entropy_with_logits(policy(x), y)
    return Fit(float(final), len(templates), epochs)


def greedy(policy: RulePolicy, template: str) -> tuple[int, ...]:
    with torch.no_grad():
        return tuple(int(v) for v in (torch.sigmoid(policy(policy.features([template])))[0] > 0.5).tolist())


def to_bytes(policy: RulePolicy) -> bytes:
    """Weights and template order, deterministically (its sha256 is the candidate id)."""
    buffer = io.BytesIO()
    torch.save({"templates": list(policy.templates), "weight": policy.linear.weight.detach().clone(),
                "bias": policy.linear.bias.detach().clone()}, buffer)
    return buffer.getvalue()


def from_bytes(data: bytes) -> RulePolicy:
    state = torch.load(io.BytesIO(data), weights_only=True)
    policy = RulePolicy(state["templates"], state["weight"].shape[0])
    with torch.no_grad():
        policy.linear.weight.copy_(state["weight"])
        policy.linear.bias.copy_(state["bias"])
    return policy
