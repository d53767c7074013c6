"""`mutate` on a program with an EVOLVE-BLOCK edits only the block: over many seeded
children the text outside (comments included) never changes and every child parses;
a program without markers is mutated exactly as before."""

import ast
import random

from schemas.configs import EvolveConfig
from suites.blocks import outside_block
from tasks.proposers.base import ParentInfo
from tasks.proposers.mutate import MutationProposer

PROGRAM = """import math

# a comment the search must keep
LIMIT = 10


def solve(xs):
    total = 0
    # EVOLVE-BLOCK-START
    for x in xs:
        total += x * 2 + 1
    # EVOLVE-BLOCK-END
    return min(total, LIMIT * 3)
"""


def test_children_change_only_the_block():
    proposer = MutationProposer(EvolveConfig())
    parents = [ParentInfo("a", PROGRAM, 1.0), ParentInfo("b", PROGRAM.replace("x * 2", "x * 5"), 0.5)]
    changed = 0
    for seed in range(60):
        child = proposer.propose(parents, random.Random(seed))
        ast.parse(child.source)
        assert outside_block(child.source) == outside_block(PROGRAM)
        assert "# a comment the search must keep" in child.source and "LIMIT * 3" in child.source
        changed += child.source != PROGRAM
    assert changed == 60


def test_a_program_without_markers_is_mutated_as_before():
    plain = PROGRAM.replace("    # EVOLVE-BLOCK-START\n", "").replace("    # EVOLVE-BLOCK-END\n", "")
    proposer = MutationProposer(EvolveConfig())
    for seed in range(10):
        parents = [ParentInfo("a", plain, 1.0)]
        assert proposer.propose(parents, random.Random(seed)) == proposer._propose(parents, random.Random(seed), ())
