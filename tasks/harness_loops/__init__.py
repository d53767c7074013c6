"""The harness-loop family (self_healing, growing_harness, medrsi, designer_rsi,
graphskillevo on toolsim): what every harness loop shares: harness documents and
proposals (`documents`), the rule catalogue read from failures (`catalogue`: skilllift, moscopt),
gated metrics (`metrics`), evaluation episodes, trajectories and
running a candidate on the cases it has not run (`episodes`) and MLflow tracking of a
decision (`tracking`). Changing it changes five loops: run tests/tasks/harness_loops,
tests/tasks/loops/{self_healing,growing_harness,medrsi,designer_rsi,graphskillevo} and
their tests/flows."""
