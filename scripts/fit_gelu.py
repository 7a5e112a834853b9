#!/usr/bin/python3
"""Fits the piecewise polynomials of training/models/gelu.cpp and prints them as C++ tables.

erf(z) on [0, 4) and exp(-z^2) on [0, 5), each in 8 equal intervals, as a polynomial in
t = z - (the interval's centre): least squares on 400 Chebyshev nodes an interval against
Python's double-precision math.erf and math.exp, rounded to float. Table[k][i] is interval i's
coefficient of t^k (one row per power, so a vector of 8 lanes looks a row up by interval).
Run it and paste its output over the tables to change them; tests/training/test_gelu.cpp holds the
result to double-precision GELU.
"""
import math

import numpy as np

INTERVALS = 8
NODES = 400


def fit(f, end, degree):
    width = end / INTERVALS
    rows = [[0.0] * INTERVALS for _ in range(degree + 1)]
    for i in range(INTERVALS):
        centre = (i + 0.5) * width
        t = np.cos(math.pi * (np.arange(NODES) + 0.5) / NODES) * width / 2
        y = np.array([f(centre + v) for v in t])
        coef = np.linalg.lstsq(np.vander(t, degree + 1, increasing=True), y, rcond=None)[0]
        for k in range(degree + 1):
            rows[k][i] = float(np.float32(coef[k]))
    return rows


def table(name, rows):
    lines = [f"const float {name}[{len(rows)}][{INTERVALS}] = {{"]
    for row in rows:
        lines.append("    {" + ", ".join(f"{v:.9g}f" for v in row) + "},")
    lines.append("};")
    return "\n".join(lines)


if __name__ == "__main__":
    print("// erf(z), z in [0, 4): intervals of 0.5 (scripts/fit_gelu.py).")
    print(table("kErf", fit(math.erf, 4.0, 8)))
    print("// exp(-z^2), z in [0, 5): intervals of 0.625 (scripts/fit_gelu.py).")
    print(table("kGauss", fit(lambda z: math.exp(-z * z), 5.0, 10)))
