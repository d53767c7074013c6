"""Every loop runs from `ratchet run` at a tiny budget (parameters through `--set` and
`--param`), registers a champion with a holdout score (a measurement protocol: records its
paired comparison), and answers in `ratchet sql`.
evolve and aide2 have their own CLI tests (test_commands, test_resume, the demo); dream_rsi registers
a policy, not a program with a holdout score (tests/flows/test_dream_rsi.py); evoalloc's default
suite (bin_packing) scores below 0 (tests/flows/test_evoalloc.py runs it from the CLI), and so does
research_world_models' lasso (tests/flows/test_research_world_models.py); algoevo registers one best
program per task on three suites with three scales (tests/flows/test_algoevo.py runs it from the CLI); rsi_anything (bin_packing too) is
in NEGATIVE_ARGS: its registered program's held-out excess over the L1 bound is never negative."""

import json

import pytest
from typer.testing import CliRunner

from cli.main import app

pytestmark = [pytest.mark.integration, pytest.mark.slow]
runner = CliRunner()

TOOLSIM = ["--budget", "1", "--param", "instances_per_template=5"]
TINY_GRPO = ["--budget", "2", "--param", "n_per_category=40", "--set", "grpo.pretrain_steps=10",
             "--set", "grpo.prompts_per_step=2", "--set", "grpo.group_size=2", "--set", "grpo.max_new_tokens=12"]
LOOP_ARGS = {
    "self_healing": TOOLSIM,
    "growing_harness": TOOLSIM,
    "medrsi": [*TOOLSIM, "--set", "medrsi.trial_batches=1", "--set", "medrsi.batch_size=4"],
    "designer_rsi": [*TOOLSIM, "--set", "designer.traffic_batch=4"],
    "graphskillevo": [*TOOLSIM, "--set", "graphskillevo.population=2", "--set", "graphskillevo.offspring=2",
                      "--set", "graphskillevo.batch=4"],
    "grpo": TINY_GRPO,
    "paired_rollouts": [*TINY_GRPO, "--set", "paired_rollouts.probe_every=2"],
    "harness_bandit": [*TINY_GRPO, "--set", "harness_bandit.harnesses=[add, rev]"],
    "ppo_pact": ["--budget", "2", "--param", "n_per_category=40", "--set", "ppo_pact.pretrain_steps=10",
                 "--set", "ppo_pact.prompts_per_step=2", "--set", "ppo_pact.group_size=2",
                 "--set", "ppo_pact.max_new_tokens=12"],
    "opd": ["--budget", "2", "--param", "n_per_category=40", "--set", "opd.teacher_steps=10",
            "--set", "opd.pretrain_steps=10", "--set", "opd.prompts_per_step=2", "--set", "opd.rollouts=2",
            "--set", "opd.max_new_tokens=12", "--set", "opd.method=cal_opd"],
    "rpmem": ["--budget", "1", "--set", "rpmem.select_users=4", "--set", "rpmem.holdout_users=4",
              "--set", "rpmem.compile_steps=5", "--set", "rpmem.merge_steps=2", "--set", "rpmem.swap_steps=2",
              "--set", "rpmem.eval_sessions=3", "--set", "rpmem.batch=4"],
    "rsiagent": [*TOOLSIM, "--set", "rsiagent.tasks_per_round=4", "--set", "rsiagent.params_per_template=1"],
    "forge": [*TOOLSIM, "--set", "forge.batch_size=4", "--set", "forge.patience=1"],
    "skilllift": [*TOOLSIM, "--set", "skilllift.inner_iterations=3", "--set", "skilllift.top_k=2"],
    "moscopt": [*TOOLSIM, "--param", "version=2", "--set", "moscopt.k=2"],
    "limbo": ["--budget", "6", "--param", "instances_per_template=5", "--set", "limbo.block=3",
              "--set", "limbo.fixed_arms=[none-lean]", "--set", "limbo.resamples=100"],
    "arenaflow": [*TOOLSIM, "--set", "arenaflow.batch=4", "--set", "arenaflow.group_size=4"],
    "mace": [*TOOLSIM, "--set", "mace.batch=4"],
    "modular_rsi": [*TOOLSIM, "--set", "modular_rsi.pool_templates=2", "--set", "modular_rsi.batch=4"],
    "mass": [*TOOLSIM, "--set", "mass.children=2", "--set", "mass.repeats=1"],
    "cover": ["--budget", "1", "--set", "cover.problems=2", "--set", "cover.programs=4", "--set", "cover.tests=6",
              "--set", "cover.pool_size=3", "--set", "cover.case_timeout_s=0.3"],
    "codemidas": ["--budget", "1", "--set", "codemidas.modules=[colorsys]", "--set", "codemidas.per_round=1",
                  "--set", "codemidas.site_mutants=2", "--set", "codemidas.n_tests=8"],
}
PROTOCOL_ARGS = {
    "harness_or_model": ["--budget", "1", "--param", "instances_per_template=2"],
    "better_turns": ["--budget", "2", "--param", "instances_per_template=2"],
    "datasense": ["--budget", "1", "--param", "n_per_category=30", "--set", "datasense.pool_size=50",
                  "--set", "datasense.base_steps=5", "--set", "datasense.sft_steps=4", "--set", "datasense.batch_size=4",
                  "--set", "datasense.random_subsets=2", "--set", "datasense.selectors=[random, loss]"],
    "trace": ["--budget", "1", "--param", "instances_per_template=1"],
    "dense": ["--budget", "1", "--param", "instances_per_template=2", "--set", "dense.methods=[none, tree]"],
    "prior_or_feedback": ["--budget", "1", "--param", "train=6", "--param", "select=4", "--param", "holdout=4",
                          "--set", "prior_or_feedback.conditions=[burgers:0.1->burgers:0.02]",
                          "--set", "prior_or_feedback.trials=4", "--set", "prior_or_feedback.tpe_startup=2",
                          "--set", "prior_or_feedback.decision_points=[4]", "--set", "prior_or_feedback.cold_starts=[]"],
    "gai": ["--budget", "1", "--set", "gai.resamples=200"],
}
"""Measurement protocols register no champion: their result is the gate's paired comparison (gai's:
the CI of each audited flow's internal − external gap, so it runs after the loops above)."""
NEGATIVE_ARGS = {
    "rsi_anything": ["--budget", "1", "--param", "datasets=or1", "--set", "rsi_anything.warmup=2",
                     "--set", "rsi_anything.val_batches=1", "--set", "rsi_anything.val_children=2"],
}
"""Loops on bin_packing: the champion's held-out `neg_excess_pct` is at most 0 (L1 is a lower bound)."""


