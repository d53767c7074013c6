"""limbo's picture: left, the accuracy–cost frontier: each policy's stream accuracy
against its mean simulated tokens per request (the controller and every fixed arm on the
same requests), the controller's paired request-bootstrap 95% CI of its accuracy
difference from each fixed arm as an error bar on that arm; right, the controller's
choices: how often it picked each arm, per block of the stream.

`limbo_build` reads (SQL); `limbo_figure` draws."""

from __future__ import annotations

from dataclasses import dataclass

from matplotlib.figure import Figure

from cli.report_data import fetch
from tasks.gate.stats import paired_bootstrap_ci

POLICIES = """
SELECT p.policy, avg(p.success::INT) AS accuracy, avg(p.tokens) AS tokens, count(*) AS requests,
       list(p.success::INT - c.success::INT ORDER BY p.t) AS diffs
FROM limbo_stream p JOIN limbo_stream c ON c.run_id = p.run_id AND c.t = p.t AND c.policy = 'controller'
WHERE p.run_id = $run GROUP BY p.policy ORDER BY p.policy
"""
CHOICES = """
SELECT t // greatest(1, ($n + 9) // 10) AS part, arm, count(*) AS picks
FROM limbo_stream WHERE run_id = $run AND policy = 'controller' GROUP BY ALL ORDER BY part, arm
"""


@dataclass(frozen=True)
class LimboSeries:
    policies: list[dict]
    """Per policy: accuracy, tokens per request, requests, and (fixed arms) the
    controller's Δaccuracy against it with its CI."""
    choices: list[dict]
    """Per tenth of the stream and arm: the controller's picks."""


def limbo_build(con, run_id: str) -> tuple[LimboSeries, str | None]:
    rows = fetch(con, POLICIES, run=run_id)
    policies = []
    for r in rows:
        d = [-x for x in r["diffs"]]  # controller - policy
        policies.append({"policy": r["policy"], "accuracy": r["accuracy"], "tokens": r["tokens"],
                         "requests": r["requests"], "delta": sum(d) / len(d) if d else 0.0,
                         "ci": paired_bootstrap_ci(d) if r["policy"] != "controller" else (0.0, 0.0)})
    n = max((p["requests"] for p in policies), default=0)
    choices = fetch(con, CHOICES, run=run_id, n=n) if policies else []
    return LimboSeries(policies, choices), None if policies else "no stream request recorded"


def limbo_figure(series: LimboSeries) -> Figure:
    from cli.report_draw import new_figure

    figure = new_figure(12, 5.0)
    ax = figure.add_subplot(1, 2, 1)
    for p in series.policies:
        mine = p["policy"] == "controller"
        ax.plot(p["tokens"], 100 * p["accuracy"], "*" if mine else "o", markersize=14 if mine else 7,
                color="#d62728" if mine else "#1f77b4")
        label = p["policy"].removeprefix("fixed:")
        if not mine:
            low, high = p["ci"]
            label += f" (ctrl Δ {100 * p['delta']:+.0f} pp [{100 * low:+.0f}, {100 * high:+.0f}])"
        ax.annotate(label, (p["tokens"], 100 * p["accuracy"]), textcoords="offset points", xytext=(5, 4), fontsize=7)
    ax.set_xlabel("simulated tokens per request (cost)")
    ax.set_ylabel("stream accuracy, %")
    ax.set_title("accuracy–cost frontier: controller (star) vs fixed arms", fontsize=10)
    right = figure.add_subplot(1, 2, 2)
    arms = sorted({c["arm"] for c in series.choices})
    parts = sorted({c["part"] for c in series.choices})
    bottom = [0] * len(parts)
    for arm in arms:
        picks = [sum(c["picks"] for c in series.choices if c["part"] == part and c["arm"] == arm) for part in parts]
        right.bar(parts, picks, bottom=bottom, label=arm)
        bottom = [b + p for b, p in zip(bottom, picks)]
    right.set_xlabel("tenth of the stream")
    right.set_ylabel("requests")
    right.set_title("the controller's arm per request", fontsize=10)
    if arms:
        right.legend(fontsize=7)
    return figure


def limbo_caption(series: LimboSeries) -> str:
    ctrl = next((p for p in series.policies if p["policy"] == "controller"), None)
    head = (f"The controller reached {100 * ctrl['accuracy']:.1f}% at {ctrl['tokens']:.0f} tokens per request over "
            f"{ctrl['requests']} requests. " if ctrl else "")
    return (head + "Every fixed arm ran the same stream (same requests, faults and repair draws); the error text on "
            "each is the controller's paired request-bootstrap 95% CI of its accuracy difference. Tokens are a "
            "uniform proxy (characters / 4 of context, steps and repair generations), not a bill.")
