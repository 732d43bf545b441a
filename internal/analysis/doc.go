// Package analysis is canaryd's engine: it runs a Plan, metrics whose
// Source measures and whose Judge turns each measurement into a phase, on
// the schedule of Argo Rollouts' analysis controller, and decides the
// analysis' phase as Argo does.
//
// It runs a plan three ways, with the same measurements, limits and phases:
//
//   - Start runs it live (Run: Snapshot, Watch, Terminate, Abort): each
//     metric is measured after its initialDelay, then every interval up to
//     its count, again ErrorRetryInterval after an Error (Argo's 10 s by
//     default), its limits checked after each measurement; the run ends
//     when its metrics have completed, a limit decides it, it is
//     terminated, its context ends, or Options.MaxDuration passes.
//   - Evaluate takes one round: every metric measured once, now, with no
//     schedule and no limits, for a caller that keeps its own schedule
//     (Argo's web provider calls it at each of its measurements).
//   - Backtest and BacktestSeries run it over a past window in virtual
//     time: each measurement is taken as of its own instant, and the answer
//     comes as fast as the sources give it.
//
// Start also resumes an analysis (Options.Resume) from its snapshot, what
// Snapshot returned and a store kept, as Argo Rollouts' controller
// continues an AnalysisRun from its status after a restart:
//
//   - metric results as stored: measurements, counters, consecutive
//     streaks, dry-run; a metric that had completed stays completed and
//     is not measured again;
//   - each other metric's next measurement is due its interval after its
//     last measurement's finishedAt (ErrorRetryInterval after an Error),
//     at once if that has passed; a metric not measured yet, its
//     initialDelay after the stored startedAt: initialDelay is never
//     applied again;
//   - a measurement that was in flight (Running, no finishedAt) is dropped
//     and taken again at once, counted once; even when the run was already
//     decided, as it would have been recorded with the measurements taken
//     beside it;
//   - startedAt is kept and MaxDuration runs from it: past it, the run
//     ends in Error at once without measuring;
//   - an analysis that had completed is returned as it was, Done at once.
//
// The resumed run's events continue the stream where the snapshot stood:
// the first is the measurement event of the first measurement it takes
// (the completed event when it ends without one). There is no event for
// the resume itself nor for a dropped measurement, and the completed event
// of an analysis that had completed is not sent again (Watch still yields
// it). Plan.CheckResume says whether a snapshot fits a plan; a run resumed
// from one that does not ends in Error at once, saying why.
//
// A process that hands a run over to another stops it with Run.Suspend,
// not Abort: Abort assesses every metric as Argo assesses a terminated
// run (those whose limits did not trip end Successful), Suspend leaves
// them as they were, so that its snapshot, with the run's own phase,
// message and completedAt taken off, is the analysis as it goes on.
//
// Live runs are driven by a Scheduler (scheduler.go, course.go), not by
// goroutines of their own: one binary heap holds each run's next instant
// (a measurement due, its deadline, or a stop asked for), and one timer of
// the clock fires at the earliest. The scheduler's dispatcher takes the
// runs that are due off the heap and hands their due measurements to a
// bounded pool of workers through a queue as long as the pool; a worker
// takes the measurement (Source.Measure, then the judge), records it and
// sets the run's next instant. When every worker is busy, a due
// measurement waits in the queue and starts late: its lateness, from when
// it was due to when its source was asked, goes to Options.Lateness. It
// is never dropped nor taken twice. A run is driven by one goroutine at a
// time (its lock, Run.drive), so its Observer is called one event at a
// time, in order, from the dispatcher or a worker. Pushing, moving and
// popping the heap and handing a measurement over allocate nothing. A
// stop (Terminate, Abort, Suspend, the end of Start's context through
// context.AfterFunc) cancels the measurements in flight at once and puts
// the run first on the heap; the run ends once they have returned. The
// scheduler's goroutines run while it has runs. Runs on the wall clock
// share a default scheduler of DefaultWorkers unless given one
// (Options.Scheduler); a run on another clock, and a backtest, gets one of
// its own.
//
// Argo's phase rules are in one file, phase.go (AssessLimits, AssessMetric,
// AssessRun). A plan with Scoring is decided instead as Kayenta decides a
// canary (AssessScored, score.go): every metric runs to its end and the
// phase follows judge.ScoreRun's score.
//
// A measurement's context carries its Schedule (ScheduleFrom): the
// analysis' start, the metric's interval, and whether it is the metric's
// last measurement. A source that counts from the start (the judge's
// counts) reads it there, live, resumed and in a backtest alike; Evaluate's
// round has none.
//
// Time comes from the scheduler's clock, Options.Clock (internal/clock)
// when the run is given no scheduler, the wall clock when neither: with a
// fake one, a ten-minute schedule is tested in milliseconds. What
// is kept is bounded: a metric's newest measurements (Metric.Retention), a
// measurement's value and message (MaxValueBytes, MaxMessageBytes), and
// the events a slow watcher may fall behind.
//
// What the package must not do: know where measurements come from (a
// Source is handed to it: a Prometheus query, a judge comparison), parse
// or validate specs, compile conditions (a Judge is handed to it), speak
// HTTP, log, or read the environment: the same plan runs live, in a round
// and in a backtest, and in tests on fake sources.
package analysis
