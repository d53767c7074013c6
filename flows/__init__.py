"""One module per loop (a paper's method), composing the stage tasks. Each module
`flows.<loop>` defines the flow `<loop>` and its `progress_total(config)`; `LOOPS` and
`PROGRESS` are derived from the loops' config classes (`schemas.loops.LOOP_CONFIGS`), so
adding a loop adds its config class, its flow module and nothing else here."""

from importlib import import_module

from schemas.loops import LOOP_SPECS

_MODULES = {name: import_module(f"flows.{name}") for name in LOOP_SPECS}
LOOPS = {name: getattr(module, name) for name, module in _MODULES.items()}
"""Loop name -> its Prefect flow."""
PROGRESS = {name: module.progress_total for name, module in _MODULES.items()}
"""Loop name -> the number of evaluations (or steps) its progress bar counts."""
