"""Inputs and outputs of the kernels. Shapes: B sequences, T positions (the generated
part, aligned with `token_logprobs` output), G groups of n rollouts each. Masks are bool
and True on the tokens that carry loss. Log-probs with a gradient are the current
policy's; every other tensor is treated as a constant (the kernels detach it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Optional

from torch import Tensor


@dataclass(frozen=True)
class LossOutputs:
    """What every loss returns: a scalar to backprop and detached scalar metrics."""

    loss: Tensor  # () with grad
    metrics: dict[str, Tensor] = field(default_factory=dict)  # name -> () detached


class Rollout(NamedTuple):
    """`kernels.model.sample` output; unpacks as (tokens, logprobs, mask)."""

    tokens: Tensor  # (B, P + N) prompt then generation
    logprobs: Tensor  # (B, N) log-prob of each sampled token under the sampling temperature; 0 where ~mask
    mask: Tensor  # (B, N) True up to and including the first eos


@dataclass(frozen=True)
class PolicyInputs:
    """Clipped PPO/GRPO surrogate; also the CLOOPD pass loss."""

    logprobs: Tensor  # (B, T) current policy, with grad
    old_logprobs: Tensor  # (B, T) behaviour policy
    advantages: Tensor  # (B, T), or (B, 1) for one advantage per sequence
    mask: Tensor  # (B, T) bool
    entropy: Optional[Tensor] = None  # (B, T) per-token entropy, reported as a metric only


@dataclass(frozen=True)
class ValueInputs:
    """PPO value loss."""

    values: Tensor  # (B, T) current critic, with grad
    old_values: Tensor  # (B, T) critic that produced the advantages
    returns: Tensor  # (B, T) regression targets (GAE advantages + old values)
    mask: Tensor  # (B, T) bool


@dataclass(frozen=True)
class PACTInputs:
    """PACT critic: the critic outputs a success probability as a logit."""

    value_logits: Tensor  # (B, T) critic logits, with grad
    returns: Tensor  # (B, T) GAE(lambda=1) returns in [0, 1] (the binary outcome)
    new_logprobs: Tensor  # (B, T) UPDATED actor re-forwarded on the old trajectories
    old_logprobs: Tensor  # (B, T) the sampling policy
    mask: Tensor  # (B, T) bool


@dataclass(frozen=True)
class GVPOInputs:
    """GVPO on whole-sequence log-probs (summed over each response's tokens)."""

    logprobs: Tensor  # (G, n) policy, with grad
    ref_logprobs: Tensor  # (G, n) reference policy
    rewards: Tensor  # (G, n) true rewards


@dataclass(frozen=True)
class GVPODistillInputs:
    """GVPO's OPD form: teacher and student each score whole responses (vocabularies may differ)."""

    student_logprobs: Tensor  # (G, n) student sequence log-probs, with grad
    teacher_logprobs: Tensor  # (G, n) teacher sequence log-probs of the same texts
    lengths: Tensor  # (G, n) response lengths (> 0) in the student's tokens


@dataclass(frozen=True)
class DistillInputs:
    """Sampled-token OPD and DIAL-OPD: both models score the student's sampled tokens."""

    student_logprobs: Tensor  # (B, T) with grad
    teacher_logprobs: Tensor  # (B, T)
    mask: Tensor  # (B, T) bool


@dataclass(frozen=True)
class CalOPDInputs:
    """Cal-OPD: teacher scored under the normal context and two opposing probes."""

    student_logprobs: Tensor  # (B, T) with grad
    teacher_logprobs: Tensor  # (B, T) normal context: the interval centre
    teacher_pos_logprobs: Tensor  # (B, T) "already judged correct" probe
    teacher_neg_logprobs: Tensor  # (B, T) "already judged wrong" probe
    mask: Tensor  # (B, T) bool


@dataclass(frozen=True)
class ContrastInputs:
    """Attract/Repel: the frozen teacher scored under a correct and a wrong solution context."""

    student_logprobs: Tensor  # (B, T) with grad
    teacher_pos_logprobs: Tensor  # (B, T) context: the correct reference solution
    teacher_neg_logprobs: Tensor  # (B, T) context: another incorrect solution of the group
    mask: Tensor  # (B, T) bool


@dataclass(frozen=True)
class DropoutSelection:
    """GRPODropout's result: which rollouts train and with what advantage."""

    advantages: Tensor  # (G, n) re-centred advantages; 0 for dropped rollouts
    kept: Tensor  # (G, n) bool; drop the False rollouts from the loss and its normaliser
    entropy_effect: Tensor  # (G, n) A_i * (log pi_old(y_i) - group mean)


@dataclass(frozen=True)
class FrozenBatch:
    """CLOOPD: everything fixed once the teacher has scored a batch; reused by every pass."""

    old_logprobs: Tensor  # (B, T) student at sampling time
    target_logprobs: Tensor  # (B, T) log q_alpha of the sampled tokens
    advantages: Tensor  # (B, T) target_logprobs - old_logprobs, 0 where ~mask
    mask: Tensor  # (B, T) bool
    alpha: Tensor  # () the chosen mixture weight of the teacher
    kl_proxy: Tensor  # () sampled KL(p_S || q_alpha) at that alpha


@dataclass(frozen=True)
class TPMRInputs:
    """What the TPMR rule reads after pass 2 of a batch."""

    progress: Tensor  # () conservative surrogate gain of pass 2 (`pass_progress`)
    student_tokens: Tensor  # () valid tokens of the batch (cost of one more pass)
    pass_kl: Tensor  # () approx KL of the policy after pass 2 against the frozen old policy
    tokens_used: Tensor  # () student tokens the run has spent on passes so far
    third_passes: Tensor  # () batches that already got a third pass
    batches: Tensor  # () batches seen so far, this one included
