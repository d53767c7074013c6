"""The suite's teacher: a TinyLM larger than the default student, trained by supervised
learning on generated problems, with everything the loops ask of it in its data mix:

- plain examples `<bos> PROMPT <sep> TARGET <eos>` (the task itself);
- hinted examples with a privileged context of a level drawn uniformly from L1-L5
  (`<hint> CONTEXT </hint>` before the prompt), so the teacher actually reads the
  contexts of Self-Teacher Context (the spec's offline instance pretrains "on a mix
  that sometimes prepends a hint");
- write examples `<bos> <write> [CATEGORY <sep>] PROMPT <eos>` (half of them name the
  category), so the frozen teacher can write DF-OPD's training problems;
- multi-turn chain transcripts (STRIDE), learned on the agent turns only.

Loss is on the target tokens only (`lm.sft_loss`). Training draws from the train split
only (`tasks.stream`), so held-out accuracy is measured on prompts it never saw.
The same function with a student-sized `model` is the base pretraining of a student.

Measured on 2 shared CPU cores, one torch thread, seed 0 (greedy, 100 held-out
problems per category):

- default config (all six categories, `TEACHER_MODEL`), 3000 steps, 974 s: add 1.00,
  sub 0.98, dsum 1.00, rev 1.00, sort 1.00, chain 0.80 (all 0.96); with a privileged
  context the same model scores lower (L1 0.85, L2 0.87, L3 0.78, L4 0.85, L5 0.84 over
  all categories): each level is only 6% of the mix and shifts the prompt's positions.
  Of 64 written problems 58 parse and 49 pass the DF-OPD filter.
- `categories=("add",)`, 1000 steps, 313-337 s: add 1.00 on 200 held-out problems
  (the slow test asserts >= 0.90)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator

from kernels.configs import TinyLMConfig
from kernels.model import TinyLM
from suites.arith.contexts import LEVELS, contexts
from suites.arith.episodes import Episode, teacher_example
from suites.arith.lm import Example, accuracy_by_category, train_supervised
from suites.arith.prompts import write_problems
from suites.arith.tasks import CATEGORIES, Problem, Style, generate, stream
from suites.arith.tokenizer import Tokenizer

VOCAB_SIZE = Tokenizer().vocab_size

Draw = Callable[[], Problem]

TEACHER_MODEL = TinyLMConfig(vocab_size=VOCAB_SIZE, d_model=128, n_layers=4, n_heads=4, max_len=128)
"""About 0.8 M parameters: four times the width-depth product of `STUDENT_MODEL`."""

STUDENT_MODEL = TinyLMConfig(vocab_size=VOCAB_SIZE, d_model=64, n_layers=2, n_heads=4, max_len=128)
"""The kernels' default shape with this suite's vocabulary and room for hinted and
multi-turn sequences (the longest are about 90 tokens)."""


class TeacherConfig(BaseModel):
    """Supervised training of an arith LM (teacher, or a student's base)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: TinyLMConfig = TEACHER_MODEL
    """Shape of the network; its vocab_size must be the tokenizer's."""
    categories: tuple[str, ...] = CATEGORIES
    """Task families in the mix, drawn uniformly."""
    style: Style = "worked"
    """Target format: worked steps then `#answer`, or the answer alone."""
    batch_size: int = Field(64, ge=1, le=4096)
    """Examples per AdamW step."""
    lr: float = Field(3e-3, gt=0.0, le=1.0)
    """Peak AdamW learning rate (warm-up, then cosine to 10%)."""
    warmup: int = Field(50, ge=0)
    """Linear warm-up steps."""
    context_prob: float = Field(0.3, ge=0.0, le=1.0)
    """Share of examples with a privileged context (level uniform over L1-L5)."""
    write_prob: float = Field(0.1, ge=0.0, le=1.0)
    """Share of `<write>` examples (the teacher learns to write problems)."""
    episode_prob: float = Field(0.1, ge=0.0, le=1.0)
    """Share of multi-turn chain transcripts; 0 unless "chain" is a category."""
    eval_per_category: int = Field(100, ge=0)
    """Held-out problems per category scored after training (0 skips the evaluation)."""
    eval_writes: int = Field(64, ge=0)
    """Problems the trained model writes to measure how many pass the DF-OPD filter."""

    @model_validator(mode="after")
    def _check(self) -> "TeacherConfig":
        unknown = sorted(set(self.categories) - set(CATEGORIES))
        if unknown or not self.categories:
            raise ValueError(f"categories {list(self.categories)} must be a non-empty subset of {list(CATEGORIES)}")
        if self.model.vocab_size != VOCAB_SIZE:
            raise ValueError(f"model.vocab_size={self.model.vocab_size} but the arith tokenizer has {VOCAB_SIZE} ids; set it to {VOCAB_SIZE}")
        if self.context_prob + self.write_prob + self.episode_prob > 1:
            raise ValueError("context_prob + write_prob + episode_prob exceeds 1; lower one so plain examples remain")
        return self


def supervised_example(tok: Tokenizer, prefix: list[int], target: str) -> Example:
    """``prefix`` then ``target`` as a completion, loss on the completion only."""
    completion = tok.encode_completion(target)
    return prefix + completion, [False] * len(prefix) + [True] * len(completion)


def example_kind(cfg: TeacherConfig, rng: random.Random) -> str:
    """Which part of the mix the next example comes from: write, episode, hint or plain."""
    u = rng.random()
    episode_prob = cfg.episode_prob if "chain" in cfg.categories else 0.0
    for kind, share in (("write", cfg.write_prob), ("episode", episode_prob), ("hint", cfg.context_prob)):
        if u < share:
            return kind
        u -= share
    return "plain"


def make_example(cfg: TeacherConfig, kind: str, problem: Problem, rng: random.Random, tok: Tokenizer) -> Example:
    """One example of `kind` built around `problem` (a chain problem for "episode")."""
    if kind == "write":
        category = problem.category if rng.random() < 0.5 else None
        return supervised_example(tok, tok.encode_write(category), problem.prompt)
    if kind == "episode":
        return teacher_example(tok, Episode.of(problem), cfg.style)
    context = contexts(problem)[rng.choice(LEVELS)] if kind == "hint" else None
    return supervised_example(tok, tok.encode_prompt(problem.prompt, context), problem.target(cfg.style))


def _batch(cfg: TeacherConfig, draw: Draw, draw_chain: Draw, rng: random.Random, tok: Tokenizer) -> list[Example]:
    kinds = [example_kind(cfg, rng) for _ in range(cfg.batch_size)]
    return [make_example(cfg, k, draw_chain() if k == "episode" else draw(), rng, tok) for k in kinds]


def train_teacher(config: TeacherConfig, steps: int, seed: int) -> tuple[TinyLM, dict]:
    """Train a fresh model of `config.model` for `steps` AdamW steps from `seed` ->
    (model in eval mode, metrics). Metrics: `loss` per step, `loss_first` / `loss_last`
    (means of the first and last 10% of steps), `wall_s` of training, `steps`,
    `heldout_acc` per category and "all" (greedy, plain prompts, holdout split), and
    `write` (counts of `prompts.write_problems` in keep="all" mode) when asked."""
    with torch.random.fork_rng(devices=[]):  # seed the init without touching the caller's RNG
        torch.manual_seed(seed)
        model = TinyLM(config.model)
    tok, rng = Tokenizer(), random.Random(f"teacher:{seed}")
    draw, draw_chain = stream(config.categories, seed), stream(("chain",), seed + 1)
    start = time.perf_counter()
    curve = train_supervised(
        model,
        lambda step: _batch(config, draw, draw_chain, rng, tok),
        steps,
        lr=config.lr,
        warmup=min(config.warmup, steps),
    )
    window = max(1, steps // 10)
    metrics: dict = {
        "steps": steps,
        "loss": curve["loss"],
        "loss_first": sum(curve["loss"][:window]) / window,
        "loss_last": sum(curve["loss"][-window:]) / window,
        "wall_s": time.perf_counter() - start,
    }
    if config.eval_per_category:
        held = [p for c in config.categories for p in generate(c, config.eval_per_category, seed, "holdout")]
        metrics["heldout_acc"] = accuracy_by_category(model, held, config.style)
    if config.eval_writes:
        metrics["write"] = write_problems(model, config.eval_writes, seed, keep="all")[1]
    return model, metrics
