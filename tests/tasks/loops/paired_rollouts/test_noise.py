"""Event-keyed verifier noise: events are named by the calls a rollout makes, the
shared arm gives every rollout of a group the same draw per event, the independent arm
does not, draws are reproducible by key, and both arms keep the per-event rate."""

from schemas.post_training import PairedRolloutsConfig
from tasks.loops.paired_rollouts.noise import corrupt_batch, corrupt_group, event_draw, rollout_events

WORKED = "7+5=12;4+8+1=13#132"


def test_rollout_events_name_calls_and_repeat_counts():
    assert rollout_events(WORKED, "tool_failure") == ["7+5@0", "4+8+1@0"]
    assert rollout_events("7+5=12;7+5=12#1", "tool_failure") == ["7+5@0", "7+5@1"]
    assert rollout_events("", "tool_failure") == ["answer@0"]
    assert rollout_events(WORKED, "grading_flip") == ["grade"]


def test_event_draw_is_reproducible_and_keyed():
    a = event_draw(3, 7, "train", "case1", "7+5@0", None)
    assert a == event_draw(3, 7, "train", "case1", "7+5@0", None) and 0.0 <= a < 1.0
    others = {event_draw(3, 7, "train", "case1", "7+5@0", 0), event_draw(3, 8, "train", "case1", "7+5@0", None),
              event_draw(3, 7, "train", "case2", "7+5@0", None), event_draw(3, 7, "probe0", "case1", "7+5@0", None)}
    assert a not in others and len(others) == 4


def test_shared_pairing_gives_the_group_identical_noise():
    cfg = PairedRolloutsConfig(noise_pairing="shared", noise_kind="tool_failure", noise_rate=0.5)
    outputs = [WORKED] * 8
    for case in range(40):
        observed, hits = corrupt_group([1.0] * 8, outputs, f"c{case}", cfg, 0, 0, "train")
        assert len(set(hits)) == 1 and len(set(observed)) == 1
    # a hand-checked draw: rollout 0's hits are the events whose shared draw is below the rate
    expected = sum(event_draw(0, 0, "train", "c0", e, None) < 0.5 for e in rollout_events(WORKED, "tool_failure"))
    assert corrupt_group([1.0], [WORKED], "c0", cfg, 0, 0, "train")[1] == [expected]


def test_independent_pairing_differs_within_groups_and_keeps_the_rate():
    independent = PairedRolloutsConfig(noise_pairing="independent", noise_kind="grading_flip", noise_rate=0.3)
    shared = independent.model_copy(update={"noise_pairing": "shared"})
    groups, n = 400, 8
    outcomes, outputs, cases = [[1.0] * n] * groups, [[WORKED] * n] * groups, [f"c{g}" for g in range(groups)]
    obs_i, hits_i = corrupt_batch(outcomes, outputs, cases, independent, 1, 2, "train")
    obs_s, hits_s = corrupt_batch(outcomes, outputs, cases, shared, 1, 2, "train")
    assert sum(len(set(h)) > 1 for h in hits_i) > groups // 2  # 1 - 0.7^8 - 0.3^8 of groups are mixed
    assert all(len(set(h)) == 1 for h in hits_s)
    rate_i = sum(map(sum, hits_i)) / (groups * n)
    rate_s = sum(map(sum, hits_s)) / (groups * n)
    assert abs(rate_i - 0.3) < 0.03 and abs(rate_s - 0.3) < 0.08  # shared: 400 independent draws
    assert all(o == 0.0 for row_o, row_h in zip(obs_i, hits_i) for o, h in zip(row_o, row_h) if h)


def test_noise_only_removes_success():
    cfg = PairedRolloutsConfig(noise_pairing="independent", noise_kind="tool_failure", noise_rate=0.9)
    observed, hits = corrupt_group([0.0, 1.0, 0.0, 1.0], ["1#2", WORKED, "", "9"], "c", cfg, 0, 0, "train")
    assert observed[0] == 0.0 and observed[2] == 0.0
    assert all(o == (0.0 if h else t) for o, h, t in zip(observed, hits, [0.0, 1.0, 0.0, 1.0]))
