"""The `self_healing` loop's own stages and logic: Self-Healing Harness. Its author's to change; its tests are
tests/tasks/loops/self_healing and tests/flows/test_self_healing.py."""
