"""research_world_models: Research World Models' selection step: predictors read an
archive of (environment, intervention, gain) records and choose which proposals to run.
So far only the pure pieces (predictors, leakage rule, Regret@k, NDCG@k); no flow yet."""
