"""dense (DENSE): turn old trajectories without outcome labels into usable feedback (a
nested subgoal tree with issues, closure evidence and shortcuts), then retry once with
only the feedback carried over; compared with no feedback, a raw error dump, a flat
summary, the tree without shortcut and reconciliation, and outcome-labelled feedback."""
