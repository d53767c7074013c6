"""Stage tasks of the medrsi loop, first half: plant (the seed harness is the first
stable toolbox), diagnose (run the stable harness on the discovery cases; failures
with severity, cluster and priority), build (the rule proposer, or the chat endpoint
under ``proposer: llm``, turns the top-priority cluster it can act on into one tool)
and discover (run stable + tool on the discovery cases). The gates and the registry
are in ``tasks/loops/medrsi/medrsi_gate.py``; the pure logic, and how it departs from the paper,
in ``tasks/loops/medrsi/medrsi_logic.py``.

Tables: a failure is a ``distillates`` row of kind "failure" (content: case, round,
prediction, label, severity, cluster, priority); a tool is a ``distillates`` row of
kind "tool" whose id is the candidate harness (stable + tool) and whose status events
are proposed -> experimental -> stable | retired | retested (a re-frozen version
replaces a retested one). A candidate is scored once per case: every run goes through
``run_on``, which runs only the cases the candidate has no score for yet."""

from __future__ import annotations

import json
import random
from typing import Sequence

from prefect import task

from schemas.ids import derived_id, seed_for
from schemas.rows import CandidateRow, DistillateRow
from suites.base import Case
from tasks.gate.stage import current_champion, registry_name
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.episodes import episodes, executions_of, harness_document, record_steps
from tasks.harness_loops.llm_edit import NoLLMEdit, costed_summary, is_unusable, unusable_row
from tasks.harness_loops.metrics import case_metrics
from tasks.harness_loops.seed import publish_seed
from tasks.loops.medrsi.medrsi_llm import llm_tool
from tasks.loops.medrsi.medrsi_logic import (
    Cluster,
    Metrics,
    failures_of,
    rank_clusters,
    stream_order,
    tool_edit,
    tool_id,
    tool_item,
    with_tool,
)
from tasks.proposers.llm import call_cost
from tasks.proposers.rule_evidence import Evidence, Trace, Trial, trace_of
from tasks.proposers.rules import NoRuleEvidence, RuleProposal, RuleProposer
from tasks.runtime.context import RunRef, anchored_scorer_version, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.execute import part_key, run_candidates
from tasks.stages.score import score_candidates

DISCOVERY = "disc"
LIFECYCLE = ("proposed", "experimental", "retested", "retired", "stable")
"""Tool statuses in the order they can follow each other within one round."""
PROPOSALS_PER_CLUSTER = 4


def round_key(round_index: int) -> str:
    return f"r{round_index:04d}"


# -- evaluation ------------------------------------------------------------------------


def run_on(ref: RunRef, prefix: str, candidate_id: str, cases: Sequence[Case], steps: bool = False) -> None:
    """Run and score the candidate on the cases it has no score for yet (idempotent:
    a published part under this prefix is completed, never re-planned)."""
    store, tag = store_for(ref.store_uri), f"{prefix}-{candidate_id[:20]}"
    if not store.has_part("executions", ref.run_id, "execute", part_key(tag, candidate_id)):
        done = {s.case_id for s in store.read_rows("scores", ref.run_id) if s.candidate_id == candidate_id}
        cases = [c for c in cases if c.case_id not in done]
        if not cases:
            return
        run_candidates(ref, tag, [candidate_id], cases)
    score_candidates(ref, tag, [candidate_id])
    if steps:
        record_steps(ref, tag, candidate_id)


def metrics_of(ref: RunRef, candidate_id: str) -> dict[str, dict[str, float]]:
    """Every scored case of the candidate, whatever run produced it."""
    splits = ("train", "select", "protected", "holdout", "test")
    return case_metrics(store_for(ref.store_uri).read_rows("scores", ref.run_id), candidate_id, splits)


def discovery_cases(ref: RunRef) -> list[Case]:
    return cases_by_split(run_suite(ref), "train")


def request_stream(ref: RunRef) -> list[str]:
    """Case ids of the later request batches, in arrival order."""
    ids = [c.case_id for c in cases_by_split(run_suite(ref), "select", "protected")]
    return stream_order(ids, run_config(ref).seed)


def discovery_traces(ref: RunRef, candidate_id: str) -> list[Trace]:
    tag = f"{DISCOVERY}-{candidate_id[:20]}"
    found = episodes(ref, executions_of(ref, tag, candidate_id))
    return sorted((trace_of(case.case_id, case.payload, ep) for _, case, ep in found), key=lambda t: t.case_id)


def stable_id(ref: RunRef) -> str | None:
    """The current stable harness: the latest holder of the champion alias."""
    held = current_champion(store_for(ref.store_uri).read_rows("registry", ref.run_id), registry_name(run_config(ref)))
    return held.candidate_id if held else None


# -- tool rows -------------------------------------------------------------------------


def tool_rows(ref: RunRef) -> list[DistillateRow]:
    return [r for r in store_for(ref.store_uri).read_rows("distillates", ref.run_id) if r.kind == "tool"]


