"""FORGE on toolsim: one failure both revises the prompt (the agent's rules) and, on
validation stagnation, drives verified synthesis of new training data."""
