"""Validated configs: what a loop modifies, how candidates are sandboxed, and each
loop's parameters. Cross-field checks run at construction and name the fix."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Optional

from pydantic import BaseModel, Field, model_validator

from schemas.frozen import Config

__all__ = ["ArtifactKind", "EvolveConfig", "LoopSpec", "RunConfig", "SandboxConfig"]

ProposerKind = Literal["mutate", "grammar", "llm", "optuna"]
ArtifactKind = Literal["program", "rules", "skills", "prompt", "config", "weights", "scheduler", "memory"]
Family = Literal["search", "harness", "training", "protocol"]
"""``protocol``: a measurement protocol; nothing is proposed or admitted, fixed arms are compared."""
"""Loop families: program search (candidates are programs or agent configs), harness loops
(candidates are toolsim harness edits), training loops (candidates are checkpoints)."""


class LoopSpec(Config):
    """What a loop improves and which scorer anchors it. The anchor is fixed per run:
    a gate refuses evidence scored by any other scorer version, so a candidate can never
    change the ruler it is measured with. Each loop's config class carries its spec
    (`schemas.loops`)."""

    name: str
    modifies: ArtifactKind
    """The artifact kind the loop's candidates are."""
    anchor: Literal["suite"] = "suite"
    """Which scorer anchors the loop: the suite's own trusted scorer."""
    paper: str
    """The method's source, as named in shared/loops/."""
    family: Family
    suites: tuple[str, ...]
    """The suites the loop can run on; the first is its default."""
    budget_counts: str
    """What one unit of `--budget` is, in words."""
    default_budget: int = Field(ge=1)
    starts_from_champion: bool = False
    """Whether round 0 publishes one program or harness, so a run can start from the
    store's champion instead of the suite's seed (`start_from="champion"`)."""
    budget_caps: bool = False
    """Whether the loop checks the budget caps (`max_llm_tokens`, `max_evaluations`) at
    its round boundaries (`tasks.runtime.budget`)."""

    @property
    def default_suite(self) -> str:
        return self.suites[0]

    def check_suite(self, suite: str) -> None:
        """Refuse a suite the loop cannot run, naming the suites that work."""
        if suite not in self.suites:
            raise ValueError(f"{self.name} does not run on suite {suite!r}; it runs on: {', '.join(self.suites)} "
                             f"(e.g. ratchet run {self.name} --suite {self.default_suite})")
MUTATION_OPERATORS = ("constant", "operator", "compare", "statement", "swap_lines", "crossover")


class SandboxConfig(Config):
    """Limits of the subprocess sandbox that runs untrusted candidate code.

    Time limits measure the candidate, not the machine: a case is cut by the CPU time
    the sandbox's processes used on it (`case_cpu_s`, measured by the parent), which a
    busy machine does not inflate. The wall clock is only a looser backstop
    (`case_wall_s` = wall_factor x the CPU limit) for candidates that sleep or block.
    Loading the runner and the program in a fresh child (imports, module-level code)
    has its own allowance, `load_limit_s`, charged to no case."""

    kind: Literal["subprocess", "docker", "inprocess"] = "subprocess"
    """`subprocess` (bubblewrap) or `docker` (a container per batch; needs a running
    engine) for untrusted code; `inprocess` only for trusted code."""
    timeout_s: float = Field(10.0, gt=0)
    """Time limit per case: the CPU-time limit unless `cpu_limit_s` is set, and so the
    base of the wall-clock backstop; past either, the whole sandbox is killed."""
    cpu_limit_s: Optional[float] = Field(None, gt=0)
    """CPU-time limit per case (user + system time of every process in the sandbox);
    None: `timeout_s`."""
    wall_factor: float = Field(5.0, ge=1.0)
    """The wall-clock backstop of a case, and of loading, is this many times its CPU
    limit; it catches candidates that sleep or block without using CPU."""
    load_limit_s: float = Field(10.0, gt=0)
    """CPU-time allowance, once per child, for loading the runner and the program
    (imports such as numpy, module-level code), apart from every case's limit; its
    wall backstop is `wall_factor` times it."""
    memory_mb: int = Field(1024, ge=64)
    """Address-space limit of the candidate process."""
    max_processes: int = Field(64, ge=1)
    """RLIMIT_NPROC inside the sandbox (stops fork bombs)."""
    max_output_bytes: int = Field(1_000_000, ge=1024)
    """Largest file (and captured stdout) the candidate may write."""

    @property
    def case_cpu_s(self) -> float:
        """The CPU-time limit of one case."""
        return self.timeout_s if self.cpu_limit_s is None else self.cpu_limit_s

    @property
    def case_wall_s(self) -> float:
        """The wall-clock backstop of one case."""
        return self.wall_factor * self.case_cpu_s


