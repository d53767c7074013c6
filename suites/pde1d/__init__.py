"""The pde1d suite: fine-tuning configurations of a pretrained 1D neural operator."""

from suites.pde1d.suite import Pde1d

__all__ = ["Pde1d"]
