"""better_turns (Better Turns): per-turn scoring on the reference history against
closed-loop workflow completion for behaviour-cloned toolsim policies, base and SFT."""
