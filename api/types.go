// Package api holds canaryd's wire types: the analysis resource, its events
// and the problem document that every error response carries. The shapes
// follow Argo Rollouts' AnalysisRun status field for field, so that anyone who
// reads `kubectl get analysisrun -o yaml` reads these.
//
// The package has no behaviour beyond how these are written as JSON
// (NewEncoder, Marshal: every JSON canaryd writes goes through them, or
// through AppendAnalysis and AppendRound, which write an analysis byte for
// byte as NewEncoder does, without its reflection, on the HTTP API's
// busiest answers): it is imported by the engine, the HTTP layer and the
// command line alike, and must stay free of their dependencies.
package api

import "time"

// Phase is the state of a measurement, a metric or a whole analysis.
type Phase string

// The phases, with Argo Rollouts' names.
const (
	PhasePending      Phase = "Pending"
	PhaseRunning      Phase = "Running"
	PhaseSuccessful   Phase = "Successful"
	PhaseFailed       Phase = "Failed"
	PhaseError        Phase = "Error"
	PhaseInconclusive Phase = "Inconclusive"
)

// Completed reports whether p is a terminal phase.
func (p Phase) Completed() bool {
	switch p {
	case PhaseSuccessful, PhaseFailed, PhaseError, PhaseInconclusive:
		return true
	}
	return false
}

// Analysis is one analysis: its verdict so far and every metric's results.
type Analysis struct {
	ID            string         `json:"id"`
	Phase         Phase          `json:"phase"`
	Message       string         `json:"message,omitempty"`
	StartedAt     *time.Time     `json:"startedAt,omitempty"`
	CompletedAt   *time.Time     `json:"completedAt,omitempty"`
	MetricResults []MetricResult `json:"metricResults"`
	RunSummary    RunSummary     `json:"runSummary"`
	DryRunSummary RunSummary     `json:"dryRunSummary"`
	// Template names the template the analysis was started from, if any.
	Template string `json:"template,omitempty"`
	// Args are the argument values the analysis ran with. Values of
	// arguments that hold secrets are never included.
	Args map[string]string `json:"args,omitempty"`
	// Webhook reports deliveries to the webhook the caller asked for.
	Webhook *WebhookStatus `json:"webhook,omitempty"`
	// Kind says what made the analysis: KindRound (a round of an
	// evaluate endpoint) or KindGate (a gate); absent for an analysis
	// started as one.
	Kind string `json:"kind,omitempty"`
	// Series is the key of the calls this round or gate is one of: the
	// same kind, template (or posted document) and arguments, from the
	// same caller. The rounds one Argo Rollouts AnalysisRun sends share
	// it. Absent on other analyses.
	Series string `json:"series,omitempty"`
	// Score is the canary score of a spec that declares scoring (a canaryd
	// extension, Kayenta's weighted group score), set when the analysis
	// completes; the phase then follows Score.Verdict. Absent otherwise.
	Score *Score `json:"score,omitempty"`
	// Reason and Measured are set in the list of analyses only (GET
	// /v1/analyses), where the measurements are left out: what a row of
	// the list shows without them.
	//
	// Reason is the one sentence the analysis' report leads with: its
	// phase and why, naming the decisive measurement (metric, value,
	// time, condition) and the limit it tripped; at most MaxListReason
	// characters.
	Reason string `json:"reason,omitempty"`
	// Measured holds, per metric in the spec's order, the phases of its
	// newest measurements kept.
	Measured []MetricPhases `json:"measured,omitempty"`
}

// Bounds of what an analysis carries in the list.
const (
	// MaxListReason bounds Analysis.Reason, in characters: a longer
	// sentence is cut and ends with "…".
	MaxListReason = 300
	// MaxListPhases bounds MetricPhases.Phases: the newest measurements
	// of a metric shown in the list.
	MaxListPhases = 30
)

// MetricPhases are the phases of a metric's newest measurements, as the
// list of analyses shows them.
type MetricPhases struct {
	Metric string `json:"metric"`
	// Phases has a letter per measurement, oldest first, of the newest
	// MaxListPhases kept: S Successful, F Failed, I Inconclusive, E Error,
	// R Running, P Pending.
	Phases string `json:"phases"`
	// More counts the metric's measurements taken before those, not shown
	// (beyond MaxListPhases, or no longer kept).
	More int32 `json:"more,omitempty"`
}

// Kinds of analysis (Analysis.Kind).
const (
	KindRound = "round"
	KindGate  = "gate"
)

// Score is the verdict of an analysis scored as Kayenta scores a canary:
// each group of metrics scores the share of its metrics that passed, the
// groups are weighted into a score from 0 to 100, and the score is
// classified by the pass and marginal thresholds.
type Score struct {
	// Score is from 0 to 100, rounded half up to two decimals.
	Score float64 `json:"score"`
	// Verdict is Pass (score >= Pass), Marginal (score >= Marginal) or
	// Fail. Pass makes the analysis Successful, Marginal Inconclusive,
	// Fail Failed.
	Verdict string `json:"verdict"`
	// Pass and Marginal are the thresholds the score was classified by.
	Pass     float64 `json:"pass"`
	Marginal float64 `json:"marginal"`
	// Groups holds each group's score, 0 to 100.
	Groups map[string]float64 `json:"groups"`
	// Reason says in a sentence how the score came about.
	Reason string `json:"reason"`
	// Metrics are the outcomes that were scored, in the spec's order.
	Metrics []ScoredMetric `json:"metrics"`
}