class EvolveConfig(Config):
    """Parameters of the `evolve` research agent (the inner loop AIDE² improves)."""

    islands: int = Field(4, ge=1, le=64)
    """Sub-populations evolved apart, for diversity."""
    children_per_round: int = Field(8, ge=1, le=256)
    """K: children proposed and evaluated per round."""
    tournament_size: int = Field(3, ge=1, le=32)
    """Parents are the best of this many archive members drawn from the island."""
    crossover_rate: float = Field(0.2, ge=0.0, le=1.0)
    """Chance that a child is a crossover of two parents rather than a mutation."""
    migration_interval: int = Field(4, ge=1)
    """Every this many rounds, each island receives the best member of its neighbour."""
    mutations_per_child: int = Field(2, ge=1, le=16)
    """Upper bound of AST edits applied to one child."""
    failure_memory: bool = True
    """Whether the proposer reads the distilled failure memory."""
    failure_min_support: int = Field(3, ge=1)
    """Occurrences before an (operator, error kind) pair enters the failure memory."""
    tune_rate: float = Field(0.25, ge=0.0, le=1.0)
    """grammar proposer: chance that a child of a parent with constants takes them from
    TPE over the run's scored programs of the parent's structure (``constant_search``)."""
    gate_min_delta: float = Field(1e-9, ge=0.0)
    """A child must beat the champion's select mean by more than this to be accepted."""
    llm_max_tokens: int = Field(1024, ge=16, le=32768)
    """llm proposer: the most tokens one answer may have (``max_tokens`` of the request)."""
    llm_timeout_s: float = Field(600.0, gt=0)
    """llm proposer: seconds one call may take; past it the child is recorded as unusable."""


