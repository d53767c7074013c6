"""trace (TRACE): when a score changes, did the behaviour change or the ruler? Paired
runs original vs perturbed, fixed-trajectory rescoring, identical-rerun noise and a
positive control; a verdict per (agent, perturbation)."""
