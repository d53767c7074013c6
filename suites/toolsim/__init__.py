"""toolsim: a simulated customer-service backend whose candidates are agent harnesses
(rules and skills). ``suite.py`` documents the suite, ``harness.py`` the harness format,
``agent.py`` how a harness runs, ``faults.py`` the event-keyed noise and
``templates.py`` the requests and their goals."""

from suites.toolsim.suite import ToolSim

__all__ = ["ToolSim"]
