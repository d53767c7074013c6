"""The feedback LLM behind `proposer: llm` (the paper's Gemini writer): trajectory ->
subtask tree JSON (``prompts/dense_tree.txt``) -> the rendered ``tree`` document the
receiver reads. Only the ``tree`` method is written by the model; the other methods are
mechanical (a dump, a flat list) or the ablation of the rule writer's tree, and stay so.

An answer that is not a tree of the plan's subgoals, or no answer (a timeout, an HTTP
error), is a recorded failure, never a failed run: the document keeps the reason
(``llm_error``) and carries no node, so the receiver retries as with no feedback.
Offline (no RATCHET_LLM_* endpoint) the default rule writer (``tree.py``) is used and a
run asking for `llm` stops at its distill stage with the message on how to configure one."""

from __future__ import annotations

import json
import os
from typing import Any, Callable

from schemas.configs import EvolveConfig
from suites.base import Case
from tasks.harness_loops.llm_edit import brief
from tasks.loops.dense.refit import rule_writer
from tasks.loops.dense.tree import plan_of, subgoal_name
from tasks.proposers import LLMProposer, ProposerUnavailable
from tasks.proposers.base import ProposerError
from tasks.proposers.llm import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, chat_completion

PROMPT = "dense_tree.txt"
STATUSES = ("completed", "open", "unreached")


def prompt(template: str, steps) -> str:
    plan = "\n".join(f"s{i}: {subgoal_name(k, n)}" for i, (k, n) in enumerate(plan_of(template)))
    lines = "\n".join(f"{s['step']} {s['kind']} {s['name']} ok={s['ok']} {s['args_json']} {s['result_json']}"
                      for s in steps)
    return brief(PROMPT, template=template, plan=plan, trajectory=lines or "(no step)")


def validated_tree(answer: str, template: str) -> dict[str, Any]:
    """The answer as a ``tree`` document; ValueError naming what is wrong."""
    text = answer.strip().removeprefix("```json").removeprefix("```").removesuffix("```")
    tree = json.loads(text)
    nodes = tree.get("nodes") if isinstance(tree, dict) else None
    if not isinstance(nodes, list) or len(nodes) != len(plan_of(template)):
        raise ValueError(f"expected {len(plan_of(template))} nodes, one per plan step")
    for index, node in enumerate(nodes):
        if node.get("node") != f"s{index}" or node.get("status") not in STATUSES:
            raise ValueError(f"nodes[{index}]: node must be 's{index}' and status one of {STATUSES}")
        for issue in node.get("issues", []):
            missing = {"kind", "name", "code", "message", "closed"} - set(issue)
            if missing:
                raise ValueError(f"nodes[{index}].issues: missing {sorted(missing)}")
    root = tree.get("root") if isinstance(tree.get("root"), dict) else {"status": "open", "open_issues": []}
    return {"method": "tree", "template": template, "root": root, "nodes": nodes}


def llm_writer(config: EvolveConfig) -> Callable[[str, Case, Any], dict[str, Any]]:
    """The writer for `proposer: llm`; raises ProposerUnavailable offline."""
    ready, message = LLMProposer(config).available()
    if not ready:
        raise ProposerUnavailable(message)

    def write(method: str, case: Case, episode: Any) -> dict[str, Any]:
        if method != "tree":
            return rule_writer(method, case, episode)
        template = case.payload["template"]
        body = {"model": os.environ[ENV_MODEL], "temperature": 0.0, "max_tokens": config.llm_max_tokens,
                "messages": [{"role": "user", "content": prompt(template, episode.steps)}]}
        try:
            reply = chat_completion(os.environ[ENV_BASE_URL], body, api_key=os.environ.get(ENV_API_KEY),
                                    timeout_s=config.llm_timeout_s)
            return validated_tree(reply.text, template)
        except (ValueError, AttributeError, TypeError, ProposerError) as exc:  # JSONDecodeError is a ValueError
            return {"method": "tree", "template": template, "root": {"status": "open", "open_issues": []},
                    "nodes": [], "llm_error": str(exc)[:300]}

    return write
