"""One module per loop (a paper's method), composing the stage tasks. `LOOPS` maps a
loop's name to its flow; `PROGRESS` to the number of evaluations its progress bar counts."""

from flows.aide2 import aide2
from flows.aide2 import progress_total as aide2_progress
from flows.designer_rsi import designer_rsi
from flows.designer_rsi import progress_total as designer_rsi_progress
from flows.evolve import evolve
from flows.evolve import progress_total as evolve_progress
from flows.growing_harness import growing_harness
from flows.growing_harness import progress_total as growing_harness_progress
from flows.grpo import grpo
from flows.grpo import progress_total as grpo_progress
from flows.harness_bandit import harness_bandit
from flows.harness_bandit import progress_total as harness_bandit_progress
from flows.medrsi import medrsi
from flows.medrsi import progress_total as medrsi_progress
from flows.opd import opd
from flows.opd import progress_total as opd_progress
from flows.paired_rollouts import paired_rollouts
from flows.paired_rollouts import progress_total as paired_rollouts_progress
from flows.ppo_pact import ppo_pact
from flows.ppo_pact import progress_total as ppo_pact_progress
from flows.self_healing import progress_total as self_healing_progress
from flows.self_healing import self_healing

LOOPS = {
    "evolve": evolve, "aide2": aide2,
    "self_healing": self_healing, "growing_harness": growing_harness, "medrsi": medrsi, "designer_rsi": designer_rsi,
    "grpo": grpo, "ppo_pact": ppo_pact, "opd": opd, "paired_rollouts": paired_rollouts, "harness_bandit": harness_bandit,
}
PROGRESS = {
    "evolve": evolve_progress, "aide2": aide2_progress, "self_healing": self_healing_progress,
    "growing_harness": growing_harness_progress, "medrsi": medrsi_progress, "designer_rsi": designer_rsi_progress,
    "grpo": grpo_progress, "ppo_pact": ppo_pact_progress, "opd": opd_progress,
    "paired_rollouts": paired_rollouts_progress, "harness_bandit": harness_bandit_progress,
}