@pytest.fixture(scope="module")
def store(prefect_server, tmp_path_factory):
    return str(tmp_path_factory.mktemp("every_loop") / "store")


def test_the_table_covers_every_loop_without_its_own_cli_test():
    from flows import LOOPS

    assert set(LOOPS) - {"evolve", "aide2", "dream_rsi", "evoalloc", "research_world_models", "algoevo"} == \
        set(LOOP_ARGS) | set(PROTOCOL_ARGS) | set(NEGATIVE_ARGS)


@pytest.mark.parametrize("loop", sorted({**LOOP_ARGS, **NEGATIVE_ARGS}))
def test_loop_runs_from_the_cli_and_registers_a_champion(store, loop):
    """Held-out score in [0, 1]; bin_packing's (NEGATIVE_ARGS) is minus the excess %, in (-100, 0]."""
    args = LOOP_ARGS.get(loop) or NEGATIVE_ARGS[loop]
    result = runner.invoke(app, ["run", loop, "--store", store, "--no-tracking", *args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    query = (f"SELECT r.run_id, max(g.holdout_score) AS holdout FROM runs r JOIN registry g USING (run_id) "
             f"WHERE r.loop = '{loop}' AND g.holdout_score IS NOT NULL GROUP BY r.run_id")
    answer = runner.invoke(app, ["sql", query, "--store", store, "--format", "json"])
    assert answer.exit_code == 0, answer.output
    (row,) = json.loads(answer.output)
    assert (-100.0 < row["holdout"] <= 0.0) if loop in NEGATIVE_ARGS else (0.0 <= row["holdout"] <= 1.0)


@pytest.mark.parametrize("loop", sorted(PROTOCOL_ARGS))
def test_protocol_runs_from_the_cli_and_answers_with_paired_cis(store, loop):
    result = runner.invoke(app, ["run", loop, "--store", store, "--no-tracking", *PROTOCOL_ARGS[loop]])
    assert result.exit_code == 0, result.output + repr(result.exception)
    query = (f"SELECT g.gate, g.ci_low, g.delta, g.ci_high FROM runs r JOIN gate_decisions g USING (run_id) "
             f"WHERE r.loop = '{loop}' AND g.ci_low IS NOT NULL")
    answer = runner.invoke(app, ["sql", query, "--store", store, "--format", "json"])
    assert answer.exit_code == 0, answer.output
    rows = json.loads(answer.output)
    assert rows and all(r["ci_low"] <= r["delta"] <= r["ci_high"] for r in rows)
