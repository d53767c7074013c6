"""The `aide2` loop's own stages and logic: AIDE²'s outer loop. Its author's to change; its tests are
tests/tasks/loops/aide2 and tests/flows/test_aide2.py."""
