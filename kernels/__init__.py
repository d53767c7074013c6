"""Pure PyTorch kernels: a tiny LM, log-prob gathers, advantages, masks and the losses of
the GRPO family, the PPO/PACT critic, GVPO and the OPD family. Imports only torch and
pydantic (configs); no I/O, no logging, no device choice."""
