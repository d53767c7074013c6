"""LIMBO on toolsim: learn online when reading past experience is worth the budget."""
