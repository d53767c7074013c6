"""The incremental run state (tasks.search.run_index) equals the whole-run derivations
it replaces, round by round, on a real evolve run: the archive, the failure memory, the
failure modes a round distills, the champion and registry count, and the gate decisions.
Rebuilt in a fresh process (cleared cache), after compaction, or at a recreated store
it gives the same state."""

import shutil
from pathlib import Path

import pytest

from flows.evolve import evolve
from schemas.configs import EvolveConfig, RunConfig
from storage.store import open_store
from suites.base import source_hash
from tasks.gate.stage import CHAMPION, current_champion, decide_round, registry_name
from tasks.runtime.context import RunRef, anchored_scorer_version
from tasks.search import run_index
from tasks.search.archive import build_archive
from tasks.search.run_index import read_evidence, round_key, run_state
from tasks.stages.distill import failure_modes, failure_modes_since
from tasks.stages.sample import failure_memory

pytestmark = [pytest.mark.integration]

RUN = "index"
CONFIG = RunConfig(
    loop="evolve", suite="spin", budget=40, seed=1, workers=2, tracking=False, suite_params={"ms": 1, "cases": 8},
    evolve=EvolveConfig(children_per_round=4, islands=3, migration_interval=3, crossover_rate=0.3,
                        failure_min_support=2),
)
METRIC, NAME = "value", registry_name(CONFIG)
ROUNDS = 1 + CONFIG.budget // CONFIG.evolve.children_per_round


@pytest.fixture(scope="module")
def finished_run(prefect_server, tmp_path_factory):
    path = tmp_path_factory.mktemp("index") / "store"
    evolve(config=CONFIG, store_uri=str(path), run_id=RUN)
    return path


def whole_run(store, round_index):
    """The whole-run reads as stage `round_index` saw them: every row of the candidates of
    earlier rounds (their holdout runs included), and this round's own rows but none of
    its holdout runs (register runs those after sample, distill and gate)."""
    rounds = {c.candidate_id: c.round for c in store.read_rows("candidates", RUN)}

    def seen(row):
        r = rounds[row.candidate_id]
        return r < round_index or (r == round_index and row.split != "holdout")

    candidates = [c for c in store.read_rows("candidates", RUN) if c.round <= round_index]
    executions = [e for e in store.read_rows("executions", RUN) if seen(e)]
    scores = [s for s in store.read_rows("scores", RUN) if seen(s)]
    registry = [r for r in store.read_rows("registry", RUN) if rounds[r.candidate_id] < round_index]
    distillates = [d for d in store.read_rows("distillates", RUN) if d.round < round_index]
    return candidates, executions, scores, registry, distillates


def test_the_run_exercises_failures_islands_and_champions(finished_run):
    store = open_store(str(finished_run))
    assert {c.island for c in store.read_rows("candidates", RUN)} == {-1, 0, 1, 2}
    assert any(d.status == "active" for d in store.read_rows("distillates", RUN))
    assert len(store.read_rows("registry", RUN)) >= 2


def test_each_round_sees_what_the_whole_run_reads_give(finished_run):
    store = open_store(str(finished_run))
    ref = RunRef(store_uri=str(finished_run), run_id=RUN)
    run_index.clear_cache()
    for round_index in range(ROUNDS):
        state = run_state(store, RUN, round_index - 1, METRIC, NAME, CHAMPION)  # extended round by round
        candidates, executions, scores, registry, distillates = whole_run(store, round_index)
        earlier = [c for c in candidates if c.round < round_index]
        assert state.members == build_archive(earlier, scores, executions, METRIC)
        assert failure_memory(state.memory, round_index) == failure_memory(distillates, round_index)
        assert state.champion == current_champion(registry, NAME)
        assert state.registered == len(registry)

        own = [c for c in candidates if c.round == round_index]
        evidence = read_evidence(store, RUN, own, round_key(round_index), METRIC)
        metric_scores = [s for s in scores if s.metric == METRIC]
        expected = failure_modes(ref, round_index, candidates, executions, metric_scores, 2)
        assert failure_modes_since(ref, round_index, state, own, evidence, 2) == expected
        assert store.read_part("distillates", RUN, "distill", round_key(round_index)) == expected

        champion = current_champion(registry, NAME)
        order = [c.candidate_id for c in store.read_part("candidates", RUN, "sample", round_key(round_index))]
        decided = decide_round(ref, round_index, order, scores, champion.candidate_id if champion else None, METRIC,
                               anchored_scorer_version(ref), CONFIG.evolve.gate_min_delta, CONFIG.seed)
        assert decided == store.read_part("gate_decisions", RUN, "gate", round_key(round_index))


