"""One ModularRSI round and its ablation on the real (trusted, in-process) toolsim
simulation: findings route to modules, every module edits the same base, the gate's
evidence is kept, integration yields the next base."""

from suites.toolsim.suite import ToolSim
from tasks.harness_loops.documents import literal_document
from tasks.loops.modular_rsi.evolve import case_literals, version
from tasks.loops.modular_rsi.modules import module_diff
from tasks.loops.modular_rsi.rounds import evolve, modular_round, monolithic_round
from tasks.proposers.rule_evidence import trace_of

SUITE = ToolSim(instances_per_template=10, fault_rate=0.3)
SEED = literal_document(SUITE.seed_program())
POOL = [c for c in SUITE.cases() if c.split == "train"]
LITERALS = case_literals([c.payload for c in POOL])


def run(document, cases):
    return {c.case_id: trace_of(c.case_id, c.payload, SUITE.episode(c, {"harness": document})) for c in cases}


def test_modular_round_edits_each_routed_module_from_the_same_base():
    result = modular_round(SEED, POOL, run, LITERALS, max_steps=40, min_support=1)
    modules = [g.edit.module for g in result.gated]
    assert len(modules) == len(set(modules)) >= 2
    assert {g.edit.base_ver for g in result.gated} == {version(SEED)}
    assert set(modules) <= {f.module for f in result.findings}
    for gated in result.gated:
        assert list(module_diff(SEED, gated.edit.document)) == [gated.edit.module]
        assert gated.run[1].count("/") >= 2 or not (gated.static[0] and gated.overfit[0])  # two named tasks
    accepted = {g.edit.module for g in result.gated if g.accepted}
    assert set(module_diff(SEED, result.harness)) <= accepted


def test_monolithic_round_chains_edits_and_rounds_carry_the_harness():
    result = monolithic_round(SEED, POOL, run, LITERALS, max_steps=40, min_support=1)
    accepted = [g for g in result.gated if g.accepted]
    assert accepted and result.harness == accepted[-1].edit.document
    assert [g.edit.base_ver for g in result.gated][0] == version(SEED)
    rounds = evolve(SEED, [POOL[::2], POOL[1::2]], run, LITERALS, 40, modular=True, min_support=1)
    assert rounds[1].base == rounds[0].harness
