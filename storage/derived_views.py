"""The views ``storage.catalog`` derives from the table views: "current state" views
(the latest event wins) and the per-run ``ledger`` of what each run spent (README,
"Tables"). Each is a query over the table views, so it is as fresh as they are."""

DERIVED_VIEWS = {
    # The status a run is in now: its latest event; a terminal status wins a tie.
    "runs_current": (
        "SELECT * FROM runs QUALIFY row_number() OVER (PARTITION BY run_id "
        "ORDER BY event_at DESC, CASE status WHEN 'running' THEN 0 ELSE 1 END DESC) = 1"
    ),
    # Who holds each alias of each registered name now (alias NULL: the name's latest
    # un-aliased event): the latest registry event per (name, alias).
    "registry_current": (
        "SELECT * FROM registry QUALIFY row_number() OVER (PARTITION BY name, alias "
        "ORDER BY event_at DESC, version DESC) = 1"
    ),
    # What each run spent (README "Tables"): its LLM calls (an LLM-written candidate, with
    # the call's seconds), their tokens, and its evaluations (executions) with their
    # sandbox CPU seconds. One row per run of `runs`; sums over no rows are 0.
    "ledger": (
        "SELECT r.run_id, r.loop, r.suite, r.status, coalesce(c.llm_calls, 0) AS llm_calls, "
        "coalesce(c.tokens_in, 0) AS tokens_in, coalesce(c.tokens_out, 0) AS tokens_out, "
        "coalesce(c.llm_seconds, 0.0) AS llm_seconds, coalesce(e.sandbox_cpu_s, 0.0) AS sandbox_cpu_s, "
        "coalesce(e.evaluations, 0) AS evaluations FROM runs_current r "
        "LEFT JOIN (SELECT run_id, count(latency_s) AS llm_calls, sum(tokens_in) AS tokens_in, "
        "sum(tokens_out) AS tokens_out, sum(latency_s) AS llm_seconds FROM candidates GROUP BY run_id) c USING (run_id) "
        "LEFT JOIN (SELECT run_id, count(*) AS evaluations, sum(cpu_s) AS sandbox_cpu_s FROM executions "
        "GROUP BY run_id) e USING (run_id)"
    ),
}
