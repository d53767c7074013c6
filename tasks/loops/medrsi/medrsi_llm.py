"""The medrsi tool builder behind `proposer: llm`: the chat endpoint gets the stable
harness program and a brief of the top-priority failure cluster (the paper's
severity-ranked cluster plus the toolbox API) and answers with an edit of the program.
The edit counts as a tool only if the harness it returns is a literal document that
parses and adds exactly one rule or one skill to the stable one (``added_tool``).

Offline (no RATCHET_LLM_* endpoint) the loop's default, the rule proposer, builds the
tools; this module is never called then. An answer that is not one tool yields no
tool for the round, with the reason returned for the progress log."""

from __future__ import annotations

import json
import random
from typing import Any, Sequence

from schemas.configs import EvolveConfig
from suites.toolsim.harness import HarnessError, parse_harness
from tasks.harness_loops.documents import added_tool, literal_document
from tasks.loops.medrsi.medrsi_logic import Cluster
from tasks.proposers import DiffError, LLMProposer, ParentInfo
from tasks.proposers.rule_evidence import Trace

BRIEF = """You improve a toolsim customer-service agent by adding ONE tool to its harness.
A tool is one rule (trigger + action) or one skill (a template's procedure), in the
harness format of suites/toolsim/harness.py. `harness()` must return a literal mapping.
Keep every existing rule and skill; add exactly one.

Failure cluster {cluster} (priority {priority:g} = failures x severity cost), its cases:
{cases}"""


def brief(cluster: Cluster, traces: Sequence[Trace]) -> str:
    cases = [t for t in traces if t.case_id in cluster.case_ids]
    lines = [f"- {t.case_id}: unmet {list(t.unmet)}, broken {list(t.broken)}, last step "
             f"{t.steps[-1]['name'] if t.steps else None} -> {t.steps[-1]['result_json'] if t.steps else None}"
             for t in cases]
    return BRIEF.format(cluster=cluster.cluster_id, priority=cluster.priority, cases="\n".join(lines))


def llm_tool(stable_id: str, stable_source: str, stable: dict[str, Any], cluster: Cluster, traces: Sequence[Trace],
             config: EvolveConfig, rng: random.Random) -> tuple[str, dict[str, Any], str] | str:
    """(edit, item, rationale) of the tool the endpoint built for the cluster, or the
    reason its answer is not one tool."""
    proposer = LLMProposer(config, task_description=brief(cluster, traces), entrypoint="harness")
    try:
        proposal = proposer.propose([ParentInfo(stable_id, stable_source, None)], rng)
        document = literal_document(proposal.source)
        parse_harness(document)
    except (DiffError, ValueError, HarnessError) as exc:  # HarnessError is a ValueError; named for the reader
        return f"the llm's answer is not a valid harness: {exc}"
    found = added_tool(stable, document)
    if found is None:
        return "the llm's answer does not add exactly one rule or skill to the stable harness"
    edit, item = found
    return edit, item, proposal.summary + " | " + json.dumps(item, sort_keys=True)[:200]
