import hashlib

import torch

from suites.toolsim.harness import parse_harness
from suites.toolsim.suite import ToolSim
from tasks.loops.arenaflow import policy as pol
from tasks.loops.arenaflow.loop import ArenaSettings, play_group
from tasks.harness_loops.menu import OPTIONS, harness_document


def test_menu_documents_parse_and_name_rules_by_option():
    doc = harness_document([1, 0, 1, 0, 0, 0])
    assert [r["id"] for r in doc["rules"]] == ["retry-transient", "paginate-orders"]
    assert len(parse_harness(harness_document([1] * len(OPTIONS))).rules) == len(OPTIONS)


def test_prior_shifts_sampling_and_greedy():
    p = pol.make_policy(["t"], 2)
    assert pol.greedy(p, "t", [0.0, 0.0]) == [0, 0]  # tie -> off
    assert pol.greedy(p, "t", [1.0, -1.0]) == [1, 0]
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert pol.sample_group(p, "t", [0.0, 0.0], 5, g1) == pol.sample_group(p, "t", [0.0, 0.0], 5, g2)
    always = pol.sample_group(p, "t", [30.0, -30.0], 20, torch.Generator().manual_seed(0))
    assert all(c == [1, 0] for c in always)


def test_update_moves_logits_by_adam_step_toward_positive_advantage():
    p = pol.make_policy(["t", "u"], 2)
    opt = torch.optim.Adam(p.parameters(), lr=0.1)
    out = pol.update(p, opt, ["t"], [[0.0, 0.0]], [[1, 0]], [[1.0, -1.0]])
    # loss = -(1 * log .5 - 1 * log .5) / 2 = 0; the first Adam step moves each touched logit by lr
    assert abs(out.loss) < 1e-7 and out.decisions == 2
    torch.testing.assert_close(p.logits.detach()[0], torch.tensor([[-0.1, 0.1], [-0.1, 0.1]]))
    torch.testing.assert_close(p.logits.detach()[1], torch.zeros(2, 2))  # template u untouched
    back = pol.from_bytes(pol.to_bytes(p))
    torch.testing.assert_close(back.logits, p.logits)
    assert hashlib.sha256(pol.to_bytes(back)).hexdigest() == hashlib.sha256(pol.to_bytes(p)).hexdigest()


def test_play_group_on_a_real_request_is_a_consistent_tournament():
    case = next(c for c in ToolSim(instances_per_template=2).cases() if c.split == "train")
    p = pol.make_policy([case.payload["template"]], len(OPTIONS))
    s = ArenaSettings(group_size=4)
    g = play_group(p, {}, case, s, seed=0, round_=0)
    assert len(g.trajectories) == 4 and len(g.matches) == 3
    assert abs(sum(g.advantages.values())) < 1e-9
    assert g.advantages[g.champion] == max(g.advantages.values())
    again = play_group(p, {}, case, s, seed=0, round_=0)
    assert [t.choices for t in again.trajectories] == [t.choices for t in g.trajectories]
    for t in g.trajectories:  # negative advantages are never scaled
        if g.advantages[t.traj_id] <= 0:
            assert set(g.step_adv[t.traj_id]) <= {g.advantages[t.traj_id]}
