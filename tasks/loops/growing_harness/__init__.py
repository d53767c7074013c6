"""The `growing_harness` loop's own stages and logic: Grow the Harness. Its author's to change; its tests are
tests/tasks/loops/growing_harness and tests/flows/test_growing_harness.py."""
