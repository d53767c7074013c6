"""rsi_anything: RSI-Anything's loop: a proposer policy and an outcome-predicting world
model updated together, the pair kept only when it beats the old pair."""