def latest_status(rows: Sequence[DistillateRow]) -> dict[str, DistillateRow]:
    """Tool version id -> its latest status event (later round, then later in LIFECYCLE)."""
    latest: dict[str, DistillateRow] = {}
    for row in sorted(rows, key=lambda r: (r.round, LIFECYCLE.index(r.status))):
        latest[row.distillate_id] = row
    return latest


def pool(ref: RunRef) -> list[DistillateRow]:
    """The experimental pool: tool versions whose latest status is experimental, in
    admission order."""
    held = [r for r in latest_status(tool_rows(ref)).values() if r.status == "experimental"]
    return sorted(held, key=lambda r: (json.loads(r.content)["admitted_round"], r.distillate_id))


def tool_spec(row: DistillateRow) -> dict:
    return json.loads(row.content)


def publish_tool(ref: RunRef, stage: str, key: str, round_index: int, stable: str, spec: dict, operator: str,
                 status: str, call: dict | None = None) -> str:
    """Freeze a tool version: the candidate harness (stable + tool) as a blob, its
    candidate row and its tool row; returns the candidate id. ``call``: the cost of the
    LLM call that built the tool (``call_cost``), for the version it built, not a refreeze."""
    store, suite = store_for(ref.store_uri), run_suite(ref)
    document = with_tool(harness_document(ref, stable), spec["edit"], spec["item"])
    blob = store.put_blob(harness_source(document).encode())
    frozen = {"tool_id": spec["tool_id"], "code_id": blob, "stable_version": stable,
              "deps_id": anchored_scorer_version(ref), "weights_id": None}
    spec = {**spec, "frozen": frozen, "admitted_round": round_index}
    candidate = CandidateRow(
        run_id=ref.run_id, candidate_id=blob, round=round_index, parent_ids=[stable], operator=operator,
        proposer=spec["proposer"], artifact_kind=suite.artifact_kind, artifact_uri=store.blob_uri(blob), island=-1,
        summary=spec["rationale"], **(call or call_cost(None)),
    )
    row = DistillateRow(run_id=ref.run_id, distillate_id=blob, round=round_index, kind="tool",
                        content=json.dumps(spec, sort_keys=True), uri=store.blob_uri(blob), source_execution_ids=[],
                        support=len(spec["triggers"]), status=status)
    store.write_part("distillates", ref.run_id, stage, key, [row])
    store.write_part("candidates", ref.run_id, stage, key, [candidate])
    return blob


# -- stages ----------------------------------------------------------------------------


@task(name="plant", **STAGE_OPTIONS)
def plant(ref: RunRef) -> str:
    """Round 0: publish the suite's seed harness, the first stable toolbox."""
    seed = publish_seed(ref, "plant", round_key(0), "the suite's seed harness: the first stable toolbox")
    run_on(ref, DISCOVERY, seed, discovery_cases(ref), steps=True)
    return seed


def failure_rows(ref: RunRef, round_index: int, stable: str, metrics: Metrics) -> list[DistillateRow]:
    traces = discovery_traces(ref, stable)
    failures = failures_of(traces, {c: m["cost"] for c, m in metrics.items()})
    clusters = {c.cluster_id: c for c in rank_clusters(failures)}
    ids = {e.case_id: e.execution_id for e in executions_of(ref, f"{DISCOVERY}-{stable[:20]}", stable)}
    by_case = {t.case_id: t for t in traces}
    return [
        DistillateRow(
            run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "failure", round_index, f.case_id),
            round=round_index, kind="failure", uri=None, source_execution_ids=[ids[f.case_id]], support=1,
            status="observed", content=json.dumps({
                "case_id": f.case_id, "round": round_index, "stable": stable, "template": f.template,
                "pred": by_case[f.case_id].progress, "label": 1.0, "severity": f.cost, "cluster_id": f.cluster_id,
                "cluster_size": len(clusters[f.cluster_id].case_ids), "priority": clusters[f.cluster_id].priority,
            }, sort_keys=True),
        )
        for f in failures
    ]


@task(name="diagnose", **STAGE_OPTIONS)
def diagnose(ref: RunRef, round_index: int) -> str:
    """The stable harness diagnoses the discovery cases; its failures are recorded with
    their severity, cluster and cluster priority. Returns the stable harness's id."""
    stable = stable_id(ref)
    if stable is None:
        raise LookupError(f"run {ref.run_id}: round {round_index} has no stable harness; plant the seed first")
    run_on(ref, DISCOVERY, stable, discovery_cases(ref), steps=True)
    once(ref, "distillates", "diagnose", round_key(round_index),
         lambda: failure_rows(ref, round_index, stable, metrics_of(ref, stable)))
    return stable


def built_keys(ref: RunRef) -> list[Trial]:
    """Every tool built so far, as 'rejected' trials, so the proposer never re-builds one."""
    trials = []
    for row in tool_rows(ref):
        spec = tool_spec(row)
        trials.append(Trial(RuleProposal({}, (), "", spec["operator"], spec["key"], "", 0), ()))
    return trials


