"""evoalloc: EvoAlloc's loop: a Full / Partial / Discard evaluation-budget allocator
inside program evolution, revised from experience and kept only if it wins the shadow test."""
