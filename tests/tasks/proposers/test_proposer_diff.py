import pytest

from tasks.proposers.diff import DiffError, apply_diff_blocks, parse_diff_blocks, program_from_response

PROGRAM = """import numpy as np

def priority(item, bins):
    score = -(bins - item)
    if item > 0.5 * bins.max():
        score = score * 1.5
    return score
"""


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def test_parse_finds_blocks_in_order_and_ignores_prose():
    text = "Raise the boost.\n" + block("a = 1", "a = 2") + "and then\n" + block("b = 1\nc = 2", "")
    assert parse_diff_blocks(text) == [("a = 1", "a = 2"), ("b = 1\nc = 2", "")]
    assert parse_diff_blocks("no edits here") == []


def test_parse_rejects_a_truncated_block():
    text = block("a = 1", "a = 2") + "<<<<<<< SEARCH\nb = 1\n=======\nb = 2\n"
    with pytest.raises(DiffError, match="found 2 '<<<<<<< SEARCH' markers but 1 complete blocks"):
        parse_diff_blocks(text)


def test_apply_several_blocks_in_order():
    blocks = [
        ("        score = score * 1.5", "        score = score * 2.0"),
        ("        score = score * 2.0\n    return score", "        score = score * 2.0\n    return score + 1"),
    ]
    assert apply_diff_blocks(PROGRAM, blocks) == PROGRAM.replace("score * 1.5", "score * 2.0").replace(
        "return score", "return score + 1"
    )


def test_apply_names_the_block_that_is_not_found():
    blocks = [("    return score", "    return -score"), ("    score = 0", "    score = 1")]
    message = r"block 1: SEARCH text not found in the program \(first line '    score = 0'\)"
    with pytest.raises(DiffError, match=message):
        apply_diff_blocks(PROGRAM, blocks)


def test_apply_matches_whole_lines_only():
    with pytest.raises(DiffError, match="block 0: SEARCH text not found"):
        apply_diff_blocks("xx = 10\n", [("x = 1", "x = 2")])


def test_apply_rejects_an_ambiguous_search():
    source = "def f(x):\n    x = x + 1\n    y = 2\n    x = x + 1\n    return x\n"
    with pytest.raises(DiffError, match=r"block 0: SEARCH text is ambiguous, it matches 2 places \(lines 2, 4\)"):
        apply_diff_blocks(source, [("    x = x + 1", "    x = x + 2")])


def test_apply_rejects_an_empty_search():
    with pytest.raises(DiffError, match="block 0: SEARCH is empty"):
        apply_diff_blocks(PROGRAM, [("", "x = 1")])


def test_crlf_in_answer_and_program_is_tolerated():
    answer = block("    return score", "    return score * 2").replace("\n", "\r\n")
    child, mode = program_from_response(PROGRAM.replace("\n", "\r\n"), answer)
    assert mode == "diff"
    assert child == PROGRAM.replace("return score", "return score * 2")


def test_trailing_whitespace_is_tolerated_but_indentation_is_not():
    assert apply_diff_blocks(PROGRAM, [("    return score   ", "    return 0")]).endswith("    return 0\n")
    with pytest.raises(DiffError, match="not found"):
        apply_diff_blocks(PROGRAM, [("return score", "return 0")])


def test_empty_replace_deletes_the_lines():
    child = apply_diff_blocks(PROGRAM, [("    if item > 0.5 * bins.max():\n        score = score * 1.5", "")])
    assert child == "import numpy as np\n\ndef priority(item, bins):\n    score = -(bins - item)\n    return score\n"


def test_fenced_full_program_is_a_rewrite():
    program = "def priority(item, bins):\n    return bins - item\n"
    answer = f"A simpler rule.\n```python\nx = 1\n```\nFull program:\n```python\n{program}```\n"
    assert program_from_response(PROGRAM, answer) == (program, "rewrite")


def test_diff_blocks_inside_a_fence_are_still_a_diff():
    answer = "```\n" + block("    return score", "    return score + 1") + "```\n"
    child, mode = program_from_response(PROGRAM, answer)
    assert mode == "diff" and child.endswith("return score + 1\n")


def test_with_an_entrypoint_only_a_fence_that_defines_it_is_a_program():
    program = "def priority(item, bins):\n    return bins - item\n"
    answer = f"Use this:\n```\n{program}```\n"
    assert program_from_response(PROGRAM, answer, "priority") == (program, "rewrite")


@pytest.mark.parametrize(
    "answer",
    [
        "Change it:\n```\nscore = score * 2.5\n```\n",  # a bare-fenced snippet
        "Like so:\n```python\nscore = score * 2.5\nreturn score\n```\n",  # a tagged snippet
        "```python\ndef helper(bins):\n    return bins\n```\n",  # defines something else
    ],
)
def test_a_snippet_is_not_the_whole_program(answer):
    with pytest.raises(DiffError, match="nor a whole program defining priority"):
        program_from_response(PROGRAM, answer, "priority")


def test_without_an_entrypoint_a_bare_fence_is_not_a_program():
    with pytest.raises(DiffError, match="nor a whole program in a ```python fence"):
        program_from_response(PROGRAM, "```\ndef priority(item, bins):\n    return bins\n```\n")


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("I would raise the threshold.", "neither SEARCH/REPLACE blocks nor a whole program in a ```python fence"),
        (block("    return score", "    return score +"), "the edited program does not parse: .* line 7"),
        (block("    return score", "    return score  # same"), "leaves the program unchanged"),
    ],
)
def test_unusable_answers_are_diff_errors(answer, message):
    with pytest.raises(DiffError, match=message):
        program_from_response(PROGRAM, answer)
