"""The `paired_rollouts` loop's own stages and logic: Luck Is Not Skill (paired rollouts). Its author's to change; its tests are
tests/tasks/loops/paired_rollouts and tests/flows/test_paired_rollouts.py."""
