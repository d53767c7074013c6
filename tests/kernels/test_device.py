"""The kernels follow the model's device: the same checks on CUDA when one is present."""

import pytest
import torch
from torch.testing import assert_close

from kernels.advantages import gae, grpo_advantages
from kernels.cloopd import cloopd_pass_loss, freeze_batch, pass_inputs
from kernels.configs import CLOOPDConfig, DIALConfig, PolicyLossConfig, TinyLMConfig, TwoEndConfig
from kernels.distill import dial_opd_loss
from kernels.masks import two_end_keep
from kernels.model import TinyLM, sample, token_logprobs
from kernels.policy_loss import policy_loss
from kernels.types import DistillInputs, PolicyInputs

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_sampling_and_losses_run_on_the_model_device():
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = TinyLM(TinyLMConfig(vocab_size=16, d_model=32, n_heads=4, max_len=16)).to(dev).eval()
    prompts = torch.tensor([[1, 2, 3], [4, 5, 6]])  # on CPU: sample moves them
    run = lambda: sample(model, prompts, 6, 0.8, torch.Generator(device=dev).manual_seed(5))
    tokens, logprobs, mask = run()
    assert tokens.device.type == "cuda" and torch.equal(tokens, run().tokens)
    lp = token_logprobs(model, tokens, temperature=0.8)[:, 2:]
    assert_close(logprobs, lp, atol=1e-4, rtol=1e-4)

    adv = grpo_advantages(torch.tensor([[1.0, 0.0]], device=dev)).T  # (2, 1)
    out = policy_loss(PolicyInputs(lp, logprobs, adv, mask), PolicyLossConfig())
    out.loss.backward()
    assert out.loss.device.type == "cuda" and all(v.device.type == "cuda" for v in out.metrics.values())

    teacher = logprobs - 0.5
    assert dial_opd_loss(DistillInputs(logprobs, teacher, mask), DIALConfig()).loss.device.type == "cuda"
    frozen = freeze_batch(logprobs, teacher, mask, CLOOPDConfig())
    assert cloopd_pass_loss(pass_inputs(logprobs, frozen), CLOOPDConfig()).loss.isfinite()
    adv_t, _ = gae(torch.zeros_like(logprobs), torch.zeros_like(logprobs), mask)
    assert adv_t.device.type == "cuda"
    assert two_end_keep(torch.arange(6, device=dev)[None], TwoEndConfig()).device.type == "cuda"
