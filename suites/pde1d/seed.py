"""Seed for the pde1d suite: a plain fine-tuning configuration of the pretrained operator."""

LEARNING_RATE = 0.001
OPTIMIZER = "adam"  # "adam" or "sgd" (momentum 0.9)
LOSS = "mse"  # "mse" or "l1", on one-step predictions
EPOCHS = 50  # full-batch steps
MODES = 16  # Fourier modes kept (1..32); the rest are cut
WEIGHT_DECAY = 0.0


def config():
    """The fine-tuning configuration (checked against the suite's CONFIG_SPACE)."""
    return {"lr": LEARNING_RATE, "optimizer": OPTIMIZER, "loss": LOSS, "epochs": EPOCHS,
            "modes": MODES, "weight_decay": WEIGHT_DECAY}
