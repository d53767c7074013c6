"""Kernel tests share two cores with other workers: one thread, float64 where values are checked."""

import torch

torch.set_num_threads(1)
