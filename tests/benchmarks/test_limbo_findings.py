"""The limbo findings script on one seed and a 16-request stream: every policy on the
same requests, the rows paired, a fixed arm exactly its own pass, the ablation
controllers choosing only their arms."""

from benchmarks.limbo_findings import ABLATIONS, headline, measure, most_accurate_fixed, rows_of, verdict


def test_findings_are_paired_on_the_same_requests():
    names = ["controller", "budget only", "none-full", "none-lean", "retrieval-lean"]
    found = measure(seeds=1, requests=16, instances=2, names=names)
    assert all(len(found[p]) == 16 for p in names)
    again = measure(seeds=1, requests=16, instances=2, names=["none-full"])
    assert again["none-full"] == found["none-full"]
    # one lean attempt never costs more than the full budget's attempts on the same request
    assert all(lean[1] <= full[1] for lean, full in zip(found["none-lean"], found["none-full"]))
    rows = rows_of(found)
    assert len(rows) == 2 * 4 and all(len(r.differences) == 16 for r in rows)
    assert headline(found).count("\n") == len(names) + 1
    assert most_accurate_fixed(found) in ("none-full", "none-lean", "retrieval-lean")
    assert most_accurate_fixed(found, memory_only=True) == "retrieval-lean"  # the one memory arm that ran
    assert verdict(found).count("->") == 2
    assert set(ABLATIONS["budget only"]) == {"none-lean", "none-full"}