def test_a_fresh_process_rebuilds_the_same_state(finished_run):
    store = open_store(str(finished_run))
    run_index.clear_cache()
    incremental = [run_state(store, RUN, r, METRIC, NAME, CHAMPION).clone() for r in range(ROUNDS)]
    for r in range(ROUNDS):
        run_index.clear_cache()
        assert vars(run_state(store, RUN, r, METRIC, NAME, CHAMPION)) == vars(incremental[r])


def test_a_compacted_run_gives_the_same_state(finished_run, tmp_path):
    copy = tmp_path / "store"
    shutil.copytree(finished_run, copy, ignore=shutil.ignore_patterns("prefect", "mlflow*"))
    before = run_state(open_store(str(finished_run)), RUN, ROUNDS - 1, METRIC, NAME, CHAMPION).clone()
    compacted = open_store(str(copy))
    compacted.compact(RUN)
    assert len(compacted.part_files("executions", RUN)) == 1
    run_index.clear_cache()
    after = run_state(compacted, RUN, ROUNDS - 1, METRIC, NAME, CHAMPION)
    assert vars(after) == vars(before)


def test_a_restamped_or_unfinished_round_is_never_served_from_the_cache(finished_run, tmp_path):
    copy = tmp_path / "store"
    shutil.copytree(finished_run, copy, ignore=shutil.ignore_patterns("prefect", "mlflow*"))
    store = open_store(str(copy))
    full = run_state(store, RUN, ROUNDS - 1, METRIC, NAME, CHAMPION).clone()
    run_index.clear_cache()
    cached = run_state(store, RUN, 1, METRIC, NAME, CHAMPION)
    cached.members.append(cached.members[0])  # what a stale cache would serve
    assert run_state(store, RUN, 1, METRIC, NAME, CHAMPION) is cached
    store.put_marker(RUN, "round-0001")  # the same place, another store (or a resumed round re-marked)
    rebuilt = run_state(store, RUN, 1, METRIC, NAME, CHAMPION)
    assert rebuilt is not cached and rebuilt.members == [m for m in full.members if m.round <= 1]
    # rounds without a completion marker are folded from their parts, but never cached
    markers = Path(copy) / "markers" / f"run_id={RUN}"
    for r in range(2, ROUNDS):
        (markers / f"round-{r:04d}").unlink()
    later = run_state(store, RUN, ROUNDS - 1, METRIC, NAME, CHAMPION)
    assert vars(later) == {**vars(full), "stamp": later.stamp}
    assert run_index._CACHE[(store.root_uri, RUN)].through == 1


def test_source_hash_follows_the_file(tmp_path, monkeypatch):
    import importlib

    module_file = tmp_path / "scorer_probe.py"
    module_file.write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("scorer_probe")
    first = source_hash(module)
    assert source_hash(module) == first and len(first) == 16
    module_file.write_text("VALUE = 22\n")
    assert source_hash(module) != first


