"""The six generic stages as Prefect tasks over pure functions: sample, execute (the
sandbox), score (the trusted scorer), distill (the failure memory), gate (in
`tasks.gate`) and register. Program-search loops compose them directly; the other
families reuse execute, score and register. Changing a stage changes every loop."""
