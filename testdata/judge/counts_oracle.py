#!/usr/bin/python3
"""An independent computation of the count judge's e-values, for
internal/judge's TestCountOracle.

It reads cases as JSON on standard input: a list of
{"alpha", "tolerance", "direction", "looks": [{"canary": {"bad", "total"},
"baseline": {...}}, ...]} with cumulative integer counts, and writes, for
each case, the e-value at every look as JSON. Every likelihood is scipy's
binomial log-pmf; the mixture is scipy's logsumexp with the weights
WEIGHTS divided by their sum (its b argument); the dispersion is
Pearson's statistic summed term by term over blocks of at least BLOCK bad
events (the open block included), plus the prior, over Wilson and
Hilferty's approximation of chi-square's 20% quantile, its normal score
from scipy's norm.ppf; a case with a "dispersion" takes that value
instead. A case with a "history" (the baseline's cumulative counts at each
interval before the start, [{"bad", "total"}, ...]) takes as the prior the
Pearson statistic and degrees of freedom of the history's baseline bad
events in blocks of at least HISTORY_BLOCK, when there are two blocks or
more and bad events among them. Nothing is shared with the Go code but the definition in
internal/judge/doc.go.

It also answers {"dirichlet": [{"counts", "theta0", "k"}, ...]} with the
log Bayes factors of Lindon & Malek's Dirichlet-multinomial test, from
scipy's loggamma.
"""
import json
import sys

import numpy as np
from scipy.special import logsumexp, loggamma
from scipy.stats import binom, norm

ALTERNATIVES = [1.1, 1.25, 1.5, 2, 3, 5, 10]
WEIGHTS = [1, 2, 3, 5, 3, 2, 1]
PRIOR, WEIGHT, BLOCK = 2.0, 1.0, 10
HISTORY_BLOCK = 5
Z = norm.ppf(0.2)


def chi2_lower(df):
    a = 2 / (9 * df)
    v = max(1 - a + Z * np.sqrt(a), 0.05)
    return df * v ** 3


def blocks(cb, ct, bb, bt):
    """Groups the looks' deltas into blocks of at least BLOCK bad events of
    both sides; the last, open block may hold fewer."""
    out, cur = [], [0, 0, 0, 0]
    for k in range(len(cb)):
        cur = [cur[0] + cb[k], cur[1] + ct[k], cur[2] + bb[k], cur[3] + bt[k]]
        if cur[0] + cur[2] >= BLOCK:
            out.append(cur)
            cur = [0, 0, 0, 0]
    if any(cur):
        out.append(cur)
    return out


def pearson(bad, total):
    pairs = [(b, t) for b, t in zip(bad, total) if t > 0]
    if len(pairs) < 2 or sum(b for b, _ in pairs) <= 0:
        return 0.0, 0.0
    p = sum(b for b, _ in pairs) / sum(t for _, t in pairs)
    x2 = sum((b - p * t) ** 2 / (p * t) for b, t in pairs)
    return x2, len(pairs) - 1.0


def history_prior(history):
    bad, total, prev, cur = [], [], {"bad": 0, "total": 0}, [0, 0]
    for h in history:
        cur = [cur[0] + h["bad"] - prev["bad"], cur[1] + h["total"] - prev["total"]]
        prev = h
        if cur[0] >= HISTORY_BLOCK:
            bad.append(cur[0])
            total.append(cur[1])
            cur = [0, 0]
    if any(cur):
        bad.append(cur[0])
        total.append(cur[1])
    x2, df = pearson(bad, total)
    if df >= 1:
        return x2, df
    return WEIGHT * PRIOR, WEIGHT


def evalues(case):
    prior_x2, prior_df = WEIGHT * PRIOR, WEIGHT
    if case.get("history"):
        prior_x2, prior_df = history_prior(case["history"])
    tol = case["tolerance"]
    up = case["direction"] == "increase"
    ratios = [tol * g if up else tol / g for g in ALTERNATIVES]
    sums = np.zeros(len(ratios))
    prev = {"canary": {"bad": 0, "total": 0}, "baseline": {"bad": 0, "total": 0}}
    deltas = {"cb": [], "ct": [], "bb": [], "bt": []}
    out = []
    for look in case["looks"]:
        c, b = look["canary"], look["baseline"]
        ec = c["bad"] - prev["canary"]["bad"]
        eb = b["bad"] - prev["baseline"]["bad"]
        nc = c["total"] - prev["canary"]["total"]
        nb = b["total"] - prev["baseline"]["total"]
        prev = look
        deltas["cb"].append(ec)
        deltas["ct"].append(nc)
        deltas["bb"].append(eb)
        deltas["bt"].append(nb)
        n = ec + eb
        if n > 0:
            if nc > 0 and nb > 0:
                odds = nc / nb
            elif c["total"] > 0 and b["total"] > 0:
                odds = c["total"] / b["total"]
            else:
                odds = None
            if odds is not None:
                q0 = tol * odds / (1 + tol * odds)
                for j, r in enumerate(ratios):
                    q1 = r * odds / (1 + r * odds)
                    sums[j] += binom.logpmf(ec, n, q1) - binom.logpmf(ec, n, q0)
        bl = blocks(deltas["cb"], deltas["ct"], deltas["bb"], deltas["bt"])
        xc, dc = pearson([k[0] for k in bl], [k[1] for k in bl])
        xb, db = pearson([k[2] for k in bl], [k[3] for k in bl])
        phi = max(1.0, (xc + xb + prior_x2) / chi2_lower(dc + db + prior_df))
        if case.get("dispersion"):
            phi = case["dispersion"]
        w = np.array(WEIGHTS, dtype=float)
        out.append(float(np.exp(logsumexp(sums / phi, b=w / w.sum()))))
    return out


def dirichlet(d):
    counts = np.array(d["counts"], dtype=float)
    a0 = d["k"] * np.array(d["theta0"], dtype=float)

    def logbeta(v):
        return loggamma(v).sum() - loggamma(v.sum())

    return float(logbeta(a0 + counts) - logbeta(a0) - (counts * np.log(d["theta0"])).sum())


def main():
    req = json.load(sys.stdin)
    json.dump({
        "evalues": [evalues(c) for c in req.get("cases", [])],
        "dirichlet": [dirichlet(d) for d in req.get("dirichlet", [])],
    }, sys.stdout)


if __name__ == "__main__":
    main()
