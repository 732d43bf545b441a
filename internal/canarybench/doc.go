// Package canarybench is canaryd's open canary benchmark: labelled cases
// of a canary's and a baseline's bad-event counts, and the scoring of
// methods on them. It holds a seeded generator of the cases (Generate),
// their format (Case, one JSON object a line in
// testdata/benchmark/cases.ndjson), and the scoring (Run) of the count
// judge, the sample judge judged again at every interval, the threshold
// template of canaryd's seed, and Lindon & Malek's Dirichlet-multinomial
// test at a declared share.
//
// A case's looks are cumulative counts, so that any tool that reads a
// stream of counts can be run on the set: `canaryd judge` reads a case's
// looks unchanged. A case's history is the baseline's cumulative counts
// over the day before the analysis (HistorySteps intervals of
// HistoryStepSeconds), when it served all the traffic: from it any tool may
// learn the baseline's noise before the first look, as the count judge
// does (judge.CountConfig.History). docs/judge.md documents the format, the families, the
// method of each table and what the guarantees assume.
//
// The package is deterministic: the same seed and scale make the same
// cases, byte for byte, and the same tables.
package canarybench
