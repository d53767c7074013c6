"""mass: MASS (multi-agent self-supervision) on toolsim."""
