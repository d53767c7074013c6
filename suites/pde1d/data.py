"""pde1d's trajectories: pure numpy generators of 1D periodic advection and viscous
Burgers on [0, 2 pi), from seeded initial conditions that are sums of sines.

    advection  u_t + a u_x = 0          exact: u(x, t) = u0(x - a t), evaluated analytically
    burgers    u_t + u u_x = nu u_xx    reference: a pseudo-spectral solver on a grid
                                        `refine` times finer (2/3 dealiasing, integrating-
                                        factor RK4), sampled back onto the coarse grid

A trajectory is an array (steps + 1, n): frame 0 is u0, frame j is u at t = j dt.
u0 = sum_{k=1..K} A_k sin(k x + phi_k) with A_k ~ U(-1, 1) / K and phi_k ~ U(0, 2 pi), so
|u0| <= 1 and (by the maximum principle) |u| <= 1 for Burgers, which fixes the stable
step of the solver. Every function here imports only numpy: the sandbox runner carries
their source (``suites/pde1d/suite.py``), so it regenerates the training trajectories
instead of receiving them.
"""

from __future__ import annotations

import numpy as np


def sine_coefficients(seed: int, k_max: int = 4) -> np.ndarray:
    """(k_max, 2): the amplitude and phase of modes 1..k_max of one initial condition."""
    rng = np.random.default_rng(seed)
    amplitude = rng.uniform(-1.0, 1.0, k_max) / k_max
    phase = rng.uniform(0.0, 2.0 * np.pi, k_max)
    return np.stack([amplitude, phase], axis=1)


def sine_sum(coefficients: np.ndarray, x: np.ndarray) -> np.ndarray:
    """u(x) = sum_k A_k sin(k x + phi_k) for coefficients (batch, K, 2) at points x:
    (batch, len(x))."""
    k = np.arange(1, coefficients.shape[1] + 1)
    angle = k[None, :, None] * x[None, None, :] + coefficients[:, :, 1, None]
    return np.einsum("bk,bkx->bx", coefficients[:, :, 0], np.sin(angle))


def advection(coefficients: np.ndarray, velocity: float, n: int, dt: float, steps: int) -> np.ndarray:
    """Exact advection trajectories (batch, steps + 1, n): u0 shifted by velocity * t."""
    x = 2.0 * np.pi * np.arange(n) / n
    frames = [sine_sum(coefficients, x - velocity * dt * j) for j in range(steps + 1)]
    return np.stack(frames, axis=1)


def burgers(coefficients: np.ndarray, viscosity: float, n: int, dt: float, steps: int, refine: int = 8) -> np.ndarray:
    """Viscous Burgers trajectories (batch, steps + 1, n) solved on n * refine points."""
    m = n * refine
    x = 2.0 * np.pi * np.arange(m) / m
    u_hat = np.fft.rfft(sine_sum(coefficients, x), axis=-1)
    k = np.arange(m // 2 + 1, dtype=float)
    keep = k <= m / 3.0  # 2/3 rule
    substeps = int(np.ceil(dt / (4.0 / m)))  # RK4 on u u_x with |u| <= 1, k <= m / 3: h k_max < 1.4
    h = dt / substeps
    e, e2 = np.exp(-viscosity * k * k * h), np.exp(-viscosity * k * k * h / 2.0)

    def nonlinear(v):
        return -0.5j * k * keep * np.fft.rfft(np.fft.irfft(v, m, axis=-1) ** 2, axis=-1)

    frames = [u_hat]
    for _ in range(steps):
        for _ in range(substeps):
            k1 = nonlinear(u_hat)
            k2 = nonlinear(e2 * (u_hat + h / 2.0 * k1))
            k3 = nonlinear(e2 * u_hat + h / 2.0 * k2)
            k4 = nonlinear(e * u_hat + h * e2 * k3)
            u_hat = e * u_hat + h / 6.0 * (e * k1 + 2.0 * e2 * (k2 + k3) + k4)
        frames.append(u_hat)
    fine = np.fft.irfft(np.stack(frames, axis=1), m, axis=-1)
    return fine[:, :, ::refine]


def trajectories(family: str, coef: float, seeds: list[int], n: int, dt: float, steps: int,
                 refine: int = 8) -> np.ndarray:
    """The trajectories (len(seeds), steps + 1, n) of one condition, one per seed."""
    coefficients = np.stack([sine_coefficients(int(s)) for s in seeds])
    if family == "advection":
        return advection(coefficients, coef, n, dt, steps)
    if family == "burgers":
        return burgers(coefficients, coef, n, dt, steps, refine)
    raise ValueError(f"pde1d: unknown family {family!r}; known: advection, burgers")
