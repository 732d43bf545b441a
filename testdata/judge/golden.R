# golden.R writes golden.json: R's wilcox.test results that the Go package
# internal/judge must reproduce (see TestMannWhitneyGolden).
#
# Regenerate, from the repository root, with R (Debian: apt-get install
# r-base-core):
#
#     Rscript testdata/judge/golden.R
#
# `make test` does not run this script: the Go test reads the committed
# golden.json, so CI needs no R. Review a regenerated golden.json in the diff.
#
# Every case calls
#
#     wilcox.test(x, y, conf.int = TRUE, conf.level = <conf_level>,
#                 exact = FALSE, correct = TRUE)
#
# with x the canary and y the baseline. The samples are built from fixed
# formulas (no random numbers) and written into the JSON at full precision
# ("%.17g" round-trips a double), so Go reads exactly the numbers R used.
# Samples hold no NaN: wilcox.test drops NA/NaN itself, and the judge removes
# or replaces them before testing.
#
# Where R cannot compute the confidence interval (every observation tied at
# some shift, or an infinite shift range), the case records R's error and,
# from a second call with conf.int = FALSE, the statistic and p-value that R
# can still compute.

args <- commandArgs(trailingOnly = FALSE)
script <- sub("^--file=", "", args[grep("^--file=", args)])
out <- file.path(if (length(script) == 1L) dirname(script) else ".", "golden.json")

# wave is a deterministic, latency-like series: a level, two incommensurate
# oscillations and a sawtooth, so that values rarely tie.
wave <- function(n, level, amp, phase) {
  i <- seq_len(n)
  level + amp * sin(0.7 * i + phase) + 0.3 * amp * cos(3.1 * i + phase) +
    0.05 * amp * ((i * 37) %% 11)
}

# spiky adds a large outlier every 97th point, like a GC pause or a retry.
spiky <- function(n, level, amp, phase) {
  v <- wave(n, level, amp, phase)
  i <- seq_len(n)
  v[i %% 97 == 0] <- v[i %% 97 == 0] * 8
  v
}

base200 <- wave(200, 100, 10, 0)

cases <- list(
  list(name = "tiny n=3, canary above baseline, no overlap",
       x = c(4, 5, 6), y = c(1, 2, 3)),
  list(name = "tiny n=3, canary below baseline, no overlap",
       x = c(1, 2, 3), y = c(4, 5, 6)),
  list(name = "tiny n=3, overlapping",
       x = c(1.5, 2.5, 3.5), y = c(1, 2, 3)),
  list(name = "n=2 against n=3",
       x = c(10, 12), y = c(9, 11, 13)),
  list(name = "n=1 against n=5",
       x = c(7), y = c(1, 3, 5, 7, 9)),
  list(name = "identical samples, not constant",
       x = c(3, 1, 2, 5, 4), y = c(3, 1, 2, 5, 4)),
  list(name = "ties: sparse error counts",
       x = c(0, 0, 1, 0, 2, 0, 0, 1, 0, 0, 3, 0),
       y = c(0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0)),
  list(name = "ties: baseline constant zero",
       x = c(0, 1, 0, 2, 3, 0, 1, 4), y = rep(0, 8)),
  list(name = "ties: rounded n=200, canary +3",
       x = round(wave(200, 103, 10, 1)), y = round(base200)),
  list(name = "ties: rounded n=200, unshifted",
       x = round(wave(200, 100, 10, 1)), y = round(base200)),
  list(name = "large n=200, unshifted",
       x = wave(200, 100, 10, 2), y = base200),
  list(name = "large n=200, canary +5%",
       x = 1.05 * wave(200, 100, 10, 2), y = base200),
  list(name = "large n=200, canary -5%",
       x = 0.95 * wave(200, 100, 10, 2), y = base200),
  list(name = "large n=200, canary +0.5 (small shift)",
       x = wave(200, 100.5, 10, 2), y = base200),
  list(name = "large n=200 against n=150",
       x = wave(200, 101, 10, 3), y = wave(150, 100, 10, 4)),
  list(name = "n=1000 with spikes, canary +2%",
       x = spiky(1000, 102, 20, 5), y = spiky(1000, 100, 20, 6)),
  list(name = "negative values",
       x = wave(40, -3, 2, 1), y = wave(30, -5, 2, 2)),
  list(name = "decimal fractions (root-finding tolerance shows)",
       x = c(0.1, 0.2, 0.3, 0.7), y = c(0.3, 0.6, 0.1)),
  list(name = "small values (error ratios)",
       x = wave(60, 0.002, 0.001, 1), y = wave(60, 0.001, 0.0005, 2)),
  list(name = "conf.level 0.95, n=200 canary +0.5",
       x = wave(200, 100.5, 10, 2), y = base200, conf_level = 0.95),
  list(name = "conf.level 0.80 (central qnorm branch), tiny overlapping",
       x = c(1.5, 2.5, 3.5), y = c(1, 2, 3), conf_level = 0.80),
  list(name = "conf.level 0.80, n=200 canary +0.5",
       x = wave(200, 100.5, 10, 2), y = base200, conf_level = 0.80),
  # R cannot compute a confidence interval for the cases below.
  list(name = "all tied: both samples the same constant",
       x = c(1, 1, 1), y = c(1, 1, 1)),
  list(name = "all tied: both constant, different values",
       x = rep(5, 60), y = rep(1, 60)),
  list(name = "all tied: one point each",
       x = c(5), y = c(3)),
  list(name = "infinite value in the canary",
       x = c(1, 2, Inf), y = c(1, 2, 3))
)

