package analysis

import (
	"context"
	"time"

	"github.com/canaryd/canaryd/api"
)

// course is a run's schedule and state between the scheduler's visits,
// under Run.drive.
type course struct {
	// ctx is Start's; measurements run on mctx, which outlives it so that
	// a completed run's last measurements are recorded, and which a stop
	// cancels (mcancel).
	ctx        context.Context
	mctx       context.Context
	mcancel    context.CancelFunc
	stopWatch  func() bool // stops the watch on ctx (context.AfterFunc); nil when ctx cannot end
	states     []metricState
	startedAt  time.Time
	deadlineAt time.Time // MaxDuration's end; zero when there is none
	inFlight   int       // measurements handed to the workers, not returned
	terminated bool
	halting    bool // halt is being carried out: once inFlight is 0, stop
	halt       control
	retakes    bool           // the first visit takes again what was in flight
	failed     *RunAssessment // set: the run ends with it at the first visit
	ended      bool
}

// enter puts the run on its scheduler, to be visited at once. It holds
// r.drive throughout: once the run is on its scheduler, or ctx's end has
// asked for its stop, the dispatcher may visit it, and must find it whole.
func (r *Run) enter(ctx context.Context) {
	r.drive.Lock()
	defer r.drive.Unlock()
	r.ctx = ctx
	// A context that can never end (the service's runs have
	// context.Background) needs neither detaching from nor watching: that
	// saves a run two contexts and an AfterFunc registration.
	endless := ctx.Done() == nil
	parent := ctx
	if !endless {
		parent = context.WithoutCancel(ctx)
	}
	r.mctx, r.mcancel = context.WithCancel(parent)
	for i := range r.states {
		r.retakes = r.retakes || r.states[i].retake
	}
	if r.opts.MaxDuration > 0 {
		r.deadlineAt = r.startedAt.Add(r.opts.MaxDuration)
	}
	r.sched.add(r)
	// The end of ctx terminates the run, as Terminate does.
	if !endless {
		r.stopWatch = context.AfterFunc(ctx, func() { r.send(control{}) })
	}
	r.sched.set(r, urgent)
}

// cancel cancels the run's measurements in flight.
func (r *Run) cancel() {
	if r.mcancel != nil {
		r.mcancel()
	}
}

// leave ends the run's part in its scheduler once it has finished: no more
// visits, Done closed. r.drive must be held.
func (r *Run) leave() {
	if r.stopWatch != nil {
		r.stopWatch()
	}
	r.mcancel()
	r.sched.remove(r)
	close(r.done)
}

// attend is the scheduler's visit when the run is due: it acts on a stop
// asked for, decides the run if it is decided, and adds the measurements
// due at now to jobs, for the workers.
func (r *Run) attend(now time.Time, jobs []job) []job {
	r.drive.Lock()
	defer r.drive.Unlock()
	if r.ended {
		return jobs
	}
	if r.failed != nil {
		r.finish(*r.failed)
		return jobs
	}
	if r.retakes {
		// A resumed run first takes again the measurements that were in
		// flight when its snapshot was taken, before it assesses
		// anything: they were under way together with the measurements
		// recorded beside them, and count with them even when one of
		// those has already decided the run (as they would have,
		// undisturbed).
		r.retakes = false
		if r.ctx.Err() == nil && (r.deadlineAt.IsZero() || now.Before(r.deadlineAt)) {
			for i := range r.states {
				if r.states[i].retake && r.measurable(i) {
					jobs = r.launch(i, now, now, jobs)
				}
			}
		}
	}
	return r.step(now, jobs, true)
}

