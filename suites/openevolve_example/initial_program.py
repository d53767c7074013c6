"""Ratchet's example problem in OpenEvolve's format: fit a curve with a short expression.

Only the code between the EVOLVE-BLOCK markers may change; `evaluator.py` imports this
file and scores `curve(x)` against a hidden target on [0, 3]."""

import math

# EVOLVE-BLOCK-START
def curve(x):
    """The evolving guess: a number for each x in [0, 3]."""
    return 0.5 * x
# EVOLVE-BLOCK-END


def run(points):
    """What the evaluator calls: the curve at each point."""
    return [float(curve(x)) for x in points]


if __name__ == "__main__":
    print(run([0.0, 1.0, 2.0, 3.0]), math.pi)
