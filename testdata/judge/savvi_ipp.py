#!/usr/bin/python3
"""Writes savvi's InhomogeneousPoissonProcess example's events
(examples/InhomogeneousPoissonProcess.qmd: rho = [0.8, 0.2],
delta = [1.5, 2], numpy's legacy seed 1, 1,000 events) as one line of
digits, 0 for the first process and 1 for the second, to
savvi_ipp_seed1.txt. numpy's legacy RandomState streams are stable, so
Debian's python3-numpy reproduces savvi's. internal/judge's
TestDirichletSavviExample reads the file and must stop where savvi's
example does: n = 210, p = 0.045580.
"""
import numpy as np

rho = np.array([0.8, 0.2])
delta = np.array([1.5, 2])
theta = rho * np.exp(delta) / np.sum(rho * np.exp(delta))
np.random.seed(1)
xs = np.random.multinomial(1, theta, size=1000)
print("".join(str(int(np.argmax(x))) for x in xs))
