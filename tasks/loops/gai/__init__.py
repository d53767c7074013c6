"""gai: the loop manifest of a store (GAI, Generalized Agent Iteration)."""
