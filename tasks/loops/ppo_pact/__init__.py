"""The `ppo_pact` loop's own stages and logic: PACT (actor-critic). Its author's to change; its tests are
tests/tasks/loops/ppo_pact and tests/flows/test_ppo_pact.py."""
