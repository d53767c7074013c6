"""Starting and resuming runs from the command line, with a Rich progress bar."""

from __future__ import annotations

import logging
import math
from contextlib import contextmanager

import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cli.env import engine_settings
from cli.errors import DEBUG, Interrupted, RunFailed, UsageError
from schemas.configs import RunConfig, SandboxConfig
from schemas.loops import LOOP_SPECS, check_suite, config_class, loop_spec
from suites.data import ReferenceDataError
from tasks.runtime.lifecycle import interrupted, new_run_id
from tasks.runtime.progress import set_reporter


def parse_params(pairs: list[str]) -> dict[str, float | int | str]:
    """KEY=VALUE pairs -> typed suite params (int, then float, else string)."""
    params: dict[str, float | int | str] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param {pair!r} must look like KEY=VALUE, e.g. --param n=26")
        for cast in (int, float, str):
            try:
                params[key] = cast(raw)
                break
            except ValueError:
                continue
    return params


def parse_settings(pairs: list[str], loop: str) -> dict[str, dict[str, object]]:
    """SECTION.FIELD=VALUE pairs -> {section: {field: value}}, for the sections loop `loop`'s
    config has (`ratchet loops` lists them). Values are read as YAML, so `3`, `1e-4`,
    `true`, `dial` and `[add, sub]` mean what they look like; the config's own validation
    then checks them and names the field."""
    settings: dict[str, dict[str, object]] = {}
    sections = config_class(loop).sections()
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        section, dot, name = key.partition(".")
        if not sep or not dot or not name:
            raise UsageError(f"--set {pair!r} must look like SECTION.FIELD=VALUE, e.g. --set opd.method=dial")
        if section not in sections:
            raise UsageError(f"--set {pair!r}: {loop} has no section {section!r}; its sections: "
                             f"{', '.join(sorted(sections))}")
        fields = list(sections[section].model_fields)
        if name not in fields:
            raise UsageError(f"--set {pair!r}: section {section!r} has no field {name!r}; its fields: "
                             f"{', '.join(fields)}")
        try:
            settings.setdefault(section, {})[name] = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise UsageError(f"--set {pair!r}: the value is not valid YAML ({exc.problem})") from None
    return settings


def suite_names(config: RunConfig) -> tuple[str, ...]:
    """The suites a run evaluates on (aide2: its selection suites; algoevo: its tasks)."""
    return config.evaluated_suites()


def make_config(loop, suite, budget, seed, workers, dask, proposer, inner_budget, params, timeout, tracking,
                settings: list[str] = (), start_from: str = "seed", caps: dict[str, int | None] | None = None) -> RunConfig:
    """The run's config from the command line, every part checked before any work: the
    loop, the loop/suite pair, `--param`, `--set`, and the suite's reference data."""
    spec = _spec(loop)
    suite = suite or spec.default_suite
    try:
        check_suite(loop, suite)
        suite_params = parse_params(params)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    sections = parse_settings(list(settings), loop)
    if loop == "aide2" and suite_params:
        raise UsageError("aide2 runs its selection suites with their default cases; drop --param")
    sandbox = {**({"timeout_s": timeout} if timeout is not None else {}), **sections.pop("sandbox", {})}
    config = RunConfig(
        loop=loop, suite=suite, budget=budget or spec.default_budget, seed=seed, workers=workers, dask_address=dask,
        proposer=proposer, suite_params=suite_params, tracking=tracking, start_from=start_from,
        sandbox=SandboxConfig(**sandbox), **({"inner_budget": inner_budget} if loop == "aide2" else {}), **sections,
        **{cap: value for cap, value in (caps or {}).items() if value is not None},
    )
    check_suites(config)
    check_loop(config)
    return config


def check_loop(config: RunConfig) -> None:
    """The loop's own checks of what its config names (a flow module's optional
    `preflight(config)`, raising ValueError), so a bad name stops here, not in a stage."""
    from importlib import import_module

    preflight = getattr(import_module(f"flows.{config.loop}"), "preflight", None)
    try:
        if preflight is not None:
            preflight(config)
    except ValueError as exc:
        raise UsageError(f"{config.loop}: {exc}") from None


def _spec(loop: str):
    try:
        return loop_spec(loop)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def check_suites(config: RunConfig) -> None:
    """Build each suite the run needs (its `--param`s checked) and verify its reference
    data, so a bad parameter or a damaged install stops here, not minutes into a run."""
    from tasks.runtime.context import make_suite

    if LOOP_SPECS[config.loop].modifies != "weights":  # candidates are code: refuse an uncontained sandbox now
        from suites.executors import SandboxError, make_executor

        try:
            make_executor(config.sandbox)  # subprocess: resolves the isolation; docker: reaches the engine, builds the image
        except SandboxError as exc:
            raise UsageError(str(exc)) from None
    for name in suite_names(config):
        try:
            make_suite(config, name).check_data()
        except (ValueError, TypeError) as exc:
            raise UsageError(f"suite {name}: {exc}") from None
        except ReferenceDataError as exc:
            raise UsageError(str(exc)) from None


class RichReporter:
    def __init__(self, progress: Progress, task_id) -> None:
        self.progress, self.task_id = progress, task_id

    def start(self, description: str, total: int) -> None:
        self.progress.update(self.task_id, description=description, total=total)

    def advance(self, steps: int, status: str) -> None:
        self.progress.update(self.task_id, advance=steps, status=status)


