"""Turning a model's answer into a child program: SEARCH/REPLACE blocks in the
aider/OpenEvolve format, or a whole program in a ```python fence.

    <<<<<<< SEARCH
    old lines
    =======
    new lines
    >>>>>>> REPLACE

Matching rules (pure functions, no model needed to test them):
- Text is compared line by line after turning CRLF/CR into LF, so a block matches whole
  lines only and line-ending differences never matter; the result uses LF.
- Blocks apply in order, each to the program as edited by the blocks before it.
- A SEARCH must match exactly once. When the exact lines are not found, a fallback
  ignores trailing whitespace on every line (models often drop or add it); leading
  indentation must always match, since re-indenting a replacement is guesswork.
- An empty SEARCH is an error (the position of an insertion would be ambiguous); an
  empty REPLACE (or one holding a single blank line) deletes the matched lines.
"""

from __future__ import annotations

import ast
import re

from tasks.proposers.base import ProposerError

BLOCK = re.compile(
    r"^<{7} SEARCH[ \t]*\n(.*?)^={7}[ \t]*\n(.*?)^>{7} REPLACE[ \t]*$", re.MULTILINE | re.DOTALL
)
SEARCH_MARKER = re.compile(r"^<{7} SEARCH[ \t]*$", re.MULTILINE)
FENCE = re.compile(r"^```(python|py|python3)?[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


class DiffError(ProposerError):
    """A model's answer could not be turned into a program; the message says which
    block failed and why. Asking the model again may help; resending the same answer
    will not."""


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _drop_final_newline(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


def parse_diff_blocks(text: str) -> list[tuple[str, str]]:
    """(search, replace) pairs in order of appearance; [] when there are none. A SEARCH
    marker without its ======= and >>>>>>> REPLACE (e.g. a truncated answer) is an error
    rather than a silently dropped block."""
    text = _lf(text)
    blocks = [(_drop_final_newline(s), _drop_final_newline(r)) for s, r in BLOCK.findall(text)]
    markers = len(SEARCH_MARKER.findall(text))
    if markers != len(blocks):
        raise DiffError(
            f"found {markers} '<<<<<<< SEARCH' markers but {len(blocks)} complete blocks; "
            "each block needs '=======' and '>>>>>>> REPLACE' on their own lines"
        )
    return blocks


def _matches(lines: list[str], search: list[str], strip: bool) -> list[int]:
    if strip:
        lines = [line.rstrip() for line in lines]
        search = [line.rstrip() for line in search]
    size = len(search)
    return [start for start in range(len(lines) - size + 1) if lines[start : start + size] == search]


def _apply_block(lines: list[str], search: str, replace: str, index: int) -> list[str]:
    if not search.strip():
        raise DiffError(f"block {index}: SEARCH is empty; quote the lines to replace")
    wanted = search.split("\n")
    starts = _matches(lines, wanted, strip=False) or _matches(lines, wanted, strip=True)
    if not starts:
        raise DiffError(f"block {index}: SEARCH text not found in the program (first line {wanted[0]!r})")
    if len(starts) > 1:
        raise DiffError(
            f"block {index}: SEARCH text is ambiguous, it matches {len(starts)} places "
            f"(lines {', '.join(str(s + 1) for s in starts)}); include more surrounding lines"
        )
    start = starts[0]
    new = replace.split("\n") if replace else []
    return lines[:start] + new + lines[start + len(wanted) :]


def apply_diff_blocks(source: str, blocks: list[tuple[str, str]]) -> str:
    """``source`` with every block applied in order (rules in the module docstring)."""
    source = _lf(source)
    trailing = source.endswith("\n")
    lines = _drop_final_newline(source).split("\n")
    for index, (search, replace) in enumerate(blocks):
        lines = _apply_block(lines, _lf(search), _lf(replace), index)
    return "\n".join(lines) + ("\n" if trailing else "")


def _defines(body: str, entrypoint: str) -> bool:
    return re.search(rf"^def {re.escape(entrypoint)}\s*\(", body, re.MULTILINE) is not None


def fenced_program(text: str, entrypoint: str = "") -> str | None:
    """The longest fenced block that is a whole program: one that defines ``entrypoint``
    at top level, or, when no entrypoint is known, one tagged ```python. A bare fence or a
    snippet (an example, a changed line) is never taken as the program."""
    bodies = [body for tag, body in FENCE.findall(_lf(text))
              if (_defines(body, entrypoint) if entrypoint else bool(tag))]
    return max(bodies, key=len) if bodies else None


def program_from_response(source: str, text: str, entrypoint: str = "") -> tuple[str, str]:
    """(child source, "diff" | "rewrite") from a model's answer to an edit request on
    ``source`` (a parsing program). Diff blocks win over a fence, since diff blocks are
    often fenced too. A child that does not parse, or that is the same program, is an
    error: neither is worth an evaluation."""
    blocks = parse_diff_blocks(text)
    if blocks:
        child, mode = apply_diff_blocks(source, blocks), "diff"
    else:
        program = fenced_program(text, entrypoint)
        if program is None:
            whole = f"defining {entrypoint}()" if entrypoint else "in a ```python fence"
            raise DiffError(f"the answer has neither SEARCH/REPLACE blocks nor a whole program {whole}")
        child, mode = program, "rewrite"
    try:
        tree = ast.parse(child)
    except SyntaxError as error:
        raise DiffError(f"the edited program does not parse: {error.msg} at line {error.lineno}") from error
    if ast.dump(tree) == ast.dump(ast.parse(source)):
        raise DiffError("the answer leaves the program unchanged (at most comments or formatting differ)")
    return child, mode
