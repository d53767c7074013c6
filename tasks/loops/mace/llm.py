"""MACE's unit writer behind `proposer: llm`: a failed trajectory in, one functional unit
(condition, action, output) out (``tasks/proposers/prompts/mace_units.txt``). The answer
must be a valid harness adding one rule or skill to the empty harness; anything else is
no unit (``NoLLMEdit``): none mined, and the answer an ``llm_unusable`` candidate. Offline the rule proposer's mining
(``memory.mine_units``) is the default and this module is never called.

Not implemented: the paper's second LLM role (rendering the selected units as text in the
chosen form); the forms here are harness transformations (``forms.py``)."""

from __future__ import annotations

import random
from typing import Sequence

from schemas.configs import EvolveConfig
from schemas.ids import content_id
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.llm_edit import NoLLMEdit, brief, edited_harness
from tasks.loops.mace.memory import EMPTY_HARNESS, Unit, item_body, role_of
from tasks.proposers.rule_evidence import Trace

PROMPT = "mace_units.txt"


def unit_brief(trace: Trace) -> str:
    lines = [f"{s['step']}. {s['name']} ok={s['ok']} {str(s.get('result_json', ''))[:160]}" for s in trace.steps]
    return brief(PROMPT, template=trace.template, unmet=", ".join(trace.unmet) or "-",
                 broken=", ".join(trace.broken) or "-", trajectory="\n".join(lines[-20:]) or "(no steps)")


def llm_units(traces: Sequence[Trace], config: EvolveConfig, rng: random.Random,
              refused: list[NoLLMEdit] | None = None) -> list[Unit]:
    """One unit per failed trace whose answer adds exactly one item (deduplicated by id);
    why every other answer gave none is appended to ``refused`` (with its call)."""
    source = harness_source(EMPTY_HARNESS)
    units: dict[str, Unit] = {}
    refused = [] if refused is None else refused
    for trace in (t for t in traces if not t.success):
        try:
            document, call = edited_harness(content_id(source), source, unit_brief(trace), config, rng)
        except NoLLMEdit as why:
            refused.extend([why] if why.asked else [])
            continue
        items = [("rule", r) for r in document.get("rules", [])] + [("skill", s) for s in document.get("skills", [])]
        if len(items) != 1:
            refused.append(NoLLMEdit(f"the llm's answer adds {len(items)} items, not one unit", call))
            continue
        kind, item = items[0]
        uid = content_id(item_body(item))
        item = {**item, "id": f"u-{uid[:10]}"} if kind == "rule" else {**item, "name": f"u-{uid[:10]}"}
        units[uid] = Unit(uid, role_of(kind, item), kind, item, (trace.template,), str(item.get("note", ""))[:300])
    return sorted(units.values(), key=lambda u: u.unit_id)
