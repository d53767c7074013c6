"""The feedback methods DENSE is compared with, each a function of the same initial
trajectory to a feedback document (plain JSON data) carried to the retry.

- ``none``: nothing is carried over.
- ``raw``: the raw error dump: every failed step's tool, code and message, in order; no
  observations, no subgoals, no closure.
- ``flat``: a flat summary (the paper's "without hierarchy"): every issue with its
  supporting observation and every working operation, unattributed and without status.
- ``tree``: DENSE: the nested task tree (``tree.py``). Completed branches are rendered
  briefly with their shortcut (the working operation that rebuilds the progress);
  unresolved branches in full, with every issue, its closure and its evidence.
- ``tree_nsr``: the tree without shortcut and reconciliation (the paper's ablation): the
  lenient closure of ``build_tree(reconcile=False)`` and no working operations.
- ``labelled``: outcome-labelled feedback on the same trajectory (``receiver.py``): the
  hidden verdict and unmet goal conditions, read by the rule proposer. It is the only
  method that sees an outcome; it is the reference the unlabelled methods are measured
  against, not a DENSE arm.

``tokens`` counts the words and symbols of the rendered document: the retry's reading
cost (the paper's retry tokens exclude the analysis cost, and so does this).
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

from schemas.ids import content_id
from tasks.loops.dense.tree import Issue, Tree, build_tree

UNLABELLED = ("none", "raw", "flat", "tree", "tree_nsr")
METHODS = UNLABELLED + ("labelled",)
TOKEN = re.compile(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")


def _error(step: Mapping[str, Any]) -> dict[str, Any]:
    return (json.loads(step["result_json"] or "{}").get("error")) or {"code": "check_failed", "message": ""}


def raw_dump(steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"method": "raw", "errors": [
        {"step": int(s["step"]), "tool": s["name"], "code": _error(s)["code"], "message": _error(s)["message"]}
        for s in steps if not s["ok"]]}


def _issue_json(issue: Issue, status: bool) -> dict[str, Any]:
    out = {"issue": issue.label, "kind": issue.kind, "name": issue.name, "code": issue.code,
           "message": issue.message, "evidence_step": issue.step, "next_page": issue.next_page}
    if status:
        out.update(closed=issue.closed, closing_step=issue.closing_step)
    return out


def flat_summary(tree: Tree) -> dict[str, Any]:
    return {"method": "flat",
            "issues": [_issue_json(i, status=False) for n in tree.subgoals for i in n.issues],
            "worked": [dict(n.working) for n in tree.subgoals if n.working is not None]}


def render_tree(tree: Tree, method: str = "tree", shortcuts: bool = True) -> dict[str, Any]:
    nodes = []
    for node in tree.subgoals:
        if node.status == "completed":
            brief = {"node": node.node_id, "subgoal": node.subgoal, "status": node.status,
                     "recovered": node.failures > 0}
            if shortcuts and node.working is not None:
                brief["shortcut"] = dict(node.working)
            nodes.append(brief)
            continue
        nodes.append({"node": node.node_id, "subgoal": node.subgoal, "status": node.status, "entries": node.entries,
                      "failures": node.failures, "issues": [_issue_json(i, status=True) for i in node.issues]})
    root = {"status": tree.root.status, "open_issues": [i.label for i in tree.root.issues]}
    return {"method": method, "template": tree.template, "root": root, "nodes": nodes}


def unlabelled_feedback(method: str, template: str, steps: Sequence[Mapping[str, Any]],
                        skill: str) -> dict[str, Any]:
    """The feedback document of an unlabelled ``method`` on one trajectory."""
    if method == "none":
        return {"method": "none"}
    if method == "raw":
        return raw_dump(steps)
    if method == "flat":
        return flat_summary(build_tree(template, steps, skill))
    if method == "tree":
        return render_tree(build_tree(template, steps, skill))
    if method == "tree_nsr":
        return render_tree(build_tree(template, steps, skill, reconcile=False), method, shortcuts=False)
    raise ValueError(f"dense: unknown unlabelled feedback method {method!r}; known: {list(UNLABELLED)}")


def text_of(document: Mapping[str, Any]) -> str:
    return json.dumps(document, sort_keys=True, indent=1)


def tokens(document: Mapping[str, Any]) -> int:
    """Words and symbols of the rendered document; ``none`` reads nothing."""
    return 0 if document.get("method") == "none" else len(TOKEN.findall(text_of(document)))


def feedback_id(document: Mapping[str, Any]) -> str:
    """The memory version's content id: sha256 of its canonical JSON."""
    return content_id(json.dumps(document, sort_keys=True))
