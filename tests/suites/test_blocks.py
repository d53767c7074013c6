"""EVOLVE-BLOCK markers: split and join give the program back; the text outside the
block is what a candidate must keep."""

from suites.blocks import join_block, outside_block, split_block

NESTED = """def solve(xs):
    # set up
    total = 0
    # EVOLVE-BLOCK-START
    for x in xs:
        total += x * 2
    # EVOLVE-BLOCK-END
    return total
"""


def test_split_and_join_round_trip_an_indented_block():
    head, block, indent, tail = split_block(NESTED)
    assert block == "for x in xs:\n    total += x * 2\n" and indent == "    "
    assert head.endswith("    # EVOLVE-BLOCK-START\n") and tail.startswith("    # EVOLVE-BLOCK-END\n")
    assert join_block(head, block, indent, tail) == NESTED
    changed = join_block(head, "for x in xs:\n    total += x * 3", indent, tail)
    assert "        total += x * 3\n    # EVOLVE-BLOCK-END" in changed
    assert outside_block(changed) == outside_block(NESTED) != outside_block(NESTED.replace("# set up", "# other"))


def test_no_block_or_two_blocks_is_none():
    assert split_block("def f():\n    return 1\n") is None
    two = NESTED + "# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n"
    assert split_block(two) is None
    assert split_block("# EVOLVE-BLOCK-END\nx = 1\n# EVOLVE-BLOCK-START\n") is None
