"""The weight-update family (grpo, ppo_pact, opd, paired_rollouts, harness_bandit): the
tiny policy's sampling, losses and checkpoints (`policy`), the stages every training
loop shares (`stages`: warm start, chunk rows, evaluation, registration), the chunk loop
(`chunks`) and where a chunk trains (`placement`: a Dask GPU worker or here). Changing it
changes five loops: run tests/tasks/training, tests/tasks/loops/{grpo,ppo_pact,opd,
paired_rollouts,harness_bandit} and their tests/flows."""
