"""pde1d's tiny neural operator, in numpy: one spectral layer with a quadratic feature,

    u_{t+1} = irfft( A_k rfft(u_t)_k + B_k rfft(u_t^2)_k  for k < modes,  0 above )

(complex weights A, B per retained Fourier mode; ``rfft`` with norm "forward"). It is a
one-layer Fourier neural operator whose pointwise nonlinearity is the square: advection's
exact step is A_k = exp(-i k a dt), B = 0; a forward-Euler Burgers step is
A_k = exp(-nu k^2 dt), B_k = -i k dt / 2. Pretraining is least squares per mode (exact
and deterministic, done by the trusted suite); fine-tuning is full-batch gradient descent
(Adam or SGD with momentum 0.9, decoupled weight decay) on the one-step loss (MSE or L1)
of the target's training trajectories, with the gradient in closed form. Only numpy: the
sandbox runner carries this source.
"""

from __future__ import annotations

import numpy as np


def features(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """rfft(u) and rfft(u^2) (norm "forward") over the last axis."""
    return np.fft.rfft(u, axis=-1, norm="forward"), np.fft.rfft(u * u, axis=-1, norm="forward")


def step(weights: np.ndarray, u: np.ndarray) -> np.ndarray:
    """One step of the operator; weights (2, modes) complex (A, B)."""
    u_hat, v_hat = features(u)
    modes = weights.shape[1]
    out = np.zeros_like(u_hat)
    out[..., :modes] = weights[0] * u_hat[..., :modes] + weights[1] * v_hat[..., :modes]
    return np.fft.irfft(out, u.shape[-1], axis=-1, norm="forward")


def rollout(weights: np.ndarray, u0: np.ndarray, steps: int) -> np.ndarray:
    """Autoregressive predictions of frames 1..steps: (batch, steps, n)."""
    frames, u = [], u0
    with np.errstate(all="ignore"):
        for _ in range(steps):
            u = step(weights, u)
            frames.append(u)
    return np.stack(frames, axis=1)


def pretrain(data: np.ndarray, ridge: float = 1e-10) -> np.ndarray:
    """Least-squares (A_k, B_k) for every mode from trajectories (batch, frames, n): the
    one-step pairs (frame j -> j + 1), solved per mode with a tiny ridge (a mode with no
    energy gets 0)."""
    n = data.shape[-1]
    x, y = data[:, :-1].reshape(-1, n), data[:, 1:].reshape(-1, n)
    u_hat, v_hat = features(x)
    y_hat = np.fft.rfft(y, axis=-1, norm="forward")
    weights = np.zeros((2, n // 2 + 1), dtype=complex)
    for k in range(n // 2 + 1):
        design = np.stack([u_hat[:, k], v_hat[:, k]], axis=1)
        gram = design.conj().T @ design + ridge * np.eye(2)
        weights[:, k] = np.linalg.solve(gram, design.conj().T @ y_hat[:, k])
    return weights


def loss_and_grad(weights: np.ndarray, x: np.ndarray, y: np.ndarray, loss: str) -> tuple[float, np.ndarray]:
    """The one-step loss of pairs x -> y (mean over every value) and its gradient in
    the complex form dL/dRe w + i dL/dIm w."""
    u_hat, v_hat = features(x)
    error = step(weights, x) - y
    if loss == "mse":
        value, g = float(np.mean(error * error)), 2.0 * error / error.size
    else:
        value, g = float(np.mean(np.abs(error))), np.sign(error) / error.size
    n, modes = x.shape[-1], weights.shape[1]
    c = np.full(n // 2 + 1, 2.0)
    c[0] = 1.0
    if n % 2 == 0:
        c[-1] = 1.0
    grad_out = c * np.fft.rfft(g, axis=-1)  # dL/dRe + i dL/dIm of irfft's input (norm "forward")
    grad = np.stack([(grad_out[:, :modes] * u_hat[:, :modes].conj()).sum(axis=0),
                     (grad_out[:, :modes] * v_hat[:, :modes].conj()).sum(axis=0)])
    return value, grad


def fine_tune(pretrained: np.ndarray, data: np.ndarray, config: dict) -> tuple[np.ndarray, list[float]]:
    """A fresh copy of the pretrained weights, truncated to ``config["modes"]``, trained
    for ``config["epochs"]`` full-batch steps on the one-step pairs of ``data``; the
    weights and the loss before each step. Stops early (keeping the non-finite weights)
    when the loss is not finite."""
    n = data.shape[-1]
    x, y = data[:, :-1].reshape(-1, n), data[:, 1:].reshape(-1, n)
    weights = np.array(pretrained[:, :config["modes"]], dtype=complex)
    first, second = np.zeros_like(weights), np.zeros(weights.shape)
    lr, decay, losses = config["lr"], config["weight_decay"], []
    with np.errstate(all="ignore"):
        for t in range(1, config["epochs"] + 1):
            value, grad = loss_and_grad(weights, x, y, config["loss"])
            losses.append(value)
            if not np.isfinite(value) or not np.all(np.isfinite(grad)):
                break
            if config["optimizer"] == "adam":
                first = 0.9 * first + 0.1 * grad
                second = 0.999 * second + 0.001 * np.abs(grad) ** 2
                update = (first / (1 - 0.9 ** t)) / (np.sqrt(second / (1 - 0.999 ** t)) + 1e-8)
            else:
                first = 0.9 * first + grad
                update = first
            weights = weights * (1.0 - lr * decay) - lr * update
    return weights, losses
