"""The `designer_rsi` loop's own stages and logic: Designer-RSI. Its author's to change; its tests are
tests/tasks/loops/designer_rsi and tests/flows/test_designer_rsi.py."""
