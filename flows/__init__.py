"""One module per loop (a paper's method), composing the stage tasks. `LOOPS` maps a
loop's name to its flow; `PROGRESS` to the number of evaluations its progress bar counts."""

from flows.aide2 import aide2
from flows.aide2 import progress_total as aide2_progress
from flows.evolve import evolve
from flows.evolve import progress_total as evolve_progress
from flows.grpo import grpo
from flows.grpo import progress_total as grpo_progress
from flows.self_healing import progress_total as self_healing_progress
from flows.self_healing import self_healing

LOOPS = {"evolve": evolve, "aide2": aide2, "self_healing": self_healing, "grpo": grpo}
PROGRESS = {"evolve": evolve_progress, "aide2": aide2_progress, "self_healing": self_healing_progress,
            "grpo": grpo_progress}