// take is a worker's measurement of job j's metric. An outcome that
// returns after the run was stopped is not recorded, and a measurement
// that was due when it was stopped is not taken.
func (r *Run) take(j job) {
	r.drive.Lock()
	var ctx context.Context
	if r.mctx.Err() == nil {
		ctx = WithSchedule(r.mctx, r.schedule(j.metric, r.startedAt))
	}
	r.drive.Unlock()
	var ms api.Measurement
	if ctx != nil {
		ms = r.measureDue(ctx, j.metric, time.Unix(0, j.due))
	}
	r.drive.Lock()
	defer r.drive.Unlock()
	r.inFlight--
	if ctx != nil && r.mctx.Err() == nil {
		r.states[j.metric].finished(ms)
		r.record(outcome{metric: j.metric, measurement: ms})
	}
	r.step(r.clock.Now(), nil, false)
}

// launch shows metric i's measurement, due at due, as in progress from now
// and adds it to jobs.
func (r *Run) launch(i int, now, due time.Time, jobs []job) []job {
	r.states[i].inFlight = true
	r.states[i].retake = false
	r.inFlight++
	r.begin(i, now)
	return append(jobs, job{run: r, metric: i, due: due.UnixNano()})
}

// step is the run's course after a visit or a returned measurement, with
// Argo's order: a stop asked for first, then the run's assessment, the
// deadline, and the measurements due (added to jobs when launch is set;
// otherwise the run is due again at once, for the dispatcher to launch
// them). It sets when the run is next due. r.drive must be held.
func (r *Run) step(now time.Time, jobs []job, launch bool) []job {
	if r.ended {
		return jobs
	}
	// A stop that is already asked for wins over a measurement that falls
	// due at the same moment.
	r.mu.Lock()
	asked, c := r.asked, r.request
	r.mu.Unlock()
	if asked && c.abort && !r.halting {
		r.halting, r.halt = true, c
	} else if asked || r.ctx.Err() != nil {
		r.terminated = true
		r.mcancel()
	}
	if r.halting {
		r.haltNow()
		return jobs
	}
	assessment := r.assess(r.terminated)
	// Argo measures every metric due in a reconcile before it assesses the
	// run, so measurements taken together count together: when one metric
	// ends the run, those still in flight finish and are recorded (their
	// queries are bounded by their timeouts). An explicit stop cancels
	// them instead, and the run ends once they have returned.
	if assessment.Phase.Completed() && (r.terminated || r.inFlight == 0) {
		if r.inFlight > 0 {
			r.sched.set(r, never)
			return jobs
		}
		if r.dropUnfinished() {
			assessment = r.assess(r.terminated)
		}
		r.finish(assessment)
		return jobs
	}
	if !r.deadlineAt.IsZero() && !now.Before(r.deadlineAt) {
		// Passed while the run was busy, or before a resumed run began:
		// no measurement starts after it.
		r.halting = true
		r.halt = control{abort: true, message: "analysis exceeded its maximum duration of " + r.opts.MaxDuration.String()}
		r.mcancel()
		r.haltNow()
		return jobs
	}
	next := never
	if !r.terminated && assessment.Phase == api.PhaseRunning {
		next, jobs = r.launchDue(now, jobs, launch)
	}
	if !r.deadlineAt.IsZero() {
		next = min(next, r.deadlineAt.UnixNano())
	}
	r.sched.set(r, next)
	if r.opts.onIdle != nil && r.inFlight == 0 && next > now.UnixNano() {
		r.opts.onIdle()
	}
	return jobs
}

// haltNow stops the run as r.halt asks once no measurement is in flight;
// until then it is not due (each returning measurement steps it again).
func (r *Run) haltNow() {
	if r.inFlight > 0 {
		r.sched.set(r, never)
		return
	}
	r.stop(r.halt)
}

// launchDue adds every metric due at now to jobs (when launch is set), and
// returns when the next of the others falls due (never when none will;
// now when some are due and launch is not set).
func (r *Run) launchDue(now time.Time, jobs []job, launch bool) (int64, []job) {
	next := never
	for i := range r.plan.Metrics {
		due, measurable := r.due(i, &r.states[i], r.startedAt)
		if !measurable {
			continue
		}
		if launch && !now.Before(due) {
			jobs = r.launch(i, now, due, jobs)
			continue
		}
		next = min(next, due.UnixNano())
	}
	return next, jobs
}
