"""MACE on toolsim: co-learn what to remember (units mined from past logs) and how to hand
memory to each role (intake, lookup, action, verify)."""
