"""The policy ArenaFlow trains: a tiny torch softmax policy over the rule menu. Pure
(torch, no I/O).

Per request template and menu option, a two-way softmax (off, on) over learnt logits
``W[template, option]`` (T, K, 2); a retrieved skill adds its prior to the on-logit of
its option, so the library steers sampling without touching the weights. A trajectory's
K decisions are its policy steps; their log-probabilities sum to the trajectory's.

The update is REINFORCE with step-level advantages (``credit.step_advantages``): loss =
-sum(A * log pi(decision)) / (B * K), a constant (decision-level) normalisation, one Adam
step per round. Deviation from the paper: the paper updates an LLM's tokens; here the
"steps" are the K rule decisions of a request, not generated tokens."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor, nn

from tasks.training.policy import pin_cpu_threads


class SoftmaxPolicy(nn.Module):
    def __init__(self, templates: Sequence[str], n_options: int) -> None:
        super().__init__()
        self.templates = tuple(templates)
        self.logits = nn.Parameter(torch.zeros(len(self.templates), n_options, 2))  # (T, K, 2)

    def index(self, template: str) -> int:
        if template not in self.templates:
            raise KeyError(f"arenaflow: template {template!r} is not in the policy ({', '.join(self.templates)})")
        return self.templates.index(template)

    def log_probs(self, rows: Tensor, priors: Tensor) -> Tensor:
        """(B,) template rows, (B, K) priors on the on-logit -> (B, K, 2) log-probabilities."""
        logits = self.logits[rows] + torch.stack([torch.zeros_like(priors), priors], -1)  # (B, K, 2)
        return torch.log_softmax(logits, -1)


def make_policy(templates: Sequence[str], n_options: int) -> SoftmaxPolicy:
    pin_cpu_threads()
    return SoftmaxPolicy(templates, n_options)


def sample_group(policy: SoftmaxPolicy, template: str, prior: Sequence[float], n: int,
                 generator: torch.Generator) -> list[list[int]]:
    """``n`` decision vectors (K values in {0, 1}) sampled for one request."""
    with torch.no_grad():
        logp = policy.log_probs(torch.tensor([policy.index(template)]), torch.tensor([list(prior)]))[0]  # (K, 2)
        on = torch.rand((n, logp.shape[0]), generator=generator) < logp[:, 1].exp()  # (n, K)
    return on.int().tolist()


def greedy(policy: SoftmaxPolicy, template: str, prior: Sequence[float]) -> list[int]:
    """The most probable decision per option (off on a tie)."""
    with torch.no_grad():
        logp = policy.log_probs(torch.tensor([policy.index(template)]), torch.tensor([list(prior)]))[0]
    return (logp[:, 1] > logp[:, 0]).int().tolist()


@dataclass(frozen=True)
class Update:
    loss: float
    decisions: int


def update(policy: SoftmaxPolicy, optimizer: torch.optim.Optimizer, templates: Sequence[str],
           priors: Sequence[Sequence[float]], choices: Sequence[Sequence[int]],
           advantages: Sequence[Sequence[float]]) -> Update:
    """One Adam step on the step-advantage-weighted log-likelihood of the decisions."""
    rows = torch.tensor([policy.index(t) for t in templates])  # (B,)
    chosen = torch.tensor(list(choices), dtype=torch.long)  # (B, K)
    adv = torch.tensor(list(advantages), dtype=torch.float32)  # (B, K)
    logp = policy.log_probs(rows, torch.tensor(list(priors), dtype=torch.float32))
    taken = logp.gather(-1, chosen[..., None]).squeeze(-1)  # (B, K)
    loss = -(adv * taken).sum() / max(1, adv.numel())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if bool((adv != 0).any()):
        optimizer.step()
    return Update(float(loss.detach()), int(adv.numel()))


def to_bytes(policy: SoftmaxPolicy, library_json: str = "[]") -> bytes:
    """The weights, template order and active library, deterministically (its sha256 is
    the checkpoint's candidate id: ArenaFlow registers the policy with its library)."""
    buffer = io.BytesIO()
    torch.save({"templates": list(policy.templates), "logits": policy.logits.detach().clone(),
                "library": library_json}, buffer)
    return buffer.getvalue()


def library_json_of(data: bytes) -> str:
    return torch.load(io.BytesIO(data), weights_only=True)["library"]


def from_bytes(data: bytes) -> SoftmaxPolicy:
    state = torch.load(io.BytesIO(data), weights_only=True)
    policy = SoftmaxPolicy(state["templates"], state["logits"].shape[1])
    with torch.no_grad():
        policy.logits.copy_(state["logits"])
    return policy
