"""RSIAgent on toolsim: practise first, then carry verified experience to the target tasks."""
