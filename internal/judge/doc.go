// Package judge compares a canary sample with a baseline sample the way
// Kayenta's NetflixACAJudge-v1.0 does, scores a canary run from the
// verdicts on its metrics, with numbers proven against R, and tests a
// canary's counts of bad events sequentially (CountTest), with numbers
// proven against scipy.
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
// # Counts
//
// CountTest is the count judge: an anytime-valid sequential test of a
// canary's rate of bad events (errors, requests slower than a bucket)
// against its baseline's, which may be read after every look and still
// fails a canary that is no worse with probability at most alpha.
//
// At look k the canary served nc_k events with ec_k bad, the baseline nb_k
// with eb_k bad (differences of cumulative counts). If the canary's rate is
// ρ times the baseline's, each of the look's n_k = ec_k + eb_k bad events is
// the canary's with probability q_k(ρ) = ρ·o_k / (1 + ρ·o_k), o_k = nc_k/nb_k:
// the share of traffic enters through each look's own totals, so it may
// change between looks, and a rate that follows the day cancels. For the
// null "ρ ≤ τ" (the tolerance) and alternatives ρ_j = τ·g_j, g_j in
// {1.1, 1.25, 1.5, 2, 3, 5, 10}, the e-value is the mixture with weights
// w_j = {1, 2, 3, 5, 3, 2, 1}/17 (most on a doubling; countWeights)
//
//	E_t = Σ_j w_j exp( S_j,t / φ_t ),   S_j,t = Σ_{k≤t} log Bin(ec_k; n_k, q_k(ρ_j)) − log Bin(ec_k; n_k, q_k(τ))
//
// a mixture of likelihood ratios, each a nonnegative supermartingale under
// any ρ ≤ τ when events are independent (φ = 1), so that Ville's
// inequality bounds the chance that E_t ever reaches 1/alpha by alpha.
// The test fails at that point; the anytime p-value is min(1, 1/max E).
// The mirror test, null "ρ ≥ τ" with alternatives τ/g_j and the same weights, ends the test
// Successful early when it reaches 1/alpha: the canary is then shown to be
// better than the tolerance. Direction decrease swaps the two.
//
// φ_t is the dispersion: independent events give 1, bursts more. Looks
// are gathered into blocks of at least 10 bad events, the open block
// counting with the closed ones, and φ_t is each side's Pearson statistic
// of its bad events per block against its own overall rate (so a steady
// regression does not inflate it), plus a prior, over the 20% quantile of chi-square with their degrees of freedom, and never
// below 1. The prior is the baseline's own Pearson statistic and degrees
// of freedom over its history before the analysis (CountConfig.History:
// blocks of at least 5 bad events, a day of intervals giving hundreds),
// or, without one, 2 worth one block. The blocks let a burst temper the evidence while it happens,
// however often the test is read; the quantile keeps an estimate from few
// blocks from undercounting the dispersion. Tempering the log-likelihood
// ratios by it is the quasi-likelihood correction: a burst of c correlated
// errors weighs about as one. It makes the guarantee approximate rather
// than exact under overdispersion, which is why the benchmark measures
// false alarms on bursty A/A cases, read at every look and after every
// event. CountConfig.Dispersion fixes φ instead, for the benchmark alone
// (judgebench -dispersion), to measure what the estimate costs and
// protects.
//
// The rate ratio's confidence sequence is the set of ratios r on a grid
// (steps of 2^(1/8), 2^−12 to 2^12) whose own two-sided mixture test has
// not reached 1/alpha at any look, reported at the grid points just outside
// it. At the last look, a test without a decision ends Successful, or
// Inconclusive when its e-value has reached the square root of 1/alpha.
//
// DirichletMultinomialLogBF is Lindon & Malek's Bayes factor for fixed
// shares, the closed form of savvi and seqabpy; the count judge does not
// use it (shares change), but the benchmark runs it beside the judge. TestCountOracle recomputes the judge's e-values with
// scipy (testdata/judge/counts_oracle.py), TestDirichletOracle the Bayes
// factor, and TestDirichletSavviExample reproduces savvi's published
// example (n = 210, p = 0.045580).
//
// References for the counts:
//
//   - M. Lindon and A. Malek (2022), Anytime-valid inference for
//     multinomial count data, NeurIPS (arXiv 2011.03567).
//   - M. Lindon, C. Sanden and V. Shirikian (2022), Rapid regression
//     detection in software deployments through sequential testing, KDD
//     (arXiv 2205.14762).
//   - S. R. Howard, A. Ramdas, J. McAuliffe and J. Sekhon (2021),
//     Time-uniform, nonparametric, nonasymptotic confidence sequences,
//     Annals of Statistics 49(2) (arXiv 1810.08240).
//   - J. Ville (1939), Étude critique de la notion de collectif.
//   - P. McCullagh and J. A. Nelder (1989), Generalized Linear Models,
//     2nd ed., §4.5 (the quasi-likelihood dispersion).
//
// The package is pure computation: no I/O, no logging, no clock, no state,
// no randomness. It must stay so, so that the same samples always get the
// same verdict, live, in a backtest and in a fuzz test alike.
package judge
