"""Paired comparisons across seeds for the findings scripts: each variant is run on the
same seeds (same cases, same initial weights, same prompt order), and a row reports the
per-seed means, the mean paired difference with its percentile-bootstrap 95% CI and an
exact sign test. With 3 seeds the CI is wide; it is printed as measured."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean
from typing import Sequence

from tasks.gate.stats import paired_bootstrap_ci, sign_test_p


@dataclass(frozen=True)
class PairedRow:
    finding: str
    metric: str
    a_name: str
    b_name: str
    a: tuple[float, ...]
    b: tuple[float, ...]
    digits: int = 3

    @property
    def differences(self) -> list[float]:
        return [y - x for x, y in zip(self.a, self.b)]

    def markdown(self) -> str:
        d = self.differences
        low, high = paired_bootstrap_ci(d)
        k = self.digits
        return (f"| {self.finding} | {self.metric} | {self.a_name} {fmean(self.a):.{k}f} | "
                f"{self.b_name} {fmean(self.b):.{k}f} | {fmean(d):+.{k}f} [{low:+.{k}f}, {high:+.{k}f}] | "
                f"{sign_test_p(d):.2f} | {len(d)} |")


HEADER = ("| finding | metric | A (mean over seeds) | B (mean over seeds) | B − A, 95% CI | sign p | seeds |\n"
          "| --- | --- | --- | --- | --- | --- | --- |")


def paired_row(finding: str, metric: str, a_name: str, a: Sequence[float], b_name: str,
               b: Sequence[float], digits: int = 3) -> PairedRow:
    """A row comparing variant B against variant A on the same seeds (a[i], b[i] share seed i),
    its values printed with ``digits`` decimals."""
    if len(a) != len(b) or not a:
        raise ValueError(f"{finding}: paired runs need the same non-zero number of seeds, got {len(a)} and {len(b)}")
    return PairedRow(finding, metric, a_name, b_name, tuple(map(float, a)), tuple(map(float, b)), digits)


def table(rows: Sequence[PairedRow]) -> str:
    return "\n".join([HEADER, *(r.markdown() for r in rows)])