num <- function(v) {
  if (is.nan(v)) "\"NaN\""
  else if (is.infinite(v)) if (v > 0) "\"Inf\"" else "\"-Inf\""
  else sprintf("%.17g", v)
}
nums <- function(v) paste0("[", paste(vapply(v, num, ""), collapse = ", "), "]")
str <- function(s) {
  s <- gsub("\\\\", "\\\\\\\\", s)
  s <- gsub("\"", "\\\\\"", s)
  paste0("\"", s, "\"")
}

# run calls wilcox.test, collecting warnings, and returns the result or the
# error message.
run <- function(x, y, conf_level, conf_int) {
  warnings <- character()
  res <- tryCatch(
    withCallingHandlers(
      wilcox.test(x, y, conf.int = conf_int, conf.level = conf_level,
                  exact = FALSE, correct = TRUE),
      warning = function(w) {
        warnings <<- c(warnings, conditionMessage(w))
        invokeRestart("muffleWarning")
      }),
    error = function(e) conditionMessage(e))
  list(res = res, warnings = unique(warnings))
}

entries <- vapply(cases, function(tc) {
  conf_level <- if (is.null(tc$conf_level)) 0.98 else tc$conf_level
  full <- run(tc$x, tc$y, conf_level, TRUE)
  fields <- c(
    paste0("\"name\": ", str(tc$name)),
    paste0("\"conf_level\": ", num(conf_level)),
    paste0("\"x\": ", nums(tc$x)),
    paste0("\"y\": ", nums(tc$y)))
  if (is.character(full$res)) {
    partial <- run(tc$x, tc$y, conf_level, FALSE)
    fields <- c(fields,
      paste0("\"statistic\": ", num(unname(partial$res$statistic))),
      paste0("\"p_value\": ", num(partial$res$p.value)),
      "\"estimate\": null",
      "\"conf_int\": null",
      paste0("\"error\": ", str(full$res)))
  } else {
    r <- full$res
    fields <- c(fields,
      paste0("\"statistic\": ", num(unname(r$statistic))),
      paste0("\"p_value\": ", num(r$p.value)),
      paste0("\"estimate\": ", num(unname(r$estimate))),
      paste0("\"conf_int\": ", nums(as.vector(r$conf.int))),
      "\"error\": null")
  }
  w <- if (length(full$warnings) == 0L) "[]" else
    paste0("[", paste(vapply(full$warnings, str, ""), collapse = ", "), "]")
  fields <- c(fields, paste0("\"warnings\": ", w))
  paste0("    {\n      ", paste(fields, collapse = ",\n      "), "\n    }")
}, "")

json <- paste0(
  "{\n",
  "  \"generator\": \"testdata/judge/golden.R\",\n",
  "  \"r_version\": ", str(R.version.string), ",\n",
  "  \"call\": \"wilcox.test(x, y, conf.int = TRUE, conf.level = conf_level, exact = FALSE, correct = TRUE)\",\n",
  "  \"cases\": [\n", paste(entries, collapse = ",\n"), "\n  ]\n}\n")
writeLines(json, out, sep = "")
cat("wrote", out, "with", length(cases), "cases\n")
