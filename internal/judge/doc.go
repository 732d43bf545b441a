// Package judge compares a canary sample with a baseline sample the way
// Kayenta's NetflixACAJudge-v1.0 does, and scores a canary run from the
// verdicts on its metrics, with numbers proven against R.
//
// # Method
//
// Classify judges one metric from two samples, typically the values of a
// Prometheus range query over the canary and over the baseline:
//
//   - NaN points are removed (NaNRemove, the default) or replaced by 0
//     (NaNReplace, for counts); outliers are optionally removed by Kayenta's
//     IQR rule, fences [min(P1, Q1 − k·IQR), max(P99, Q3 + k·IQR)] with
//     k = 3.
//   - An empty sample is Nodata (or NodataFailMetric when the metric must
//     have data; or Pass under NaNReplace). Identical samples, or samples
//     of a single value, Pass.
//   - The two-sided Mann-Whitney U test (Wilcoxon rank-sum test), normal
//     approximation with tie and continuity corrections, gives the p-value;
//     the Hodges-Lehmann estimate of the shift canary − baseline and its
//     confidence interval (98% by default) come from inverting the same
//     statistic (Bauer 1972), as R's wilcox.test(conf.int = TRUE,
//     exact = FALSE) computes them. MannWhitney exposes that computation.
//   - The metric is High if the direction fails an increase, the whole
//     interval lies above the tolerance band +0.25·|estimate|, and the
//     effect size (mean ratio canary/baseline by default, or the CLES)
//     reaches allowedIncrease (default 1.0, any increase); Low mirrors it
//     below −0.25·|estimate| with allowedDecrease. Otherwise Pass.
//   - A critical metric's High or Low beyond the critical effect size, or
//     its Nodata or Error, is critical: it fails the whole run.
//
// ScoreRun turns the metrics' classifications into a 0–100 score: per
// group, the share of passing metrics among those that passed, were High,
// Low or NodataFailMetric; the groups weighted by their weights (unweighted
// groups share the rest of 100 equally); 0 if a critical metric failed or at
// least half of the metrics had no data. At least 95 is Pass, at least 75
// Marginal, below that Fail (defaults; Kayenta takes them per request).
//
// Defaults are Kayenta's: direction either, NaN strategy remove, outliers
// kept (factor 3.0 when removed), confidence level 0.98, tolerance 0.25,
// effect size meanRatio with all four thresholds 1.0 (0.5 for cles), and a
// warning for samples under 50 points.
//
// # Agreement with R and with Kayenta
//
// MannWhitney reproduces R 4.2's wilcox.test(x, y, conf.int = TRUE,
// conf.level, exact = FALSE, correct = TRUE): the same rank statistic, the
// same quantile (AS 241), and the same Brent root finder with R's tolerance
// of 1e-4, step for step, so that W and the estimate are R's to the bit and
// the p-value and interval to a few ulps. testdata/judge/golden.R writes the
// cases and R's answers to testdata/judge/golden.json, which the tests
// check to a relative 1e-6; R is not needed to run them.
//
// Where the package departs from Kayenta, it is on purpose:
//
//   - The estimate is R's, found without the continuity correction (R sets
//     correct <- FALSE before finding it); Kayenta keeps the correction,
//     which moves the estimate by less than the root tolerance.
//   - When each sample is constant, at different values, the rank test has
//     no interval (R fails). Kayenta adds Gaussian noise of relative size
//     1e-5 at random; this package takes the limit of that noise, interval
//     and estimate equal to the difference of the two values, so a result
//     never depends on chance. One point against one point is such a case
//     (Kayenta gives Error there).
//   - ±Inf in a sample (which a PromQL division by zero can produce) gives
//     Error: the interval is undefined (R fails; Kayenta does not check).
//   - Error is critical for a critical metric, as Kayenta's classifier
//     intends, though Kayenta's exception path drops the flag.
//   - The small-sample warning looks at both samples, not only the
//     baseline; a metric without a group is scored in DefaultGroup rather
//     than left out of every group.
//   - Kayenta fixes the confidence level and tolerance; Config makes them
//     settable, with Kayenta's values as defaults.
//
// # References
//
//   - Kayenta, NetflixACAJudge-v1.0: kayenta-judge/…/judge/NetflixACAJudge.scala,
//     classifiers/metric/MannWhitneyClassifier.scala, detectors/IQRDetector.scala,
//     stats/EffectSizes.scala, scorers/WeightedSumScorer.scala, and
//     kayenta-mannwhitney/…/MannWhitney.scala (github.com/spinnaker/kayenta).
//   - H. B. Mann and D. R. Whitney (1947), On a test of whether one of two
//     random variables is stochastically larger than the other, Annals of
//     Mathematical Statistics 18(1), 50–60.
//   - J. L. Hodges and E. L. Lehmann (1963), Estimates of location based on
//     rank tests, Annals of Mathematical Statistics 34(2), 598–611.
//   - D. F. Bauer (1972), Constructing confidence sets using rank
//     statistics, Journal of the American Statistical Association 67,
//     687–690.
//   - A. Vargha and H. D. Delaney (2000), A critique and improvement of the
//     CL common language effect size statistics of McGraw and Wong, Journal
//     of Educational and Behavioral Statistics 25(2), 101–132.
//   - M. J. Wichura (1988), Algorithm AS 241: the percentage points of the
//     normal distribution, Applied Statistics 37(3), 477–484.
//   - R. P. Brent (1973), Algorithms for Minimization without Derivatives,
//     chapter 4.
//   - R's wilcox.test and uniroot (stats package, R 4.2).
//
// The package is pure computation: no I/O, no logging, no clock, no state,
// no randomness. It must stay so, so that the same samples always get the
// same verdict, live, in a backtest and in a fuzz test alike.
package judge