class RunConfig(Config):
    """What every loop run depends on, stored in `runs.config_json` so that `ratchet
    resume` re-enters the run with exactly the same parameters. Each loop has its own
    subclass (`schemas.loops`: `EvolveRun`, `GRPORun`, ...) with its spec and only its
    own parameter sections; `RunConfig(loop=..., ...)` and `RunConfig.model_validate`
    build the class of the named loop (configs are a union discriminated on `loop`)."""

    SPEC: ClassVar[LoopSpec]
    loop: str
    suite: str
    budget: int = Field(ge=1)
    """What one unit counts is the loop's `SPEC.budget_counts`."""
    seed: int = 0
    proposer: ProposerKind = "mutate"
    workers: int = Field(2, ge=1, le=256)
    dask_address: Optional[str] = None
    sandbox: SandboxConfig = SandboxConfig()
    suite_params: dict[str, float | int | str | list[str]] = {}
    start_from: Literal["seed", "champion"] = "seed"
    """Round 0's candidate: the suite's seed, or the store's current champion of this run's
    registry name (``suite/loop``), so a scheduled run continues from the last one."""
    tracking: bool = True
    """Log every candidate to MLflow (a null tracker when off)."""
    max_llm_tokens: Optional[int] = Field(None, ge=1)
    """Budget cap: before each round, the run ends with status `budget_exhausted` once its
    LLM tokens (in + out, the `ledger` view) have reached this; None: no cap. A round once
    begun runs to its end, so a run can pass a cap by at most one round's spend."""
    max_evaluations: Optional[int] = Field(None, ge=1)
    """Budget cap on the run's evaluations (executions: candidate x case attempts), checked
    the same way; `ratchet resume RUN --max-evaluations N` raises it."""

    def __new__(cls, *args: Any, **data: Any):
        if cls is RunConfig:  # the union's entry point: build the named loop's own class
            from schemas.loops import config_class

            cls = config_class(data.get("loop"))
        return super().__new__(cls)

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> "RunConfig":
        if cls is RunConfig:
            from schemas.loops import config_class

            loop = obj.loop if isinstance(obj, BaseModel) else obj.get("loop")
            return config_class(loop).model_validate(obj, *args, **kwargs)
        return super().model_validate(obj, *args, **kwargs)

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> "RunConfig":
        """A config as `runs.config_json` holds it. Runs stored before configs were split
        per loop carry every loop's section; the sections this loop does not have are
        defaults of other loops and are dropped."""
        from schemas.loops import config_class

        own = config_class(data.get("loop"))
        return own.model_validate({k: v for k, v in data.items() if k in own.model_fields})

    @classmethod
    def sections(cls) -> dict[str, type[Config]]:
        """The nested parameter groups of this loop's config (what `--set SECTION.FIELD` may address)."""
        return {name: field.annotation for name, field in cls.model_fields.items()
                if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)}

    def evaluated_suites(self) -> tuple[str, ...]:
        """The suites the run evaluates on: its own (aide2: its selection suites; algoevo: its tasks)."""
        return (self.suite,)

    def arith_categories(self) -> tuple[str, ...]:
        """The arith categories a training loop trains and evaluates on."""
        raise ValueError(f"{self.loop} does not train on arith; its suites: {', '.join(self.SPEC.suites)}")

    @model_validator(mode="after")
    def _check(self) -> "RunConfig":
        spec = self.SPEC
        spec.check_suite(self.suite)
        if self.dask_address is not None and not self.dask_address.startswith(("tcp://", "tls://", "inproc://")):
            raise ValueError(
                f"dask_address {self.dask_address!r} must be a scheduler address like tcp://127.0.0.1:8786"
            )
        if self.start_from == "champion" and not spec.starts_from_champion:
            from schemas.loops import STARTS_FROM_CHAMPION

            raise ValueError(f"start_from='champion' continues a program or harness search; {self.loop} cannot "
                             f"(loops that can: {', '.join(STARTS_FROM_CHAMPION)}); use start_from='seed'")
        if self.proposer == "llm" and "evolve" not in type(self).model_fields:
            does = {"protocol": "measures fixed arms: nothing is proposed", "training": "trains weights"}.get(
                spec.family, "has no llm path (its agent is the mutate proposer)")
            raise ValueError(f"proposer='llm' writes programs or harness edits; {self.loop} {does} "
                             "(use proposer='mutate', the default)")
        caps = [name for name in ("max_llm_tokens", "max_evaluations") if getattr(self, name) is not None]
        if caps and not spec.budget_caps:
            from schemas.loops import BUDGET_CAPS

            raise ValueError(f"{self.loop} does not check budget caps ({', '.join(caps)}); loops that do: "
                             f"{', '.join(BUDGET_CAPS)}; use --budget to size this run")
        if self.max_llm_tokens is not None and self.proposer != "llm":
            raise ValueError(f"max_llm_tokens caps the llm proposer's tokens, but this run's proposer is "
                             f"{self.proposer!r} (it calls no model); drop the cap or use proposer='llm'")
        if spec.family == "harness" and self.proposer == "optuna":
            raise ValueError(f"proposer='optuna' tunes configs, but {self.loop} edits a harness; use "
                             "proposer='mutate' (the rule proposer) or 'llm' (a chat endpoint)")
        return self
