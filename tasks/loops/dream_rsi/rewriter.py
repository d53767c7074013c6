"""dream: candidate policies rehearsed on the replay pool, pure.

The rewriter is Optuna's TPE over the policy's parameters, scored only in replay (it
never triggers a real evaluation); the old policy is always among the candidates, so
the gate's pick never replays worse than it on the fixed history."""

from __future__ import annotations

from typing import Sequence

from tasks.search.schedule import Policy, Rehearsal, Tree, rehearse

UCB_RANGE = (0.0, 2.0)
WIDTH_RANGE = (1, 8)
PATIENCE_RANGE = (1, 12)


def rewrite(old: Policy, trees: Sequence[Tree], trials: int, seed: int) -> list[Rehearsal]:
    """The old policy's rehearsal first, then each distinct policy TPE tried (TPE is
    seeded, so a rerun proposes the same policies)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    seen = {old: rehearse(old, trees)}

    def objective(trial: optuna.Trial) -> float:
        policy = Policy(round(trial.suggest_float("ucb_c", *UCB_RANGE), 3), trial.suggest_int("width", *WIDTH_RANGE),
                        trial.suggest_int("patience", *PATIENCE_RANGE))
        if policy not in seen:
            seen[policy] = rehearse(policy, trees)
        return seen[policy].score

    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed % 2**32))
    study.enqueue_trial({"ucb_c": old.ucb_c, "width": old.width, "patience": old.patience})
    study.optimize(objective, n_trials=trials)
    return list(seen.values())


def pick(rehearsals: Sequence[Rehearsal]) -> Rehearsal:
    """The gate: the lowest mean replay cost; on a tie the earlier (the old policy first)."""
    return min(rehearsals, key=lambda r: r.score)
