"""EVOLVE-BLOCK markers (OpenEvolve's convention): a program may mark the one part of it
that a search may change, between ``# EVOLVE-BLOCK-START`` and ``# EVOLVE-BLOCK-END``
lines. The `openevolve` suite refuses a candidate whose text outside the block changed;
the `mutate` proposer edits only the block of a parent that has one."""

from __future__ import annotations

import textwrap

START, END = "# EVOLVE-BLOCK-START", "# EVOLVE-BLOCK-END"


def outside_block(source: str) -> str:
    """The text outside the EVOLVE-BLOCKs: what a candidate must leave as it was."""
    out, inside = [], False
    for line in source.splitlines():
        mark = line.strip()
        if mark == START:
            inside = True
        elif mark == END:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def split_block(source: str) -> tuple[str, str, str, str] | None:
    """(head up to and with the START line, the block dedented, its indent, the END line
    and the rest) of a program with exactly one block; None otherwise."""
    lines = source.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == START]
    ends = [i for i, line in enumerate(lines) if line.strip() == END]
    if len(starts) != 1 or len(ends) != 1 or ends[0] <= starts[0]:
        return None
    body = "".join(lines[starts[0] + 1 : ends[0]])
    block = textwrap.dedent(body)
    first = next((line for line in body.splitlines() if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip())] if block != body else ""
    return "".join(lines[: starts[0] + 1]), block, indent, "".join(lines[ends[0] :])


def join_block(head: str, block: str, indent: str, tail: str) -> str:
    """``split_block``'s parts with a new block (re-indented) between the markers."""
    body = textwrap.indent(block, indent) if indent else block
    return head + (body if body.endswith("\n") else body + "\n") + tail
