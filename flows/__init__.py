"""One module per loop (a paper's method), composing the stage tasks. `LOOPS` maps a
loop's name to its flow."""

from flows.aide2 import aide2
from flows.evolve import evolve

LOOPS = {"evolve": evolve, "aide2": aide2}
