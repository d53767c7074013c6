"""The unshare level's mount plan, as text: what is hidden, and in which order the
sandbox directory is kept (bound aside before /tmp is covered, moved back after)."""

from pathlib import Path

from suites.executors.unshare import hidden_paths, outermost, under, unshare_script

REPO = Path(__file__).resolve().parents[3]


def test_the_project_and_a_store_outside_tmp_are_hidden_a_store_under_tmp_is_private_anyway(monkeypatch, tmp_path):
    monkeypatch.setenv("RATCHET_STORE", str(tmp_path))
    in_private_tmp = under(str(REPO), ["/tmp", "/dev/shm"])  # a clone under /tmp vanishes with the private /tmp
    assert (str(REPO) in hidden_paths()) is not in_private_tmp and str(tmp_path) not in hidden_paths()
    monkeypatch.setenv("RATCHET_STORE", "/var")
    assert "/var" in hidden_paths()
    monkeypatch.setenv("RATCHET_STORE", "s3://bucket/prefix")
    assert all(not p.startswith("s3") for p in hidden_paths())


def test_outermost_and_under():
    assert outermost(["/a/b", "/a", "/c/d", "/ab"]) == ["/a", "/ab", "/c/d"]
    assert under("/tmp/x", ["/tmp"]) and under("/tmp", ["/tmp"]) and not under("/tmpx", ["/tmp"])


def test_the_sandbox_is_bound_aside_before_tmp_is_covered_and_moved_back_after():
    steps = unshare_script("/tmp/sbx", ["/proj"], ["/proj/.venv/site"]).split("; ")
    assert steps[:4] == ["set -e", "scrubbed=$PATH", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                         "mount -t tmpfs -o mode=1777,size=64m tmpfs /dev/shm"]
    bind_aside = steps.index("mount --bind /tmp/sbx /dev/shm/.ratchet-stage/1")
    cover_tmp = steps.index("mount -t tmpfs -o mode=1777,size=64m tmpfs /tmp")
    cover_project = steps.index("mount -t tmpfs -o mode=0755,size=1m tmpfs /proj")
    move_back = steps.index("mount --move /dev/shm/.ratchet-stage/1 /tmp/sbx")
    assert bind_aside < cover_tmp < cover_project < move_back
    assert steps.index("mount --move /dev/shm/.ratchet-stage/0 /proj/.venv/site") > cover_project
    assert "mount -o remount,bind,ro /proj/.venv/site" in steps
    assert steps[-3:] == ["cd /tmp/sbx", "PATH=$scrubbed", "unset scrubbed OLDPWD;"]
