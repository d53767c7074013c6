import pytest
import torch

from suites.arith.tokenizer import (
    BOS,
    CHARS,
    EOS,
    HINT,
    HINT_END,
    PAD,
    SEP,
    WRITE,
    Tokenizer,
    left_pad,
    right_pad,
    splice,
)

TOK = Tokenizer()


def test_round_trip_over_the_whole_alphabet():
    text = CHARS + "47+85=132#132"
    assert TOK.decode(TOK.encode(text)) == text


def test_special_ids_are_distinct_and_chars_follow_them():
    assert len(set(TOK.vocab)) == TOK.vocab_size
    assert TOK.encode("0") == [8]
    assert TOK.vocab[:4] == ("<pad>", "<bos>", "<eos>", "<sep>")


def test_unknown_character_is_refused_with_its_position():
    with pytest.raises(ValueError, match=r"'X' at position 2"):
        TOK.encode("12X")


def test_prompt_context_completion_and_write_layouts():
    assert TOK.encode_prompt("1+2") == [BOS, *TOK.encode("1+2"), SEP]
    assert TOK.encode_prompt("1+2", "sum") == [BOS, HINT, *TOK.encode("sum"), HINT_END, *TOK.encode("1+2"), SEP]
    assert TOK.encode_completion("3") == [*TOK.encode("3"), EOS]
    assert TOK.encode_write() == [BOS, WRITE]
    assert TOK.encode_write("add") == [BOS, WRITE, *TOK.encode("add"), SEP]


def test_decode_drops_specials_and_stops_at_eos():
    ids = [PAD, BOS, *TOK.encode("12"), SEP, *TOK.encode("3"), EOS, *TOK.encode("9")]
    assert TOK.decode(ids) == "123"
    assert TOK.decode(ids, stop_at_eos=False) == "1239"
    assert TOK.render([BOS, *TOK.encode("1"), EOS]) == "<bos>1<eos>"


def test_left_pad_aligns_row_ends_and_masks_pads():
    tokens, mask = left_pad([[5, 6, 7], [9]])
    assert tokens.tolist() == [[5, 6, 7], [PAD, PAD, 9]]
    assert mask.tolist() == [[True, True, True], [False, False, True]]


def test_right_pad_aligns_row_starts():
    tokens, mask = right_pad([[5], [6, 7]])
    assert tokens.tolist() == [[5, PAD], [6, 7]]
    assert mask.tolist() == [[True, False], [True, True]]


def test_splice_appends_completions_after_a_left_padded_prompt():
    prompts, prompt_mask = left_pad([[1, 2], [3]])
    completion = torch.tensor([[8, 2], [9, 2]])
    completion_mask = torch.tensor([[True, True], [True, False]])
    tokens, mask = splice(prompts, prompt_mask, completion, completion_mask)
    assert tokens.tolist() == [[1, 2, 8, 2], [PAD, 3, 9, 2]]
    assert mask.tolist() == [[True, True, True, True], [False, True, True, False]]
