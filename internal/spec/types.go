package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// The kinds of Argo Rollouts document that canaryd accepts unchanged.
const (
	APIVersion = "argoproj.io/v1alpha1"
	// CanarydAPIVersion marks a canaryd template: an AnalysisTemplate or
	// ClusterAnalysisTemplate that may use canaryd's extensions which Argo
	// Rollouts cannot run (provider.judge, scoring). An Argo document
	// (APIVersion) must not use them: Argo Rollouts would refuse the metric
	// or silently judge another way.
	CanarydAPIVersion = "canaryd.io/v1alpha1"

	KindAnalysisTemplate        = "AnalysisTemplate"
	KindClusterAnalysisTemplate = "ClusterAnalysisTemplate"
	KindAnalysisRun             = "AnalysisRun"
)

// Document is a parsed input: an Argo document or a bare spec. For a bare
// spec Kind and APIVersion are empty.
type Document struct {
	APIVersion string     `json:"apiVersion,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	Metadata   ObjectMeta `json:"metadata,omitempty"`
	Spec       Spec       `json:"spec"`

	// cutByComments holds the conditions that a YAML comment cut short
	// (see conditionsCutByComments), so that their problems say so.
	cutByComments map[string]bool
	// pruned are the fields Parse left out for their values' types (see
	// Pruned).
	pruned []string
}

// Pruned lists the fields, by their paths as Parse's problems name them
// ("metrics[0].interval"), whose values Parse left out of the document
// because their types were wrong (each one of Parse's problems): the
// rest of the document is returned and checked, but whatever is said of
// these fields after Parse (a required field missing, a combination of
// limits) is the type's problem again, and waits for its fix.
func (d *Document) Pruned() []string {
	if d == nil {
		return nil
	}
	return d.pruned
}

// ObjectMeta is the part of Kubernetes object metadata that canaryd reads.
// Every other metadata field (uid, labels, managedFields, …) is accepted and
// ignored, so that `kubectl get -o yaml` output can be posted as it is.
type ObjectMeta struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// Spec is an AnalysisTemplate's spec (and the runnable part of an
// AnalysisRun's): Argo's field names and types.
type Spec struct {
	Metrics              []Metric               `json:"metrics"`
	Args                 []Argument             `json:"args,omitempty"`
	DryRun               []DryRun               `json:"dryRun,omitempty"`
	MeasurementRetention []MeasurementRetention `json:"measurementRetention,omitempty"`

	// Scoring is canaryd's extension (bare specs and canaryd templates
	// only): when set, the analysis is scored as Kayenta scores a canary,
	// and its phase follows the score. See Scoring.
	Scoring *Scoring `json:"scoring,omitempty"`
}

// Argument is a template argument.
type Argument struct {
	Name      string     `json:"name" validate:"required"`
	Value     *string    `json:"value,omitempty"`
	ValueFrom *ValueFrom `json:"valueFrom,omitempty"`

	// FreeText is canaryd's extension (bare specs and canaryd templates
	// only): the value is substituted as it is wherever its tag stands, as
	// Argo Rollouts substitutes every value, so that a caller may pass any
	// text, a label selector or a whole expression. Without it, a value
	// cannot change the structure of a query or a condition (see
	// Spec.Resolve).
	FreeText bool `json:"freeText,omitempty"`
}

// ValueFrom is Argo's reference to a Kubernetes value. canaryd runs outside
// Kubernetes and rejects it with a message that says so.
type ValueFrom struct {
	SecretKeyRef *SecretKeyRef `json:"secretKeyRef,omitempty"`
	FieldRef     *FieldRef     `json:"fieldRef,omitempty"`
}

// SecretKeyRef names a key of a Kubernetes Secret.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// FieldRef names a field of the Rollout.
type FieldRef struct {
	FieldPath string `json:"fieldPath"`
}

// DryRun marks the metrics whose names match MetricName (an unanchored
// regular expression) as dry-run.
type DryRun struct {
	MetricName string `json:"metricName" validate:"required"`
}

// MeasurementRetention keeps the newest Limit measurements of the metrics
// whose names match MetricName (an unanchored regular expression).
type MeasurementRetention struct {
	MetricName string `json:"metricName" validate:"required"`
	// Limit of 0 keeps the default number of measurements, as in Argo.
	Limit int32 `json:"limit" validate:"gte=0"`
}

// Metric is one metric, as Argo Rollouts defines it.
type Metric struct {
	Name                    string       `json:"name" validate:"required"`
	Interval                string       `json:"interval,omitempty"`
	InitialDelay            string       `json:"initialDelay,omitempty"`
	Count                   *IntOrString `json:"count,omitempty"`
	SuccessCondition        string       `json:"successCondition,omitempty"`
	FailureCondition        string       `json:"failureCondition,omitempty"`
	FailureLimit            *IntOrString `json:"failureLimit,omitempty"`
	InconclusiveLimit       *IntOrString `json:"inconclusiveLimit,omitempty"`
	ConsecutiveErrorLimit   *IntOrString `json:"consecutiveErrorLimit,omitempty"`
	ConsecutiveSuccessLimit *IntOrString `json:"consecutiveSuccessLimit,omitempty"`
	// Provider is checked by the provider the registry finds for it (see
	// internal/compile), not by Validate's struct rules.
	Provider MetricProvider `json:"provider" validate:"-"`

	// NoData is canaryd's no-data policy, an extension Argo does not have:
	// what a measurement that returns no data (an empty result, or only
	// NaN) is. Empty keeps Argo's behaviour: the conditions see the empty
	// result. Inconclusive, Failed or Error decide without them.
	NoData string `json:"noData,omitempty" validate:"omitempty,oneof=Inconclusive Failed Error"`
}

// MetricProvider holds exactly one provider. Which of them canaryd runs is
// the registry's business (internal/compile's Providers): a provider that
// none is registered for is an error naming it. Each provider's
// configuration is kept as its JSON, for its provider to decode
// (DecodeStrict) and check: Prometheus' in internal/provider/prometheus,
// the judge's in internal/provider/judge, the web provider's in
// internal/provider/web.
type MetricProvider struct {
	Prometheus json.RawMessage `json:"prometheus,omitempty"`
	// Judge is canaryd's canary-versus-baseline provider, an extension
	// that bare specs and canaryd templates may use.
	Judge json.RawMessage `json:"judge,omitempty"`

	Kayenta    json.RawMessage `json:"kayenta,omitempty"`
	Web        json.RawMessage `json:"web,omitempty"`
	Datadog    json.RawMessage `json:"datadog,omitempty"`
	Wavefront  json.RawMessage `json:"wavefront,omitempty"`
	NewRelic   json.RawMessage `json:"newRelic,omitempty"`
	Job        json.RawMessage `json:"job,omitempty"`
	CloudWatch json.RawMessage `json:"cloudWatch,omitempty"`
	Graphite   json.RawMessage `json:"graphite,omitempty"`
	Influxdb   json.RawMessage `json:"influxdb,omitempty"`
	SkyWalking json.RawMessage `json:"skywalking,omitempty"`
	Plugin     json.RawMessage `json:"plugin,omitempty"`
}

// IntOrString is Kubernetes' int-or-string: counts and limits may be given
// as numbers or as strings (typically "{{args.count}}").
type IntOrString struct {
	IsString bool
	Int      int32
	Str      string
}

// IntValue returns the integer value. Like Kubernetes' IntOrString, a string
// that is not a number is 0; validation reports such strings before this is
// ever used.
func (v *IntOrString) IntValue() int {
	if v == nil {
		return 0
	}
	if v.IsString {
		i, _ := strconv.Atoi(v.Str)
		return i
	}
	return int(v.Int)
}

// Int32 returns the value as an int32. Unlike IntValue, a string that is
// not a base-10 integer within int32's range is an error, not 0: canaryd
// refuses what Argo Rollouts would silently run with a zero.
func (v *IntOrString) Int32() (int32, error) {
	if !v.IsString {
		return v.Int, nil
	}
	i, err := strconv.ParseInt(v.Str, 10, 32)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%q is out of range (%d to %d)", v.Str, math.MinInt32, math.MaxInt32)
	}
	if err != nil {
		return 0, fmt.Errorf("%q %w", v.Str, errNotInteger)
	}
	return int32(i), nil
}

// errNotInteger is the error of Int32 for a string that is no integer at
// all, which Argo Rollouts reads as 0.
var errNotInteger = errors.New("is not an integer")

// String returns the value as written.
func (v IntOrString) String() string {
	if v.IsString {
		return v.Str
	}
	return strconv.Itoa(int(v.Int))
}

// MarshalJSON writes the value in the form it was given.
func (v IntOrString) MarshalJSON() ([]byte, error) {
	if v.IsString {
		return json.Marshal(v.Str)
	}
	return json.Marshal(v.Int)
}

// UnmarshalJSON accepts a JSON number or string.
func (v *IntOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v.IsString = true
		return json.Unmarshal(b, &v.Str)
	}
	v.IsString = false
	return json.Unmarshal(b, &v.Int)
}
