import pytest
import torch
from torch import nn

from suites.arith.prompts import Prompt, prompt_source, refill, write_problems
from suites.arith.tasks import generate, split_of
from suites.arith.tokenizer import SEP, WRITE, Tokenizer

TOK = Tokenizer()
HOLDOUT_ADD = generate("add", 1, seed=0, split="holdout")[0].prompt
TRAIN_ADD = generate("add", 1, seed=0, split="train")[0].prompt


class Scripted(nn.Module):
    """Row b writes texts[b % len(texts)] after the <write> [CATEGORY <sep>] prefix, then <eos>; a text
    ending in "~" is cut there and never ends (it runs past the token budget)."""

    def __init__(self, texts: list[str]):
        super().__init__()
        self.texts = texts
        self.anchor = nn.Parameter(torch.zeros(()))

    def forward(self, tokens, mask=None):
        logits = torch.full((*tokens.shape, TOK.vocab_size), -50.0)
        for b, row in enumerate(tokens.tolist()):
            text = self.texts[b % len(self.texts)]
            ids = TOK.encode(text.rstrip("~")) + ([] if text.endswith("~") else [2])
            written = len(row) - 1 - max(i for i, t in enumerate(row) if t in (WRITE, SEP))
            logits[b, -1, ids[written] if written < len(ids) else TOK.encode("1")[0]] = 50.0
        return logits


TEXTS = [TRAIN_ADD, "47+8", HOLDOUT_ADD, "rev bad", "12+7;*3;-5", "dsum 481~"]


def test_keep_all_is_the_papers_unfiltered_source():
    prompts, counts = write_problems(Scripted(TEXTS), 6, seed=0, keep="all")
    assert [p.text for p in prompts] == [TRAIN_ADD, "47+8", HOLDOUT_ADD, "rev bad", "12+7;*3;-5", "dsum 481" + "1" * 8]
    assert [p.category for p in prompts] == ["add", None, "add", "rev", "chain", None]
    assert prompts[4].problem.answer == "52"
    assert counts == {"written": 6, "ended": 5, "parsed": 4, "passing": 3, "kept": 6, "distinct": 6}


def test_keep_parsed_drops_unparsed_unfinished_and_heldout_problems():
    prompts, counts = write_problems(Scripted(TEXTS), 6, seed=0, keep="parsed")
    assert len(prompts) == 6
    assert {p.text for p in prompts} == {TRAIN_ADD, "rev bad", "12+7;*3;-5"}
    assert all(split_of(p.text) == "train" for p in prompts)
    assert counts["written"] == 12 and counts["kept"] == 6 and counts["distinct"] == 3


def test_keep_parsed_with_a_category_and_a_hopeless_writer():
    only_rev, counts = write_problems(Scripted(TEXTS), 4, seed=0, category="rev")
    assert [p.text for p in only_rev] == ["rev bad"] * 4
    assert counts["written"] == 16
    with pytest.raises(ValueError, match="only 0 usable problems"):
        write_problems(Scripted(["47+8"]), 4, seed=0, max_rounds=2)


def test_fixed_pool_and_full_pool():
    train = generate("add", 40, seed=0, split="train")
    fixed = prompt_source("fixed8", train, seed=1)
    assert len(fixed) == 8 and len({p.text for p in fixed}) == 8
    assert fixed == prompt_source("fixed8", train, seed=1) != prompt_source("fixed8", train, seed=2)
    assert {p.source for p in fixed} == {"fixed8"}
    assert len(prompt_source("fixed8", train, size=1)) == 1
    assert [p.text for p in prompt_source("pool", train)] == [p.prompt for p in train]
    with pytest.raises(ValueError, match="size 41"):
        prompt_source("fixed8", train, size=41)


def test_teacher_source_needs_a_teacher_and_writes_with_it():
    with pytest.raises(ValueError, match="frozen teacher"):
        prompt_source("teacher", [])
    written = prompt_source("teacher", [], size=3, teacher=Scripted([TRAIN_ADD]))
    assert [p.text for p in written] == [TRAIN_ADD] * 3 and written[0].source == "teacher"
    with pytest.raises(ValueError, match="unknown prompt source"):
        prompt_source("real", [])


def test_refill_draws_a_full_batch_deterministically():
    pool = [Prompt(t, "fixed8", None) for t in "abcdefgh"]
    batch = refill(pool, 32, step=3, seed=0)
    assert len(batch) == 32 and batch == refill(pool, 32, step=3, seed=0) != refill(pool, 32, step=4, seed=0)
    with pytest.raises(ValueError, match="empty"):
        refill([], 4, 0)
