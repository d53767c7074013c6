"""Recorded trees read back from rows: an evolve run's archive as one tree."""

from schemas.rows import CandidateRow, ScoreRow
from tasks.search.trees import archive_tree


def cand(cid, rnd, parents):
    return CandidateRow(run_id="r", candidate_id=cid, round=rnd, parent_ids=parents, operator="op", proposer="mutate",
                        artifact_kind="program", artifact_uri="u", island=0, summary="")


def score(cid, value, split="select"):
    return ScoreRow(run_id="r", execution_id=f"e-{cid}-{split}", candidate_id=cid, case_id="k", split=split,
                    scorer="s", scorer_version="v", metric="m", value=value, valid=True, reason=None)


def test_an_archive_becomes_a_tree_without_unscored_nodes_or_their_descendants():
    candidates = [cand("root", 0, []), cand("a", 1, ["root"]), cand("b", 1, ["root"]), cand("u", 1, ["root"]),
                  cand("c", 2, ["a"]), cand("v", 2, ["u"])]
    scores = [score("root", 1.0), score("a", 2.0), score("a", 9.0, "train"), score("b", 0.5), score("c", 3.0),
              score("v", 4.0)]  # u never scored, so v (its child) is out too
    tree = archive_tree("evolve-1", candidates, scores, "m")
    assert list(tree.nodes) == ["root", "a", "b", "c"]
    assert tree.children == {"root": ["a", "b"], "a": ["c"]}
    assert tree.nodes["a"].score == 2.0 and tree.best == 3.0
    assert archive_tree("none", [cand("x", 1, ["y"])], [], "m") is None
