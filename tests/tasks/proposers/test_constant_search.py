import ast
import math
import random
from statistics import fmean

from schemas.configs import EvolveConfig
from tasks.proposers import circle_program, grammar
from tasks.proposers.base import ParentInfo
from tasks.proposers.constant_search import STARTUP, Axis, Trial, in_box, suggest
from tasks.proposers.grammar_proposer import GrammarProposer, circle_axes, shape_of


def test_in_box_keeps_finite_trials_whose_every_value_is_on_its_axis():
    axes = [Axis(0.0, 1.0), Axis(1.0, 10.0, log=True)]
    trials = [Trial((0.5, 2.0), 1.0), Trial((1.5, 2.0), 2.0), Trial((0.5, 20.0), 3.0),
              Trial((0.5, 2.0), -math.inf), Trial((0.5,), 4.0), Trial((0.0, 10.0), 5.0)]
    assert in_box(axes, trials) == [trials[0], trials[5]]


def test_suggest_is_inside_the_box_and_repeats_with_the_seed():
    axes = [Axis(0.25, 4.0, log=True), Axis(-1.0, 1.0)]
    trials = [Trial((1.0, 0.0), 0.5)]
    first = suggest(axes, trials, seed=3)
    assert first == suggest(axes, trials, seed=3)
    assert first != suggest(axes, trials, seed=4)
    assert all(a.holds(v) for a, v in zip(axes, first))


def test_tpe_concentrates_where_the_trials_scored_well():
    # score peaks at x = 0.8 in [0, 1]; with 20 scored trials on a grid, TPE's next points
    # lie nearer the peak than uniform draws do (mean |x - 0.8| of a uniform draw: 0.34)
    axes = [Axis(0.0, 1.0)]
    trials = [Trial((k / 19,), -((k / 19) - 0.8) ** 2) for k in range(20)]
    distances = [abs(suggest(axes, trials, seed)[0] - 0.8) for seed in range(20)]
    assert fmean(distances) < 0.15
    assert len(trials) > STARTUP


def _info(source: str, score: float | None, name: str) -> ParentInfo:
    return ParentInfo(name, source, score)


def test_grammar_tpe_keeps_the_structure_and_signs_and_draws_inside_the_box():
    parent = grammar.render(ast.parse("-0.5 * gap + 2.0 * item", mode="eval").body)
    other = grammar.render(ast.parse("-0.7 * gap + 1.5 * item", mode="eval").body)
    foreign = grammar.render(ast.parse("0.7 * gap + 1.5 * item", mode="eval").body)  # no negation: another structure
    history = [_info(parent, -2.0, "p"), _info(other, -1.0, "o"), _info(foreign, 5.0, "f"), _info(other, None, "n")]
    proposer = GrammarProposer(EvolveConfig(tune_rate=1.0))
    proposal = proposer.propose([history[0]], random.Random(0), history=history)
    assert proposal.operator == "grammar_tpe"
    assert proposal.parent_ids == ("p",)
    assert "TPE over 2 scored programs" in proposal.summary  # the foreign sign and the unscored one are left out
    key, values = shape_of(proposal.source)
    assert key == shape_of(parent)[0]
    assert 0.5 / 4 <= values[0] <= 0.5 * 4 and 2.0 / 4 <= values[1] <= 2.0 * 4
    assert ast.unparse(grammar.parse(proposal.source)).startswith("-")  # the structure's negation stays


def test_without_history_or_at_tune_rate_zero_no_tpe_child_is_drawn():
    parent = grammar.render(ast.parse("-0.5 * gap", mode="eval").body)
    info = _info(parent, -1.0, "p")
    for config, history in ((EvolveConfig(tune_rate=1.0), ()), (EvolveConfig(tune_rate=0.0), (info,))):
        operators = {GrammarProposer(config).propose([info], random.Random(s), history=history).operator
                     for s in range(20)}
        assert "grammar_tpe" not in operators


def test_circle_tpe_changes_only_constants_within_two_steps():
    structure = dict(circle_program.SEED_STRUCTURE, polish="slsqp", hops=2)
    parent = circle_program.render(structure)
    sibling = circle_program.render(dict(structure, squareness=0.6, margin=0.05))
    history = [_info(parent, 2.5, "p"), _info(sibling, 2.6, "s")]
    proposal = GrammarProposer(EvolveConfig(tune_rate=1.0)).propose([history[0]], random.Random(1), history=history)
    assert proposal.operator == "circle_tpe"
    child, base = circle_program.parse(proposal.source), circle_program.parse(parent)
    fixed = [k for k in base if k not in circle_program.CONSTANTS]
    assert {k: child[k] for k in fixed} == {k: base[k] for k in fixed}
    axes = circle_axes(base)
    assert len(axes) == 2 * len(base["counts"]) + 4
    assert all(a.low - 1e-4 <= v <= a.high + 1e-4 for a, v in zip(axes, shape_of(proposal.source)[1]))
    assert shape_of(proposal.source)[0] == shape_of(parent)[0] and proposal.source != parent
