"""Arith tests share two cores with other workers: one torch thread."""

import torch

torch.set_num_threads(1)
