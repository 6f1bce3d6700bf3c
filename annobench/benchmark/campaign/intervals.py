"""Confidence intervals of the results tables (Villegas and Paredes 2014, section 3.3, Figure 2:
"the 95% confidence intervals estimated by Wilson's method, employing the standard deviation for
the individual measures").

The overview gives no formula. The reading here: Wilson's score interval for a proportion p of n
trials,

    centre = (p + z^2 / 2n) / (1 + z^2 / n)
    half   = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)

with the mean m of the individual measures (one F1 or AP per image, one F1 per concept, one AP
per concept, one Meteor per image, ...) in place of p and their population variance s^2 in place
of the binomial variance p (1 - p). For measures that are 0 or 1 per sample (R@k: a query's image
is ranked within k or not) s^2 = m (1 - m), and the interval is exactly Wilson's. For values in
[0, 1], s^2 <= m (1 - m), so the interval lies inside Wilson's interval for m and within [0, 1].
Departures from a textbook interval of a mean: the samples are taken as independent, and the
shift of the centre towards 1/2 that Wilson's method makes for proportions is kept for means.
"""

from __future__ import annotations

import math

import numpy as np

LEVEL = 0.95
Z = 1.959963984540054  # the standard normal's 0.975 quantile: two-sided 95 %


def wilson_interval(mean: float, std: float, samples: int, z: float = Z) -> tuple[float, float] | None:
    """(low, high) of the interval around `mean` of `samples` values whose population standard
    deviation is `std`; None without samples or without a mean (NaN)."""
    if samples <= 0 or mean is None or std is None or not math.isfinite(mean) or not math.isfinite(std):
        return None
    n, z2 = float(samples), z * z
    centre = (mean + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(std * std / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def sample_statistics(values) -> dict:
    """{"value": mean, "std": population standard deviation, "samples": n} of the individual
    measures (value and std NaN, written null, without any)."""
    array = np.asarray(values, dtype=np.float64)
    if not array.size:
        return {"value": math.nan, "std": math.nan, "samples": 0}
    return {"value": float(array.mean()), "std": float(array.std(ddof=0)), "samples": int(array.size)}
