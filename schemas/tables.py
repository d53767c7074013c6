"""Table name -> row model and key. The store, the catalog and `ratchet sql` read this;
loops that add a table register it here."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from schemas.rpmem import RPMGateStatRow, RPMQARow, RPMSessionRow, RPMSwapRow
from schemas.rsiagent import RSAMemoryRow, RSAPracticeRow, RSARunRow, RSATestRunRow
from schemas.arenaflow import AFKeyStepRow, AFMatchRow, AFSkillRow, AFSkillUsageRow, AFTrajectoryRow
from schemas.graphskillevo import GSEPopulationRow, GSESkillRow, GSETestRow, GSETrainRunRow, GSEValScoreRow
from schemas.rsi_anything import PairCheckRow, RSICandidateRow, RSIExecutionRow, WMVersionRow
from schemas.rows import (
    AttemptRow,
    CandidateRow,
    CaseRow,
    ClosedLoopRow,
    DecisionRow,
    DistillateRow,
    ExecutionRow,
    GateDecisionRow,
    IssueRow,
    NodeRow,
    RegistryRow,
    RunRow,
    ScoreRow,
    StepRow,
    TrainStepRow,
    TreeNodeRow,
)


@dataclass(frozen=True)
class TableSpec:
    name: str
    model: type[BaseModel]
    key: tuple[str, ...]


TABLES: dict[str, TableSpec] = {
    spec.name: spec
    for spec in (
        TableSpec("runs", RunRow, ("run_id", "status", "event_at")),
        TableSpec("candidates", CandidateRow, ("run_id", "candidate_id")),
        TableSpec("cases", CaseRow, ("run_id", "suite", "case_id")),
        TableSpec("executions", ExecutionRow, ("run_id", "execution_id")),
        TableSpec("scores", ScoreRow, ("run_id", "execution_id", "metric")),
        TableSpec("steps", StepRow, ("run_id", "execution_id", "step")),
        TableSpec("distillates", DistillateRow, ("run_id", "distillate_id", "round", "status")),
        TableSpec("gate_decisions", GateDecisionRow, ("run_id", "decision_id")),
        TableSpec("registry", RegistryRow, ("run_id", "name", "version")),
        TableSpec("train_steps", TrainStepRow, ("run_id", "candidate_id", "step")),
        TableSpec("nodes", NodeRow, ("run_id", "node_id")),
        TableSpec("decisions", DecisionRow, ("run_id", "candidate_id", "conv_id", "turn")),
        TableSpec("closed_loop", ClosedLoopRow, ("run_id", "candidate_id", "conv_id")),
        TableSpec("attempts", AttemptRow, ("run_id", "task_id", "repeat", "phase", "feedback_method")),
        TableSpec("tree_nodes", TreeNodeRow, ("run_id", "fb_id", "node_id")),
        TableSpec("issues", IssueRow, ("run_id", "fb_id", "node_id", "step")),
        TableSpec("gse_skills", GSESkillRow, ("run_id", "skill_id")),
        TableSpec("gse_train_runs", GSETrainRunRow, ("run_id", "gen", "skill_id", "task_id")),
        TableSpec("gse_val_scores", GSEValScoreRow, ("run_id", "skill_id")),
        TableSpec("gse_population", GSEPopulationRow, ("run_id", "gen", "skill_id")),
        TableSpec("gse_test", GSETestRow, ("run_id", "skill_id", "task_id")),
        TableSpec("rsi_candidates", RSICandidateRow, ("run_id", "round", "phase", "batch", "policy_ver", "cand_id")),
        TableSpec("rsi_executions", RSIExecutionRow, ("run_id", "phase", "round", "cand_id", "parent_id")),
        TableSpec("wm_versions", WMVersionRow, ("run_id", "round", "ver")),
        TableSpec("pair_checks", PairCheckRow, ("run_id", "round")),
        TableSpec("rsa_practice", RSAPracticeRow, ("run_id", "task_id")),
        TableSpec("rsa_runs", RSARunRow, ("run_id", "id")),
        TableSpec("rsa_memory", RSAMemoryRow, ("run_id", "ver", "entry_id")),
        TableSpec("rsa_test_runs", RSATestRunRow, ("run_id", "task_id", "arm")),
        TableSpec("rpm_sessions", RPMSessionRow, ("run_id", "candidate_id", "user", "idx")),
        TableSpec("rpm_gate_stats", RPMGateStatRow, ("run_id", "candidate_id", "user", "idx")),
        TableSpec("rpm_qa", RPMQARow, ("run_id", "candidate_id", "base", "user", "n_sessions", "key")),
        TableSpec("rpm_swap", RPMSwapRow, ("run_id", "base", "decoder_init", "setting")),
        TableSpec("af_trajectories", AFTrajectoryRow, ("run_id", "traj_id")),
        TableSpec("af_matches", AFMatchRow, ("run_id", "match_id")),
        TableSpec("af_key_steps", AFKeyStepRow, ("run_id", "traj_id", "step_idx")),
        TableSpec("af_skill_usage", AFSkillUsageRow, ("run_id", "traj_id", "skill_id")),
        TableSpec("af_skills", AFSkillRow, ("run_id", "skill_id", "round")),
    )
}


def table_spec(name: str) -> TableSpec:
    if name not in TABLES:
        raise KeyError(f"unknown table {name!r}; known tables: {', '.join(sorted(TABLES))}")
    return TABLES[name]
