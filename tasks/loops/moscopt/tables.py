"""The rows of moscopt's tables (``distillates`` rows with ``kind`` = the table name and
JSON ``content``; the columns are listed in ``stages``). Pure, but for the store read of
``kind_rows``."""

from __future__ import annotations

import json
from typing import Mapping, Sequence

from schemas.ids import derived_id
from schemas.rows import DistillateRow
from tasks.loops.moscopt.edits import Memory
from tasks.loops.moscopt.loop import Outcome, Round, mean_success
from tasks.loops.moscopt.pool import State
from tasks.runtime.context import RunRef
from tasks.runtime.parts import distillate

SKILLS, STATS, GATING, SELECTIONS, EDITS, EPISODES, STATE = (
    "moscopt_skills", "moscopt_skill_stats", "moscopt_gating", "moscopt_selections", "moscopt_edits",
    "moscopt_episodes", "moscopt_state")


def state_body(state: State, memory: Memory, stats: Mapping[str, tuple[int, int]], catalogue: Mapping) -> dict:
    """What the next round reads: the state, EditAdam's memory, the statistics, the catalogue."""
    return {"round": 0, "pool": list(state.pool.values()), "gating": state.gating, "rejected": sorted(memory.rejected),
            "experience": dict(sorted(memory.experience.items())), "stats": {s: list(v) for s, v in sorted(stats.items())},
            "catalogue": dict(catalogue)}


def skill_rows(ref: RunRef, round_index: int, state: State, parents: Mapping[str, list[str]], origin: str,
               only: Sequence[str] | None = None) -> list[DistillateRow]:
    return [distillate(ref, SKILLS, round_index, {"id": s, "ver": round_index, "text": json.dumps(b, sort_keys=True),
                                           "summary": b["summary"], "parents": parents.get(s, []), "origin": origin}, s)
            for s, b in state.pool.items() if only is None or s in only]


def outcome_rows(ref: RunRef, round_index: int, arm: str, outcomes: Sequence[Outcome], state: State) -> list[DistillateRow]:
    """An episode row and a selection row per outcome (G selects once per task here: its
    features are the template's, so step 0 is every step)."""
    out, g_ver = [], state.gating_id()
    for o in outcomes:
        episode = derived_id(round_index, arm, o.case_id, state.state_id())
        out.append(distillate(ref, EPISODES, round_index, {"id": episode, "round": round_index, "task_id": o.case_id,
                                                    "split": "train" if arm == "train" else "select", "arm": arm, "success": o.success, "reruns": 0},
                       arm, o.case_id))
        out.append(distillate(ref, SELECTIONS, round_index, {"episode": episode, "step": 0, "g_ver": g_ver,
                                                      "skill_ids": list(o.loaded)}, "sel", arm, o.case_id))
    return out


def round_rows(ref: RunRef, rd: Round, before: State) -> list[DistillateRow]:
    """Every table's rows of one round (the state row aside)."""
    r = rd.index
    rows = [*outcome_rows(ref, r, "train", rd.train, before), *outcome_rows(ref, r, "select", rd.before, before),
            *[distillate(ref, STATS, r, {"round": r, "id": s, "n_active": n, "n_success": k}, s) for s, (n, k) in sorted(rd.stats.items())]]
    if rd.edit is not None:
        accepted = rd.outcome.decision == "accept"
        new = [s for s in rd.edit.state.pool if s not in before.pool]
        parents = {s: [p for p in rd.edit.parents if p in before.pool] for s in new}
        rows += [*outcome_rows(ref, r, "select-edited", rd.after, rd.edit.state),
                 *skill_rows(ref, r, rd.edit.state, parents, rd.edit.operator, new),
                 distillate(ref, EDITS, r, {"id": rd.edit.key, "round": r, "stage": rd.edit.stage, "operator": rd.edit.operator,
                                     "target": rd.edit.target, "diff": rd.edit.diff, "val_before": mean_success(rd.before),
                                     "val_after": mean_success(rd.after), "accepted": accepted})]
    held = rd.after if rd.edit is not None and rd.state is rd.edit.state else rd.before
    rows.append(distillate(ref, GATING, r, {"ver": rd.state.gating_id(), "round": r, "text": json.dumps(rd.state.gating, sort_keys=True),
                                     "val": mean_success(held)}))
    return rows
