"""The harness-loop family (self_healing, growing_harness, medrsi, designer_rsi on
toolsim): what every harness loop shares: harness documents and proposals
(`documents`), gated metrics (`metrics`), evaluation episodes and trajectories
(`episodes`) and MLflow tracking of a decision (`tracking`). Changing it changes four
loops: run tests/tasks/harness_loops, tests/tasks/loops/{self_healing,growing_harness,
medrsi,designer_rsi} and their tests/flows."""
