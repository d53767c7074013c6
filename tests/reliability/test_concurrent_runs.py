"""Four loops of different families (evolve, self_healing, medrsi, grpo) at once on one
store, each with its own Prefect home, while `ratchet compact` and `ratchet catalog`
repeat: no row lost or duplicated against the same runs made alone, every run resumable."""

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_four_concurrent_runs_with_compaction_and_catalogs_lose_and_duplicate_nothing(faults, tmp_path):
    figures = faults.concurrent_runs(base=tmp_path)
    assert figures["runs"] == 4
    assert set(figures["codes"].values()) == {0}
    assert figures["compacts"] >= 4 and figures["catalogs"] >= 1  # the alone runs were compacted under the writers
    assert (figures["lost"], figures["duplicated"]) == (0, 0)
    assert figures["failures"] == []
