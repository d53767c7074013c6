"""The program-search family (evolve, aide2): the island archive sample and gate read.
Changing it: run tests/tasks/stages, tests/flows/test_evolve.py and test_aide2.py."""