// ScoredMetric is what scoring made of one metric.
type ScoredMetric struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	// Classification is a judge metric's last classification (Pass, High,
	// Low, Nodata, NodataFailMetric, Error), or what a plain metric's phase
	// counts as: Pass (Successful), Fail (Failed), Nodata (Inconclusive),
	// Error (Error).
	Classification string `json:"classification"`
	// Critical is set when this metric failed the whole canary.
	Critical bool `json:"critical,omitempty"`
	// Muted is set for a dry-run metric: reported, not scored.
	Muted bool `json:"muted,omitempty"`
}

// MetricResult is the state of one metric of an analysis.
type MetricResult struct {
	Name               string            `json:"name"`
	Phase              Phase             `json:"phase"`
	Message            string            `json:"message,omitempty"`
	Count              int32             `json:"count"`
	Successful         int32             `json:"successful"`
	Failed             int32             `json:"failed"`
	Inconclusive       int32             `json:"inconclusive"`
	Error              int32             `json:"error"`
	ConsecutiveError   int32             `json:"consecutiveError"`
	ConsecutiveSuccess int32             `json:"consecutiveSuccess"`
	DryRun             bool              `json:"dryRun"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	Measurements       []Measurement     `json:"measurements"`
}

// Measurement is one query of a metric's provider and its assessment.
type Measurement struct {
	Phase      Phase             `json:"phase"`
	Message    string            `json:"message,omitempty"`
	StartedAt  *time.Time        `json:"startedAt,omitempty"`
	FinishedAt *time.Time        `json:"finishedAt,omitempty"`
	Value      string            `json:"value"`
	Metadata   map[string]string `json:"metadata,omitempty"`
}

// RunSummary counts metrics (not measurements) by their completed phase.
type RunSummary struct {
	Count        int32 `json:"count"`
	Successful   int32 `json:"successful"`
	Failed       int32 `json:"failed"`
	Inconclusive int32 `json:"inconclusive"`
	Error        int32 `json:"error"`
}

// WebhookStatus reports the deliveries of an analysis' webhook.
type WebhookStatus struct {
	URL       string `json:"url"`
	Delivered int    `json:"delivered"`
	Failed    int    `json:"failed"`
	// Pending counts the events queued or being delivered.
	Pending    int    `json:"pending,omitempty"`
	LastStatus int    `json:"lastStatus,omitempty"`
	LastError  string `json:"lastError,omitempty"`
	// Retrying is set while the event being delivered waits for another
	// attempt.
	Retrying *WebhookRetry `json:"retrying,omitempty"`
}

// WebhookRetry is the event whose delivery is being retried.
type WebhookRetry struct {
	// WebhookID is the event's webhook-id.
	WebhookID string `json:"webhookId"`
	// Attempts made so far.
	Attempts int `json:"attempts"`
	// LastError is why the latest attempt failed, or why none is made
	// (the destination's circuit breaker is open).
	LastError string `json:"lastError"`
	// NextAttemptAt is when the next attempt is due, at the latest.
	NextAttemptAt time.Time `json:"nextAttemptAt"`
}

// EventType names the kinds of event an analysis emits.
type EventType string

// The event types of a stream.
const (
	// EventMeasurement is sent after each completed measurement.
	EventMeasurement EventType = "measurement"
	// EventCompleted is the last event: the finished analysis.
	EventCompleted EventType = "completed"
)

// Event is one entry of an analysis' progress stream.
type Event struct {
	Type        EventType    `json:"type"`
	AnalysisID  string       `json:"analysisId"`
	Metric      string       `json:"metric,omitempty"`
	Measurement *Measurement `json:"measurement,omitempty"`
	// MetricPhase is the metric's phase after the measurement.
	MetricPhase Phase `json:"metricPhase,omitempty"`
	// Analysis is set on the completed event.
	Analysis *Analysis `json:"analysis,omitempty"`
}

// Problem is an RFC 9457 problem document, the body of every 4xx and 5xx.
type Problem struct {
	Type     string       `json:"type"`
	Title    string       `json:"title"`
	Status   int          `json:"status"`
	Detail   string       `json:"detail,omitempty"`
	Instance string       `json:"instance,omitempty"`
	Errors   []FieldError `json:"errors,omitempty"`
}

// FieldError names one problem with the input and where it is. In a
// problem document each also carries RFC 9457's names for the same things,
// so that generic problem clients read them: Detail, and Pointer where the
// field is in the request body.
type FieldError struct {
	// Field is the field's path as canaryd names it: relative to the spec
	// ("metrics[0].successCondition"), in a template endpoint's body
	// ("args.namespace"), a query parameter's name ("timeout"), a header's
	// (Request-Timeout), or "body" for the request body as a whole.
	Field   string `json:"field"`
	Message string `json:"message"`
	// Detail is Message again, under RFC 9457's name; set in problem
	// documents.
	Detail string `json:"detail,omitempty"`
	// Pointer is the RFC 6901 JSON Pointer of the field in the request
	// body, as decoded from JSON or YAML ("/spec/metrics/0/successCondition",
	// "/args/namespace"; "" for the body as a whole); nil where the field
	// is not in the body: a query parameter, a header, or a named
	// template's own field.
	Pointer *string `json:"pointer,omitempty"`
	// Line is the line of the request body the field is on, where it is
	// told: in the answers of POST /v1/validate, for an editor to mark.
	Line int `json:"line,omitempty"`
}
