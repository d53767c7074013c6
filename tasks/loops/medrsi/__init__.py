"""The `medrsi` loop's own stages and logic: MedRSI. Its author's to change; its tests are
tests/tasks/loops/medrsi and tests/flows/test_medrsi.py."""
