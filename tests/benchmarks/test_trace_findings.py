"""The TRACE findings' table and claims on hand-built verdict rows: each claim reads the
(agent, condition, grader) it names, and one that does not hold is reported as such."""

from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "trace_findings.py"


def decision(agent, condition, grader, delta, verdict, changed=0.0, rescore=None, flips=0.2):
    rescore = delta if rescore is None else rescore
    return {"agent": agent, "condition": condition, "grader": grader, "delta": delta, "ci_low": delta - 0.1,
            "ci_high": delta + 0.1, "behaviour_changed": changed, "rescore_delta": rescore,
            "rescore_ci": [rescore - 0.1, rescore + 0.1], "flip_rate": flips,
            "inside_noise_floor": abs(delta) <= flips, "verdict": verdict, "margin": 0.1}


def grid(control_final_state="behaviour effect"):
    rows = []
    for grader in ("final_state", "trace_match"):
        for agent in ("semantic", "literal"):
            rows += [decision(agent, "reorder", grader, 0.0, "no effect"),
                     decision(agent, "rerun", grader, 0.05, "inconclusive", 0.4)]
    rows += [decision("semantic", "rename", "trace_match", -0.75, "grader artifact", rescore=0.0),
             decision("semantic", "rename", "final_state", 0.0, "no effect"),
             decision("literal", "rename", "final_state", -0.34, "behaviour effect", 1.0),
             decision("literal", "rename", "trace_match", -0.63, "behaviour effect", 1.0),
             decision("semantic", "swap_descriptions", "trace_match", -0.43, "behaviour effect", 0.55),
             decision("semantic", "swap_descriptions", "final_state", -0.17, control_final_state, 0.55),
             decision("literal", "swap_descriptions", "final_state", 0.0, "no effect"),
             decision("literal", "swap_descriptions", "trace_match", 0.0, "no effect")]
    return rows


def test_the_table_has_a_line_per_verdict_with_its_cis(bench):
    lines = bench.verdict_table(grid()).splitlines()
    assert len(lines) == 2 + 16
    line = next(x for x in lines if x.startswith("trace_match  semantic  rename"))
    assert "-0.750 [-0.850, -0.650]" in line and "+0.000 [-0.100, +0.100]" in line
    assert line.endswith("outside grader artifact")


def test_claims_read_the_named_rows_and_say_what_did_not_reproduce(bench):
    found = {claim.strip(): (seen, state) for claim, _, seen, state in bench.claims(grid(), {"1": 0.35, "2": 0.3})}
    assert found["identical actions, tool rename: the trace matcher's gap"] == ("-0.750 [-0.850, -0.650]",
                                                                               "reproduced")
    assert found["restoring the names in the grader (rescore v2)"][1] == "reproduced"
    # the literal agent reads no descriptions: it is never misled, so "every agent" holds only partly
    assert found["misleading descriptions (positive control) cut reward, detected"][1] == "partly"
    assert found["identical reruns flip task outcomes"] == ("semantic 20%, literal 20%", "reproduced")
    assert found["presentation-only changes (reordered fields) within ±0.10"] == ("4/4 no effect", "reproduced")
    assert found["graders disagree on the same trajectories (outcome vs process)"] == ("v1 35%, v2 30%", "partly")
    rows = grid("inconclusive")
    next(r for r in rows if (r["agent"], r["condition"], r["grader"]) == ("semantic", "swap_descriptions",
                                                                        "trace_match"))["verdict"] = "no effect"
    missed = {c.strip(): s for c, _, _, s in bench.claims(rows, {})}
    assert missed["misleading descriptions (positive control) cut reward, detected"] == "not reproduced"
    assert missed["graders disagree on the same trajectories (outcome vs process)"] == "not reproduced"
