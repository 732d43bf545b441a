// Package condition evaluates AnalysisTemplate successCondition and
// failureCondition expressions exactly as Argo Rollouts v1.10 does, so that a
// template written for Argo gives the same measurement phases, and the same
// error texts, in canaryd.
//
// Exactness is the point of the package. Argo builds the expression
// environment from each measured value, and expr type-checks `result` by that
// value's concrete Go type; which conditions are accepted and what their
// errors say follow from it. The package reproduces that, but compiles each
// condition once per result type rather than once per measurement (see
// Conditions), and checks at spec validation only what is wrong whatever the
// measured type (see Compile).
//
// Where Argo runs whatever a condition says, canaryd, which takes
// conditions from any caller, first proves what one may cost (cost.go): only
// an allow-list of built-ins, ranges of at most MaxRangeValues literal
// values, and work linear in the size of the result, at most
// MaxStepsPerValue steps a value plus MaxFixedSteps, with no iteration over
// the result nested in another. Evaluations run with expr's memory budget
// set (MemoryBudget), and the heavier ones on a bounded pool of evaluators
// that a caller waits for with its context (JudgeContext). These are the
// only places where canaryd refuses a condition Argo would evaluate.
//
// It also compiles the time expressions of a Prometheus rangeQuery (see
// CompileTime), whose now() reads the measurement's instant rather than the
// wall clock, so that a backtest sees the window it asks for.
//
// The package is pure computation on the values handed to it. It must not do
// I/O, speak HTTP, log, or keep state other than its compiled programs:
// fetching metrics, scheduling measurements and turning phases into verdicts
// belong to other packages, and keeping this one pure is what lets the same
// conditions be judged live, in a backtest and in a fuzz test alike.
package condition
