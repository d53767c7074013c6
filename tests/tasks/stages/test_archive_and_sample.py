import random

from schemas.configs import EvolveConfig
from schemas.ids import content_id
from tasks.proposers import make_proposer
from tasks.search.archive import Member, island_pool, tournament
from tasks.stages.sample import RunHistory, propose_children

PROGRAM = """import numpy as np


def priority(item, bins):
    score = -(bins - item)
    if item > 0.5 * bins.max():
        score = score * 1.5
    return score
"""


def member(cid, island, score, round_index=1):
    return Member(candidate_id=cid, round=round_index, island=island, operator="constant",
                  train_score=score, select_score=score)


def test_tournament_picks_best_of_draw_and_breaks_ties_by_id():
    pool = [member("a", 0, 1.0), member("b", 0, 3.0), member("c", 0, 2.0)]
    assert tournament(pool, random.Random(0), size=50).candidate_id == "b"
    tied = [member("x", 0, 1.0), member("y", 0, 1.0)]
    assert tournament(tied, random.Random(0), size=50).candidate_id == "y"
    assert tournament([member("u", 0, None)], random.Random(0), 1).candidate_id == "u"


def test_island_pool_includes_seed_and_migrant_on_interval():
    config = EvolveConfig(islands=2, migration_interval=2)
    archive = [member("seed", -1, 0.0, 0), member("i0", 0, 1.0), member("i1-low", 1, 0.5), member("i1-best", 1, 2.0)]
    assert {m.candidate_id for m in island_pool(archive, 0, round_index=1, config=config)} == {"seed", "i0"}
    assert {m.candidate_id for m in island_pool(archive, 0, round_index=2, config=config)} == {"seed", "i0", "i1-best"}


def test_propose_children_is_deterministic_and_never_duplicates():
    config = EvolveConfig(islands=2, children_per_round=6)
    archive = [member(content_id(PROGRAM), -1, 1.0, 0)]
    sources = {content_id(PROGRAM): PROGRAM}
    proposer = make_proposer("mutate", config)

    def draw(seed):
        return propose_children(archive, sources, [], proposer, config, 1, 6, random.Random(seed))

    first, again = draw(7), draw(7)
    assert [p.source for p, _ in first] == [p.source for p, _ in again]
    assert [island for _, island in first] == [0, 1, 0, 1, 0, 1]
    ids = [content_id(p.source) for p, _ in first]
    assert len(set(ids)) == len(ids) and content_id(PROGRAM) not in ids
    assert [p.source for p, _ in draw(8)] != [p.source for p, _ in first]


def test_run_history_holds_the_scored_members_and_reads_a_source_only_when_asked():
    class Recorded(dict):
        def __missing__(self, candidate_id):
            read.append(candidate_id)
            return f"# program {candidate_id}"

    read: list[str] = []
    history = RunHistory([member("a", 0, 1.0), member("b", 0, None), member("c", 1, 2.0)], Recorded())
    assert len(history) == 2 and read == []
    assert [(h.candidate_id, h.source, h.score) for h in history] == [
        ("a", "# program a", 1.0), ("c", "# program c", 2.0)]
    assert read == ["a", "c"] and [h.candidate_id for h in history[1:]] == ["c"]
