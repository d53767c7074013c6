"""One module per loop (a paper's method), composing the stage tasks. `LOOPS` maps a
loop's name to its flow; `PROGRESS` to the number of evaluations its progress bar counts."""

from flows.aide2 import aide2
from flows.aide2 import progress_total as aide2_progress
from flows.evolve import evolve
from flows.evolve import progress_total as evolve_progress

LOOPS = {"evolve": evolve, "aide2": aide2}
PROGRESS = {"evolve": evolve_progress, "aide2": aide2_progress}
