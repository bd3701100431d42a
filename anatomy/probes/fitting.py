"""Least-squares fits for scaling laws: power laws in log-log space, logarithmic growth,
exponential rates.

Every fit returns plain floats so results can go straight into results.json.
"""

import numpy as np


def _positive(x, y, what):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"{what}: x and y must be 1-D of equal length, got {x.shape}, {y.shape}")
    if len(x) < 2:
        raise ValueError(f"{what}: need at least 2 points, got {len(x)}")
    return x, y


def fit_power_law(x, y):
    """Fit y = c · x^a by least squares on log y = a·log x + log c.

    Args: x, y: 1-D sequences of positive numbers (same length >= 2).
    Returns: dict(exponent=a, prefactor=c, r2=coefficient of determination in log space).
    """
    x, y = _positive(x, y, "fit_power_law")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("fit_power_law: x and y must be positive")
    lx, ly = np.log(x), np.log(y)
    a, b = np.polyfit(lx, ly, 1)
    resid = ly - (a * lx + b)
    ss = np.sum((ly - ly.mean()) ** 2)
    r2 = 1.0 - np.sum(resid**2) / ss if ss > 0 else 1.0
    return {"exponent": float(a), "prefactor": float(np.exp(b)), "r2": float(r2)}


def fit_power_law_2d(n, d, y):
    """Fit y = c · n^a · d^b jointly: log y = a·log n + b·log d + log c (least squares).

    Args: n, d, y: 1-D sequences of positive numbers of the same length (>= 3 points,
      and both n and d must vary).
    Returns: dict(exp_n=a, exp_d=b, prefactor=c, r2).
    """
    n, y = _positive(n, y, "fit_power_law_2d")
    d = np.asarray(d, np.float64)
    if d.shape != n.shape:
        raise ValueError(f"fit_power_law_2d: d has shape {d.shape}, expected {n.shape}")
    if np.any(n <= 0) or np.any(d <= 0) or np.any(y <= 0):
        raise ValueError("fit_power_law_2d: n, d and y must be positive")
    design = np.stack([np.log(n), np.log(d), np.ones_like(n)], axis=1)  # [P, 3]
    ly = np.log(y)
    coef, *_ = np.linalg.lstsq(design, ly, rcond=None)
    resid = ly - design @ coef
    ss = np.sum((ly - ly.mean()) ** 2)
    r2 = 1.0 - np.sum(resid**2) / ss if ss > 0 else 1.0
    return {
        "exp_n": float(coef[0]),
        "exp_d": float(coef[1]),
        "prefactor": float(np.exp(coef[2])),
        "r2": float(r2),
    }


def fit_log2(x, y):
    """Fit y = a + b · log2 x by least squares (a depth that grows by b per doubling of x).

    Args: x: 1-D positive numbers; y: 1-D numbers of the same length (>= 2).
    Returns: dict(per_doubling=b, intercept=a, r2=coefficient of determination).
    """
    x, y = _positive(x, y, "fit_log2")
    if np.any(x <= 0):
        raise ValueError("fit_log2: x must be positive")
    b, a = np.polyfit(np.log2(x), y, 1)
    resid = y - (a + b * np.log2(x))
    ss = np.sum((y - y.mean()) ** 2)
    r2 = 1.0 - float(np.sum(resid**2) / ss) if ss > 0 else 1.0
    return {"per_doubling": float(b), "intercept": float(a), "r2": float(r2)}


def fit_rate(distance, norm, *, floor=0.0):
    """Per-step growth (>1) or decay (<1) rate of a norm over distance: norm ≈ c · rate^distance.

    Fits log norm = log c + distance · log rate by least squares over the points whose norm
    is finite and > floor (vanished, underflowed or overflowed entries are dropped).

    Args: distance, norm: 1-D sequences; floor: smallest norm kept.
    Returns: dict(rate, log_rate, prefactor, n_points, r2); rate is nan if < 2 points survive.
    """
    dist, nrm = _positive(distance, norm, "fit_rate")
    keep = np.isfinite(nrm) & (nrm > floor) & (nrm > 0)
    if keep.sum() < 2:
        return {
            "rate": float("nan"),
            "log_rate": float("nan"),
            "prefactor": float("nan"),
            "n_points": int(keep.sum()),
            "r2": float("nan"),
        }
    dx, ly = dist[keep], np.log(nrm[keep])
    s, b = np.polyfit(dx, ly, 1)
    resid = ly - (s * dx + b)
    ss = np.sum((ly - ly.mean()) ** 2)
    r2 = 1.0 - np.sum(resid**2) / ss if ss > 0 else 1.0
    return {
        "rate": float(np.exp(s)),
        "log_rate": float(s),
        "prefactor": float(np.exp(b)),
        "n_points": int(keep.sum()),
        "r2": float(r2),
    }


def crossover(x, a, b):
    """The first x where a(x) exceeds b(x): two positive series over increasing x (costs: a
    the one that grows faster, b the one that overtakes it), each joined point to point in
    log-log space (a power law between grid points), so the crossing is the zero of
    log(a / b) on the segment where it first turns positive.

    Args: x: 1-D increasing positive numbers; a, b: positive numbers of the same length.
    Returns: the crossing x (a float; x[0] when a > b already there), or None when a <= b at
      every x of the grid (no crossing inside it).
    """
    x, a = _positive(x, a, "crossover")
    b = np.asarray(b, np.float64)
    if b.shape != x.shape:
        raise ValueError(f"crossover: b has shape {b.shape}, expected {x.shape}")
    if np.any(np.diff(x) <= 0) or np.any(x <= 0) or np.any(a <= 0) or np.any(b <= 0):
        raise ValueError("crossover: x must increase and every value must be positive")
    gap = np.log(a) - np.log(b)  # > 0: a costs more than b
    if gap[0] > 0:
        return float(x[0])
    for i in range(1, len(x)):
        if gap[i] > 0:
            lx0, lx1 = np.log(x[i - 1]), np.log(x[i])
            t = -gap[i - 1] / (gap[i] - gap[i - 1])  # the zero of the line through both gaps
            return float(np.exp(lx0 + t * (lx1 - lx0)))
    return None