def propose_tool(traces: Sequence[Trace], clusters: Sequence[Cluster], document: dict, excluded: list[Trial],
                 rng: random.Random) -> tuple[Cluster, RuleProposal, str] | None:
    """The first tool the proposer derives, trying clusters by priority: (cluster,
    proposal, edit). Revisions and removals are skipped (they are not tools)."""
    successes = [t for t in traces if t.success]
    for cluster in clusters:
        members = [t for t in traces if t.case_id in cluster.case_ids]
        skipped = list(excluded)
        for _ in range(PROPOSALS_PER_CLUSTER):
            try:
                proposal = RuleProposer().propose(Evidence.of([*members, *successes], skipped), document, rng)
            except NoRuleEvidence:
                break
            edit = tool_edit(proposal)
            if edit is not None:
                return cluster, proposal, edit
            skipped.append(Trial(proposal, ()))
    return None


def rule_tool(traces: Sequence[Trace], clusters: Sequence[Cluster], document: dict, excluded: list[Trial],
              rng: random.Random) -> dict | None:
    """The rule proposer's tool spec, from the first cluster it can act on."""
    found = propose_tool(traces, clusters, document, excluded, rng)
    if found is None:
        return None
    cluster, proposal, edit = found
    item = tool_item(proposal, edit)
    return {"tool_id": tool_id(edit, item), "edit": edit, "item": item, "operator": proposal.operator,
            "proposer": RuleProposer.name, "key": proposal.key, "cluster_id": cluster.cluster_id,
            "priority": cluster.priority, "triggers": list(proposal.triggers), "rationale": proposal.rationale}


def chat_tool(ref: RunRef, stable: str, traces: Sequence[Trace], clusters: Sequence[Cluster], document: dict,
              rng: random.Random) -> dict | None:
    """The chat endpoint's tool spec for the top-priority cluster (``proposer: llm``); None
    with no cluster; raises NoLLMEdit (logged) when its answer is not one new tool."""
    if not clusters:
        return None
    source = store_for(ref.store_uri).get_blob(stable).decode()
    try:
        edit, item, call = llm_tool(stable, source, document, clusters[0], traces, run_config(ref).evolve, rng)
        if tool_id(edit, item) in {tool_spec(r)["tool_id"] for r in tool_rows(ref)}:
            raise NoLLMEdit("the llm's tool is an existing tool", call)
    except NoLLMEdit as reason:
        reporter().advance(0, f"no tool: {reason}")
        raise
    rationale = costed_summary(ref, call, " | " + json.dumps(item, sort_keys=True)[:200])
    return {"tool_id": tool_id(edit, item), "edit": edit, "item": item, "operator": "llm_tool", "proposer": "llm",
            "key": tool_id(edit, item), "cluster_id": clusters[0].cluster_id, "priority": clusters[0].priority,
            "triggers": list(clusters[0].case_ids), "rationale": rationale, "call": call_cost(call)}


@task(name="build", **STAGE_OPTIONS)
def build(ref: RunRef, round_index: int, stable: str) -> str | None:
    """Build one tool from the highest-priority failure cluster the builder can act
    on; None when the pool is full or no cluster yields a new tool."""
    store, config = store_for(ref.store_uri), run_config(ref)
    key = round_key(round_index)
    if store.has_part("candidates", ref.run_id, "build", key):
        written = store.read_part("candidates", ref.run_id, "build", key)[0]
        return None if is_unusable(written) else written.candidate_id
    if len(pool(ref)) >= config.medrsi.pool_capacity:
        return None
    traces, document = discovery_traces(ref, stable), harness_document(ref, stable)
    costs = {c: m["cost"] for c, m in metrics_of(ref, stable).items()}
    clusters = rank_clusters(failures_of(traces, costs))
    rng = random.Random(seed_for(config.seed, "build", round_index))
    if config.proposer == "llm":
        try:
            spec = chat_tool(ref, stable, traces, clusters, document, rng)
        except NoLLMEdit as reason:  # the answer is recorded, never executed; the round goes on
            store.write_part("candidates", ref.run_id, "build", key, [unusable_row(ref, round_index, stable, reason)])
            return None
    else:
        spec = rule_tool(traces, clusters, document, built_keys(ref), rng)
    if spec is None or spec["tool_id"] in {tool_spec(r)["tool_id"] for r in tool_rows(ref)}:
        return None
    call = spec.pop("call", None)  # the row's columns, not the tool's spec
    candidate = publish_tool(ref, "build", key, round_index, stable, spec, spec["operator"], "proposed", call)
    reporter().advance(0, f"round {round_index}: built {spec['operator']} for {spec['cluster_id']}")
    return candidate


@task(name="discover", **STAGE_OPTIONS)
def discover(ref: RunRef, round_index: int, candidate: str) -> None:
    """Execute: run stable + tool on the discovery cases (paired with the stable runs)."""
    run_on(ref, DISCOVERY, candidate, discovery_cases(ref), steps=True)

