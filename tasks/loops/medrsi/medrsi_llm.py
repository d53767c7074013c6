"""The medrsi tool builder behind `proposer: llm`: the chat endpoint gets the stable
harness program and a brief of the top-priority failure cluster (the paper's
severity-ranked cluster plus the toolbox API) and answers with an edit of the program.
The edit counts as a tool only if the harness it returns is a literal document that
parses and adds exactly one rule or one skill to the stable one (``added_tool``).

Offline (no RATCHET_LLM_* endpoint) the loop's default, the rule proposer, builds the
tools; this module is never called then. An answer that is not one tool yields no
tool for the round: the build stage records it as an ``llm_unusable`` candidate with the
reason and the raw answer (``tasks.harness_loops.llm_edit.unusable_row``), and the loop goes on."""

from __future__ import annotations

import random
from typing import Any, Sequence

from schemas.configs import EvolveConfig
from tasks.harness_loops.documents import added_tool
from tasks.harness_loops.llm_edit import NoLLMEdit, edited_harness
from tasks.harness_loops.llm_edit import brief as llm_brief
from tasks.loops.medrsi.medrsi_logic import Cluster
from tasks.proposers import Proposal
from tasks.proposers.rule_evidence import Trace

PROMPT = "medrsi_tool.txt"


def brief(cluster: Cluster, traces: Sequence[Trace]) -> str:
    cases = [t for t in traces if t.case_id in cluster.case_ids]
    lines = [f"- {t.case_id}: unmet {list(t.unmet)}, broken {list(t.broken)}, last step "
             f"{t.steps[-1]['name'] if t.steps else None} -> {t.steps[-1]['result_json'] if t.steps else None}"
             for t in cases]
    return llm_brief(PROMPT, cluster=cluster.cluster_id, priority=cluster.priority, cases="\n".join(lines))


def llm_tool(stable_id: str, stable_source: str, stable: dict[str, Any], cluster: Cluster, traces: Sequence[Trace],
             config: EvolveConfig, rng: random.Random) -> tuple[str, dict[str, Any], Proposal]:
    """(edit, item, the call) of the tool the endpoint built for the cluster; raises
    NoLLMEdit with the reason (and the call) when its answer is not one tool."""
    document, call = edited_harness(stable_id, stable_source, brief(cluster, traces), config, rng)
    found = added_tool(stable, document)
    if found is None:
        raise NoLLMEdit("the llm's answer does not add exactly one rule or skill to the stable harness", call)
    edit, item = found
    return edit, item, call
