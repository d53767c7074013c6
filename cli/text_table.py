"""A result table as plain text (no rich), for `ratchet sql` on both of its paths."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

MAX_ROWS = 200


def cell(value: object) -> str:
    """How one value prints: floats to 6 significant digits, NULL as nothing."""
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else str(value)


def cells(rows: Iterable[Sequence[object]]) -> list[list[str]]:
    return [[cell(value) for value in row] for row in rows]


def text_table(names: Sequence[str], rows: Sequence[Sequence[str]], max_rows: int = MAX_ROWS) -> str:
    """``names`` over ``rows`` in a box; at most ``max_rows`` rows, then a line saying
    how many more there are. Multi-line cells keep their line breaks."""
    shown = [[str(c).split("\n") for c in row] for row in rows[:max_rows]]
    head = [str(n).split("\n") for n in names]
    widths = [max([len(line) for line in head[i]] + [len(line) for row in shown for line in row[i]] + [1])
              for i in range(len(names))]

    def rule(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def lines(row: list[list[str]], bar: str) -> list[str]:
        height = max([len(c) for c in row] + [1])
        return [bar + bar.join(f" {(c[k] if k < len(c) else ''):<{w}} " for c, w in zip(row, widths)) + bar
                for k in range(height)]

    out = [rule("┏", "━", "┳", "┓"), *lines(head, "┃"), rule("┡", "━", "╇", "┩")]
    for row in shown:
        out.extend(lines(row, "│"))
    out.append(rule("└", "─", "┴", "┘"))
    if len(rows) > max_rows:
        out.append(f"... {len(rows) - max_rows} more rows (use --format csv for all)")
    return "\n".join(out)
