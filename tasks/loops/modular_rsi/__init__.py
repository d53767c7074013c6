"""ModularRSI on toolsim: recurring defects from contrasted trajectories, five harness
modules evolved separately from one base, then integrated."""
