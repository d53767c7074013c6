"""The reference data the suites read (data nobody on this project wrote: public
benchmark instances and published constructions), shipped inside the project as package
data under ``suites/reference/``. A clone, a wheel, the Docker image and a deployment's
worker all carry it; nothing is read from outside the package at run time.

Every file is pinned by sha256 in ``REFERENCE_SHA256``: a changed or truncated file stops
the suite before any work, instead of silently changing every score computed from it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

REFERENCE_DIR = Path(__file__).resolve().parent / "reference"
"""Where the package data lives (``suites/reference/<suite>/<file>``)."""

REFERENCE_SHA256: dict[str, str] = {
    "bin_packing/binpack1.txt": "dcee47fd5dfad97db1ccde3b84dbe0bec6a2705caeef8867b844709c14d80f8b",
    "bin_packing/binpack2.txt": "86fd8c3d3007047b2ed2e6d2d09924c04d286070968804643d20fd56f9123331",
    "bin_packing/binpack3.txt": "1b76d27908e52ddb73083f5eccf64954642028febcc71dee4be27a65cfebf1dd",
    "bin_packing/binpack4.txt": "85ce2b7156a183aa6a29f94ef7759f48461e8558c41c5b80fb481acc3faa5e7d",
    "bin_packing/funsearch_or3.json": "6b7fa0406e4c87c4fc104ad45dd207e24818e5bfe8ff89e23af680500586eb77",
    "bin_packing/funsearch_weibull_5k.json": "ce484d0a396628a2cd21de4629a075f19a7225e2bfa33f8ba07d4d66dcd6ff1d",
    "codemidas/tasks.json": "9036b177587128185c02d367c7c0fd0fc90f461008399b58dfc40c8babf40729",
    "circle_packing/alphaevolve_constructions.json":
        "812c10af2f2e59d58c9da272d30d9a47612ed1e271ebc9352ff86656f7051597",
    # scikit-learn 1.9.1's bundled datasets (sklearn/datasets/data), BSD-3-Clause
    "lasso/breast_cancer.csv": "fed3eb72d0575ef6192293f5093c6e801b1476b577d0386bf4455504522172ed",
    "lasso/diabetes_data_raw.csv.gz": "7fc0ded571454b1982210d3bb43f0aca44eae01a0b8654a3b24022bdb6b38009",
    "lasso/diabetes_target.csv.gz": "8e53f65eb811df43c206f3534bb3af0e5fed213bc37ed6ba36310157d6023803",
    "lasso/wine_data.csv": "10e8a802908b34f86e5da8ce962f3c806694bc98450a18f61851af59f324bede",
}
"""The published sha256 of every reference file a suite reads (relative to REFERENCE_DIR)."""


class ReferenceDataError(RuntimeError):
    """A reference data file is missing, malformed or not the file the suite pinned."""


def reference_path(relative_path: str) -> Path:
    """The packaged file ``relative_path`` (e.g. ``bin_packing/binpack1.txt``)."""
    if relative_path not in REFERENCE_SHA256:
        raise ReferenceDataError(f"{relative_path} is not a pinned reference file; known: {sorted(REFERENCE_SHA256)}")
    return REFERENCE_DIR / relative_path


def read_verified(relative_path: str, sha256: str | None = None, root: Path | None = None) -> bytes:
    """Bytes of a reference file after checking that their sha256 is the pinned one
    (``sha256`` overrides the pin; ``root`` another folder with the same layout)."""
    expected = sha256 or REFERENCE_SHA256.get(relative_path)
    path = (root / relative_path) if root is not None else reference_path(relative_path)
    if not path.is_file():
        raise ReferenceDataError(
            f"reference data file {path} is missing from the installed package; reinstall Ratchet "
            "(`make install`) or restore it with `git checkout -- suites/reference`"
        )
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise ReferenceDataError(
            f"reference data file {path} has sha256 {actual}, but the suite pinned {expected}; the file "
            "changed, so scores computed from it would not be comparable: restore it with "
            "`git checkout -- suites/reference`"
        )
    return data


def verify_all(prefix: str = "") -> int:
    """Check every pinned reference file under ``prefix`` (a suite's folder) before any
    work; returns how many were checked."""
    chosen = [name for name in REFERENCE_SHA256 if name.startswith(prefix)]
    for name in chosen:
        read_verified(name)
    return len(chosen)
