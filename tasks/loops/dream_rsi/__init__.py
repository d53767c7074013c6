"""dream_rsi: Dream-RSI's loop: a search-scheduling policy improved by replaying
recorded search trees, then run for real."""
