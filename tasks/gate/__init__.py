"""The gate library: pure decisions from evidence rows (best_so_far, stats), and the
gate stage that records them."""
