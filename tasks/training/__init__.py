"""The weight-update family (grpo, ppo_pact, opd, paired_rollouts, harness_bandit): the
tiny policy's sampling, losses and checkpoints (`policy`) and the stages every training
loop shares (`stages`: warm start, chunk rows, evaluation, registration). Changing it
changes five loops: run tests/tasks/training, tests/tasks/loops/{grpo,ppo_pact,opd,
paired_rollouts,harness_bandit} and their tests/flows."""
