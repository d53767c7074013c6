"""Table name -> row model and key. The store, the catalog and `ratchet sql` read this;
loops that add a table register it here."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from schemas.algoevo import AECardRow, AENodeRow, AEPatternRow, AETaskRunRow
from schemas.mace import MaceInjectionRow, MaceOutputRow, MaceRelationRow, MaceRunRow, MaceUnitRow
from schemas.forge import FGCostRow, FGFailureModeRow, FGPromptRow, FGStagnationRow, FGSynthRow, FGTrajRow
from schemas.limbo import LimboArmRow, LimboMemoryRow, LimboStreamRow
from schemas.rpmem import RPMGateStatRow, RPMQARow, RPMSessionRow, RPMSwapRow
from schemas.rsiagent import RSAMemoryRow, RSAPracticeRow, RSARunRow, RSATestRunRow
from schemas.prior_or_feedback import PofConfigSpaceRow, PofFinalTestRow, PofReplayRow, PofRunRow, PofTrialRow
from schemas.mass import MassEvalRow, MassExecutionRow, MassPairwiseRow, MassSFTExampleRow, MassWorkflowRow
from schemas.arenaflow import AFKeyStepRow, AFMatchRow, AFSkillRow, AFSkillUsageRow, AFTrajectoryRow
from schemas.gai import GAIClassificationRow, GAIComponentRow, GAIVersionRow
from schemas.modular_rsi import (MRSIEvalRow, MRSIFindingRow, MRSIIntegrationRow, MRSIModuleEditRow,
                                 MRSIRolloutRow, MRSITaskGroupRow)
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
        TableSpec("fg_prompts", FGPromptRow, ("run_id", "step", "id")),
        TableSpec("fg_trajs", FGTrajRow, ("run_id", "id")),
        TableSpec("fg_failure_modes", FGFailureModeRow, ("run_id", "ver", "id")),
        TableSpec("fg_synth", FGSynthRow, ("run_id", "inst_id")),
        TableSpec("fg_stagnation", FGStagnationRow, ("run_id", "step")),
        TableSpec("fg_cost", FGCostRow, ("run_id", "step")),
        TableSpec("rpm_sessions", RPMSessionRow, ("run_id", "candidate_id", "user", "idx")),
        TableSpec("rpm_gate_stats", RPMGateStatRow, ("run_id", "candidate_id", "user", "idx")),
        TableSpec("rpm_qa", RPMQARow, ("run_id", "candidate_id", "base", "user", "n_sessions", "key")),
        TableSpec("rpm_swap", RPMSwapRow, ("run_id", "base", "decoder_init", "setting")),
        TableSpec("af_trajectories", AFTrajectoryRow, ("run_id", "traj_id")),
        TableSpec("af_matches", AFMatchRow, ("run_id", "match_id")),
        TableSpec("af_key_steps", AFKeyStepRow, ("run_id", "traj_id", "step_idx")),
        TableSpec("af_skill_usage", AFSkillUsageRow, ("run_id", "traj_id", "skill_id")),
        TableSpec("af_skills", AFSkillRow, ("run_id", "skill_id", "round")),
        TableSpec("pof_runs", PofRunRow, ("run_id", "search_id")),
        TableSpec("pof_trials", PofTrialRow, ("run_id", "search_id", "t")),
        TableSpec("pof_final_test", PofFinalTestRow, ("run_id", "search_id")),
        TableSpec("pof_replays", PofReplayRow, ("run_id", "search_id", "t", "intervention", "replay_no")),
        TableSpec("pof_config_space", PofConfigSpaceRow, ("run_id", "param")),
        TableSpec("gai_components", GAIComponentRow, ("run_id", "flow_id", "component")),
        TableSpec("gai_versions", GAIVersionRow, ("run_id", "flow_id", "ver")),
        TableSpec("gai_classification", GAIClassificationRow, ("run_id", "flow_id")),
        TableSpec("mace_units", MaceUnitRow, ("run_id", "ver", "unit_id")),
        TableSpec("mace_relations", MaceRelationRow, ("run_id", "ver", "src", "dst", "type")),
        TableSpec("mace_injections", MaceInjectionRow, ("run_id", "episode_id", "agent_role")),
        TableSpec("mace_outputs", MaceOutputRow, ("run_id", "episode_id", "agent_role")),
        TableSpec("mace_runs", MaceRunRow, ("run_id", "episode_id")),
        TableSpec("mrsi_rollouts", MRSIRolloutRow, ("run_id", "round", "case_id")),
        TableSpec("mrsi_task_groups", MRSITaskGroupRow, ("run_id", "round", "task_id")),
        TableSpec("mrsi_findings", MRSIFindingRow, ("run_id", "id")),
        TableSpec("mrsi_module_edits", MRSIModuleEditRow, ("run_id", "id")),
        TableSpec("mrsi_integrations", MRSIIntegrationRow, ("run_id", "round")),
        TableSpec("mrsi_evals", MRSIEvalRow, ("run_id", "harness_ver", "task_id")),
        TableSpec("mass_workflows", MassWorkflowRow, ("run_id", "wf_id", "gen")),
        TableSpec("mass_executions", MassExecutionRow, ("run_id", "exec_id")),
        TableSpec("mass_pairwise", MassPairwiseRow, ("run_id", "exec_a", "exec_b")),
        TableSpec("mass_sft_examples", MassSFTExampleRow, ("run_id", "ex_id")),
        TableSpec("mass_evals", MassEvalRow, ("run_id", "model_gen", "bench", "task_id", "trial")),
        TableSpec("limbo_arms", LimboArmRow, ("run_id", "id")),
        TableSpec("limbo_stream", LimboStreamRow, ("run_id", "policy", "t")),
        TableSpec("limbo_memory", LimboMemoryRow, ("run_id", "policy", "entry")),
        TableSpec("ae_cards", AECardRow, ("run_id", "id")),
        TableSpec("ae_nodes", AENodeRow, ("run_id", "task_id", "round", "id")),
        TableSpec("ae_patterns", AEPatternRow, ("run_id", "after_task", "id")),
        TableSpec("ae_task_runs", AETaskRunRow, ("run_id", "position")),
    )
}


def table_spec(name: str) -> TableSpec:
    if name not in TABLES:
        raise KeyError(f"unknown table {name!r}; known tables: {', '.join(sorted(TABLES))}")
    return TABLES[name]