def _id(text):
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def test_error_kinds_keep_the_store_order_holdout_part_first(tmp_path):
    """A champion that failed on holdout too: the archive lists its errors as the whole
    run's (sorted) parts give them, its holdout part before its round part."""
    from datetime import datetime, timezone

    from schemas.rows import CandidateRow, DistillateRow, ExecutionRow, RegistryRow, ScoreRow

    store = open_store(str(tmp_path))
    seed, champ, other = _id("seed"), _id("champ"), _id("other")

    def cand(cid, r, op):
        return CandidateRow(run_id=RUN, candidate_id=cid, round=r, parent_ids=[], operator=op, proposer="p",
                            artifact_kind="program", artifact_uri="u", island=-1 if r == 0 else 0, summary="")

    def exe(cid, case, split, status, error=None):
        return ExecutionRow(run_id=RUN, execution_id=_id(cid + case), candidate_id=cid, case_id=case, split=split,
                            seed=0, noise_key=None, attempt=0, status=status, error=error, wall_s=0.0, cpu_s=None,
                            peak_rss_mb=None, tokens_in=None, tokens_out=None, cost_usd=None, output_uri=None,
                            trajectory_uri=None)

    def score(cid, case, split, value, reason=None):
        return ScoreRow(run_id=RUN, execution_id=_id(cid + case), candidate_id=cid, case_id=case, split=split,
                        scorer="s", scorer_version="v", metric=METRIC, value=value, valid=reason is None,
                        reason=reason)

    def reg(cid, version):
        return RegistryRow(run_id=RUN, name=NAME, version=version, candidate_id=cid, stage="stable", alias=CHAMPION,
                           decision_id=_id("d" + cid), select_score=1.0, holdout_score=0.0,
                           event_at=datetime(2024, 1, 1, tzinfo=timezone.utc))

    store.write_part("candidates", RUN, "sample", "r0000", [cand(seed, 0, "seed")])
    store.write_part("candidates", RUN, "sample", "r0001", [cand(other, 1, "swap"), cand(champ, 1, "swap")])
    store.write_part("executions", RUN, "execute", f"r0000-{seed[:20]}", [exe(seed, "t0", "train", "ok")])
    store.write_part("executions", RUN, "execute", f"r0001-{champ[:20]}",
                     [exe(champ, "t0", "train", "error", "KeyError: x"), exe(champ, "s0", "select", "ok")])
    store.write_part("executions", RUN, "execute", f"r0001-{other[:20]}", [exe(other, "t0", "train", "timeout")])
    store.write_part("executions", RUN, "execute", f"holdout-{champ[:20]}-{champ[:20]}",
                     [exe(champ, "h0", "holdout", "memory"), exe(champ, "h1", "holdout", "error", "ValueError: y")])
    store.write_part("scores", RUN, "score", "r0000", [score(seed, "t0", "train", 0.5)])
    store.write_part("scores", RUN, "score", "r0001", [
        score(champ, "t0", "train", 0.0, "error: KeyError"), score(champ, "s0", "select", 2.0),
        score(other, "t0", "train", 0.0, "timeout"),
    ])
    store.write_part("scores", RUN, "score", f"holdout-{champ[:20]}",
                     [score(champ, "h0", "holdout", 0.0, "memory"), score(champ, "h1", "holdout", 0.0, "overlap: z")])
    for r in (0, 1):
        store.write_part("distillates", RUN, "distill", f"r{r:04d}", [] if r == 0 else [
            DistillateRow(run_id=RUN, distillate_id=_id("f"), round=1, kind="failure_mode", content="swap\ttimeout",
                          uri=None, source_execution_ids=[], support=1, status="observed")])
    store.write_part("registry", RUN, "register", "r0000", [reg(seed, 1)])
    store.write_part("registry", RUN, "register", "r0001", [reg(champ, 2)])
    for r in (0, 1):
        store.put_marker(RUN, f"round-{r:04d}")

    run_index.clear_cache()
    state = run_state(store, RUN, 1, METRIC, NAME, CHAMPION)
    executions, scores = store.read_rows("executions", RUN), store.read_rows("scores", RUN)
    assert state.members == build_archive(store.read_rows("candidates", RUN), scores, executions, METRIC)
    assert state.by_id[champ].errors == ("memory", "ValueError", "KeyError", "invalid error")
    ref = RunRef(store_uri=str(tmp_path), run_id=RUN)
    assert failure_modes_since(ref, 2, state, [], {}, 2) == \
        failure_modes(ref, 2, store.read_rows("candidates", RUN), executions, scores, 2)
    assert state.champion == current_champion(store.read_rows("registry", RUN), NAME) and state.registered == 2
    assert failure_memory(state.memory, 2) == failure_memory(store.read_rows("distillates", RUN), 2)
