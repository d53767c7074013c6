"""ArenaFlow (issue 16): one knockout comparison both trains a torch softmax policy and curates a skill library."""
