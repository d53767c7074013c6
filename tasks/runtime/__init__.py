"""The runtime every stage shares: a run's address and cached config, suite and store
(`context`), the run lifecycle (`lifecycle`: start, resume checks, finish), retry
policy (`retry`), progress reporting (`progress`) and named crash points (`failpoints`).
Changing it changes every loop: run the whole suite."""
