"""The `harness_bandit` loop's own stages and logic: HarnessBandit. Its author's to change; its tests are
tests/tasks/loops/harness_bandit and tests/flows/test_harness_bandit.py."""
