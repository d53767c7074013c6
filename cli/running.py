"""Starting and resuming runs from the command line, with a Rich progress bar."""

from __future__ import annotations

import math

import yaml
from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from schemas.configs import RunConfig, SandboxConfig
from suites import get_suite
from tasks.progress import set_reporter
from tasks.runs import new_run_id


def parse_params(pairs: list[str]) -> dict[str, float | int | str]:
    """KEY=VALUE pairs -> typed suite params (int, then float, else string)."""
    params: dict[str, float | int | str] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--param {pair!r} must look like KEY=VALUE, e.g. --param n=26")
        for cast in (int, float, str):
            try:
                params[key] = cast(raw)
                break
            except ValueError:
                continue
    return params


def loop_sections() -> list[str]:
    """RunConfig's nested parameter groups a `--set` may address (evolve, grpo, opd, ...)."""
    return sorted(name for name, field in RunConfig.model_fields.items()
                  if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel))


def parse_settings(pairs: list[str]) -> dict[str, dict[str, object]]:
    """SECTION.FIELD=VALUE pairs -> {section: {field: value}}. Values are read as YAML, so
    `3`, `1e-4`, `true`, `dial` and `[add, sub]` mean what they look like; the config's
    own validation then checks them and names the field."""
    settings: dict[str, dict[str, object]] = {}
    sections = loop_sections()
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        section, dot, name = key.partition(".")
        if not sep or not dot or not name:
            raise ValueError(f"--set {pair!r} must look like SECTION.FIELD=VALUE, e.g. --set opd.method=dial")
        if section not in sections:
            raise ValueError(f"--set {pair!r}: unknown section {section!r}; sections: {', '.join(sections)}")
        settings.setdefault(section, {})[name] = yaml.safe_load(raw)
    return settings


def make_config(loop, suite, budget, seed, workers, dask, proposer, inner_budget, params, timeout, tracking,
                settings: list[str] = ()) -> RunConfig:
    from flows import LOOPS

    if loop not in LOOPS:
        raise ValueError(f"unknown loop {loop!r}; available loops: {', '.join(sorted(LOOPS))}")
    suite_params, sections = parse_params(params), parse_settings(list(settings))
    if loop == "aide2" and suite_params:
        raise ValueError("aide2 runs its selection suites with their default cases; drop --param")
    if loop in ("evolve", "self_healing"):
        get_suite(suite, **suite_params)
    if loop in ("grpo", "ppo_pact") and suite != "arith":
        raise ValueError(f"{loop} trains arith policies; use --suite arith (got {suite!r})")
    return RunConfig(
        loop=loop, suite=suite, budget=budget, seed=seed, workers=workers, dask_address=dask, proposer=proposer,
        inner_budget=inner_budget, suite_params=suite_params, tracking=tracking,
        sandbox=SandboxConfig(**{"timeout_s": timeout, **sections.pop("sandbox", {})}), **sections,
    )


class RichReporter:
    def __init__(self, progress: Progress, task_id) -> None:
        self.progress, self.task_id = progress, task_id

    def start(self, description: str, total: int) -> None:
        self.progress.update(self.task_id, description=description, total=total)

    def advance(self, steps: int, status: str) -> None:
        self.progress.update(self.task_id, advance=steps, status=status)


def execute_run(console: Console, store_uri: str, config: RunConfig, run_id: str | None) -> dict:
    """Run (or resume) the loop's flow and print its summary."""
    from flows import LOOPS, PROGRESS
    from tasks.proposers import make_proposer

    ok, why = make_proposer(config.proposer, config.evolve).available()
    if not ok:
        raise SystemExit(f"proposer {config.proposer!r} is unavailable: {why}")
    run_id = run_id or new_run_id(config.loop)
    console.print(f"[bold]{config.loop}[/] on {config.suite}  run_id={run_id}  store={store_uri}")
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[status]}")]
    with Progress(*columns, console=console, transient=False) as progress:
        task_id = progress.add_task("evaluations", total=PROGRESS[config.loop](config), status="")
        set_reporter(RichReporter(progress, task_id))
        try:
            summary = LOOPS[config.loop](config=config, store_uri=store_uri, run_id=run_id)
        finally:
            set_reporter(None)
    for key, value in summary.items():
        console.print(f"  {key}: {_fmt(value)}")
    console.print(f"Inspect it:  ratchet show {run_id}")
    return summary


def _fmt(value) -> str:
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.10g}"
    return str(value)
