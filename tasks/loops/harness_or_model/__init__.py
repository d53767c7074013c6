"""harness_or_model (Harness or Model): one frozen agent under two harnesses, paired on
tasks and noise seeds; correctness, finishing on its own, hitting the step limit and
usage counted apart, never merged into one score."""
