"""GraphSkillEvo (issue 16): skills as step graphs evolved by mutation and crossover."""
