"""The arith suite: generated verifiable tasks, a character tokenizer, exact-match
verification with an optional length-shaped reward, multi-turn episodes, privileged
teacher contexts, a supervised teacher and DF-OPD prompt sources, for the RL and
on-policy distillation loops on tiny LMs (see `suites.arith.suite` for the interface)."""

from suites.arith.suite import Arith

__all__ = ["Arith"]
