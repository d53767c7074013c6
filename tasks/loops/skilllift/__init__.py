"""SkillLift (issue 16): cheap skill edits first, then calibrate the scoring rubric with real execution."""
