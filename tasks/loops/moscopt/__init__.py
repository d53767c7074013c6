"""MOSCOPT: co-evolve a pool of skills and the gating skill that loads K of them."""
