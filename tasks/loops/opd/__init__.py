"""The `opd` loop's own stages and logic: on-policy distillation (OPD and its variants). Its author's to change; its tests are
tests/tasks/loops/opd and tests/flows/test_opd.py."""