def execute_run(console: Console, store_uri: str, config: RunConfig, run_id: str | None) -> dict:
    """Run (or resume) the loop's flow and print its summary. A failed run is one line
    naming the run and its cause (its `failed` event holds the error); Ctrl-C prints the
    command that finishes it."""
    from flows import LOOPS, PROGRESS
    from tasks.proposers import make_proposer

    if config.proposer == "llm":
        ok, why = make_proposer(config.proposer, config.evolve).available()
        if not ok:
            raise UsageError(f"proposer {config.proposer!r} is unavailable: {why}")
    run_id = run_id or new_run_id(config.loop)
    console.print(f"[bold]{config.loop}[/] on {config.suite}  run_id={run_id}  store={store_uri}")
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[status]}")]
    with Progress(*columns, console=console, transient=False) as progress:
        task_id = progress.add_task("evaluations", total=PROGRESS[config.loop](config), status="")
        set_reporter(RichReporter(progress, task_id))
        try:
            with quiet_engine_errors(), engine_settings():
                summary = LOOPS[config.loop](config=config, store_uri=store_uri, run_id=run_id)
        except KeyboardInterrupt:
            raise Interrupted(_interrupted(store_uri, run_id)) from None
        except Exception as exc:
            if interrupted(exc):
                raise Interrupted(_interrupted(store_uri, run_id)) from None
            raise RunFailed(f"run {run_id} failed: {type(exc).__name__}: {exc}\n  see `ratchet show {run_id}`; "
                            f"once the cause is fixed, `ratchet resume {run_id}` continues it") from exc
        finally:
            set_reporter(None)
    for key, value in summary.items():
        console.print(f"  {key}: {_fmt(value)}")
    from cli.views import timeout_warning

    warning = timeout_warning(store_uri, run_id)
    if warning:
        console.print(f"[yellow]warning:[/] {warning}")
    stop = budget_stop(store_uri, run_id)
    if stop:
        console.print(stop, soft_wrap=True, markup=False)
    console.print(f"Inspect it:  ratchet show {run_id}")
    return summary


@contextmanager
def quiet_engine_errors():
    """Prefect logs a failed task's or flow's traceback; the CLI reports the failure in
    one line itself (the run's `failed` event holds the error), so those logs are off
    unless `ratchet --debug`."""
    loggers = [logging.getLogger(name) for name in ("prefect.flow_runs", "prefect.task_runs", "prefect.flow_engine",
                                                     "prefect.task_engine", "prefect.engine")]
    levels = [logger.level for logger in loggers]
    if not DEBUG["on"]:
        for logger in loggers:
            logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _interrupted(store_uri: str, run_id: str) -> str:
    from storage.store import open_store

    if open_store(store_uri).has_part("runs", run_id, "status", "running"):
        return f"Run {run_id} stopped; finish it with:  ratchet resume {run_id}"
    return f"Run {run_id} stopped before it started; nothing was recorded, start it again with `ratchet run`"


def _fmt(value) -> str:
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.10g}"
    return str(value)


def _latest(store_uri: str, run_id: str):
    from storage.store import open_store

    events = open_store(store_uri).read_rows("runs", run_id)
    return max(events, key=lambda r: (r.event_at, r.status != "running")) if events else None


def budget_stop(store_uri: str, run_id: str) -> str | None:
    """What to say when a budget cap ended the run: why, and the resume that continues it."""
    latest = _latest(store_uri, run_id)
    if latest is None or latest.status != "budget_exhausted":
        return None
    return (f"run {run_id} stopped: {latest.error} (status budget_exhausted; its champion is registered); "
            f"continue it with a raised cap: ratchet resume {run_id} --max-evaluations N / --max-llm-tokens N")


def raised_config(config: RunConfig, run_id: str, raised: dict[str, int]) -> RunConfig:
    """``config`` with its budget caps raised to ``raised``; a cap the run does not have,
    or a value not above the current one, is a usage error."""
    for cap, value in raised.items():
        current = getattr(config, cap)
        if current is None:
            raise UsageError(f"run {run_id} has no {cap} cap (it is unlimited); there is nothing to raise")
        if value <= current:
            raise UsageError(f"--{cap.replace('_', '-')} {value} does not raise run {run_id}'s cap of {current}; "
                             f"give a value above {current}")
    return type(config).model_validate({**config.model_dump(), **raised})


def resumable_config(console: Console, store_uri: str, run_id: str,
                     raised: dict[str, int] | None = None) -> RunConfig | None:
    """The config to resume ``run_id`` with (its budget caps ``raised``), or None (after
    saying so) when the run has finished, or a budget cap stopped it and no cap is raised:
    there is nothing to do. An unknown run is a usage error."""
    from storage.store import check_name, open_store
    from tasks.runtime.lifecycle import stored_config

    try:
        events = open_store(store_uri).read_rows("runs", check_name("run id", run_id))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not events:
        raise UsageError(f"no run {run_id!r} in store {store_uri}; list runs with `ratchet runs`")
    latest = max(events, key=lambda r: (r.event_at, r.status != "running"))
    if latest.status == "finished":
        console.print(f"run {run_id} finished at {latest.finished_at:%Y-%m-%d %H:%M:%S} UTC; nothing to resume "
                      f"(see `ratchet show {run_id}`)", soft_wrap=True)
        return None
    config = raised_config(stored_config(store_uri, run_id), run_id, raised or {})
    if latest.status == "budget_exhausted" and not raised:
        console.print(budget_stop(store_uri, run_id), soft_wrap=True, markup=False)
        return None
    return config
