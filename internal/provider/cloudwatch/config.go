package cloudwatch

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/canaryd/canaryd/api"
	"github.com/canaryd/canaryd/internal/spec"
)

// Metric is Argo Rollouts' CloudWatch provider configuration
// (CloudWatchMetric, v1.10), with Argo's field names.
type Metric struct {
	// Interval is the window queried, ending at the measurement's
	// instant: a Go duration, 5m when empty (Argo's default). Not the
	// time between measurements.
	Interval string `json:"interval,omitempty"`
	// MetricDataQueries are GetMetricData's queries, as CloudWatch's
	// MetricDataQuery.
	MetricDataQueries []Query `json:"metricDataQueries"`
}

// Query is Argo's CloudWatchMetricDataQuery: one of GetMetricData's
// queries, a metric (MetricStat) or a Metric Math expression (Expression).
type Query struct {
	// ID names the query: a result's Id, and a name for expressions.
	ID string `json:"id,omitempty"`
	// Expression is a Metric Math expression over other queries' ids, or
	// a SEARCH.
	Expression *string `json:"expression,omitempty"`
	// Label is the result's label.
	Label *string `json:"label,omitempty"`
	// MetricStat is the metric queried and its statistic.
	MetricStat *MetricStat `json:"metricStat,omitempty"`
	// Period is an expression's period in seconds.
	Period *spec.IntOrString `json:"period,omitempty"`
	// ReturnData false leaves the query's values out of the answer (a
	// query only an expression uses).
	ReturnData *bool `json:"returnData,omitempty"`
}

// MetricStat is Argo's CloudWatchMetricStat.
type MetricStat struct {
	Metric StatMetric `json:"metric,omitempty"`
	// Period is the granularity in seconds of the values returned.
	Period spec.IntOrString `json:"period,omitempty"`
	// Stat is the statistic: Sum, Average, p99 and so on.
	Stat string `json:"stat,omitempty"`
	// Unit is one of CloudWatch's standard units.
	Unit string `json:"unit,omitempty"`
}

// StatMetric is Argo's CloudWatchMetricStatMetric.
type StatMetric struct {
	Dimensions []Dimension `json:"dimensions,omitempty"`
	MetricName string      `json:"metricName,omitempty"`
	Namespace  *string     `json:"namespace,omitempty"`
}

// Dimension is one of a metric's dimensions: a name and a plain value.
type Dimension struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// Argo's default, and CloudWatch's bounds of a GetMetricData request.
const (
	DefaultInterval = 5 * time.Minute
	// MaxQueries is the most queries one GetMetricData request may have.
	MaxQueries = 500
	// MaxDimensions is the most dimensions a metric may have.
	MaxDimensions = 30
)

// base is the path of the configuration relative to its metric.
const base = "provider.cloudWatch"

// queryID is CloudWatch's rule for a query's id.
var queryID = regexp.MustCompile(`^[a-z][a-zA-Z0-9_]*$`)

// decode reads the configuration strictly (spec.DecodeStrict): an unknown
// field or a value of the wrong type is a problem on its path.
func decode(raw json.RawMessage) (*Metric, []api.FieldError) {
	var m Metric
	if errs := spec.DecodeStrict(raw, &m, base); len(errs) > 0 {
		return nil, errs
	}
	return &m, nil
}

// plan is a configuration checked: what every measurement of it sends.
// queries are read only once built, shared by the measurements.
type plan struct {
	interval time.Duration
	queries  []types.MetricDataQuery
	// body is the queries as the AWS SDK encodes them, the part of every
	// request's body between its window's end and its start
	// (encodeQueries, appendBody).
	body []byte
	// known are the queries' ids, labels and metric names, which an
	// answer's results repeat as their Id and Label: a result's points
	// to them (decodeAnswer), read only as the queries are.
	known []*string
}

// problems collects a configuration's problems, each on its field.
type problems []api.FieldError

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, api.FieldError{Field: base + field, Message: fmt.Sprintf(format, args...)})
}

// check validates the configuration, each problem on its field, and
// builds its plan. What Argo leaves to CloudWatch to refuse at every
// measurement (a query without an id, neither or both of expression and
// metricStat, a period that is not a positive number, an unknown unit) is
// refused here, when the metric is compiled.
func check(m *Metric) (*plan, []api.FieldError) {
	var errs problems
	pl := &plan{interval: DefaultInterval}
	if m.Interval != "" {
		d, err := time.ParseDuration(m.Interval)
		switch {
		case err != nil:
			errs.add(".interval", "invalid interval string: %q is not a duration (30s, 5m, 1h)", clip(m.Interval))
		case d < time.Second:
			errs.add(".interval", "interval must be at least 1s: it is the window queried, ending at the measurement's instant")
		}
		pl.interval = d
	}
	switch n := len(m.MetricDataQueries); {
	case n == 0:
		errs.add(".metricDataQueries", "metricDataQueries is required: at least one query")
	case n > MaxQueries:
		errs.add(".metricDataQueries", "%d queries, more than the %d GetMetricData takes", n, MaxQueries)
	}
	ids := map[string]bool{}
	pl.queries = make([]types.MetricDataQuery, len(m.MetricDataQueries))
	for i := range m.MetricDataQueries {
		q := &m.MetricDataQueries[i]
		at := ".metricDataQueries[" + strconv.Itoa(i) + "]"
		checkQuery(q, at, ids, &errs)
		pl.queries[i] = convert(q)
		pl.known = append(pl.known, pl.queries[i].Id, pl.queries[i].Label)
		if ms := pl.queries[i].MetricStat; ms != nil {
			pl.known = append(pl.known, ms.Metric.MetricName)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return pl, nil
}

// checkQuery checks one query at the path at.
func checkQuery(q *Query, at string, ids map[string]bool, errs *problems) {
	switch {
	case q.ID == "":
		errs.add(at+".id", "id is required: a result is known by it")
	case len(q.ID) > 255 || !queryID.MatchString(q.ID):
		errs.add(at+".id", "id %q must start with a lowercase letter and hold only letters, digits and \"_\" (CloudWatch's rule)", clip(q.ID))
	case ids[q.ID]:
		errs.add(at+".id", "id %q is used by another query", q.ID)
	}
	ids[q.ID] = true
	hasExpr := q.Expression != nil && strings.TrimSpace(*q.Expression) != ""
	switch {
	case hasExpr && q.MetricStat != nil:
		errs.add(at, "a query has either expression or metricStat, not both")
	case !hasExpr && q.MetricStat == nil:
		errs.add(at, "a query needs expression or metricStat")
	}
	if q.Period != nil {
		if p, err := q.Period.Int32(); err != nil || p <= 0 {
			errs.add(at+".period", "period must be a positive number of seconds")
		}
	}
	if s := q.MetricStat; s != nil {
		checkStat(s, at+".metricStat", errs)
	}
}

// checkStat checks a metricStat at the path at.
func checkStat(s *MetricStat, at string, errs *problems) {
	if s.Metric.MetricName == "" {
		errs.add(at+".metric.metricName", "metricName is required")
	}
	if s.Stat == "" {
		errs.add(at+".stat", "stat is required (Sum, Average, Maximum, p99…)")
	}
	if p, err := s.Period.Int32(); err != nil || p <= 0 {
		errs.add(at+".period", "period is required: a positive number of seconds (60, 300)")
	}
	if s.Unit != "" && !slices.Contains(types.StandardUnit("").Values(), types.StandardUnit(s.Unit)) {
		errs.add(at+".unit", "%q is not one of CloudWatch's units (Count, Percent, Seconds, Bytes/Second…)", clip(s.Unit))
	}
	if n := len(s.Metric.Dimensions); n > MaxDimensions {
		errs.add(at+".metric.dimensions", "%d dimensions, more than the %d a metric has", n, MaxDimensions)
	}
	for j, d := range s.Metric.Dimensions {
		if d.Name == "" {
			errs.add(at+".metric.dimensions["+strconv.Itoa(j)+"].name", "a dimension's name is required")
		}
	}
}

// convert is the query as GetMetricData takes it, as Argo converts it.
func convert(q *Query) types.MetricDataQuery {
	out := types.MetricDataQuery{
		Id:         new(q.ID),
		Expression: q.Expression,
		Label:      q.Label,
		ReturnData: q.ReturnData,
	}
	if q.Period != nil {
		out.Period = new(int32(q.Period.IntValue()))
	}
	if s := q.MetricStat; s != nil {
		ms := &types.MetricStat{
			Metric: &types.Metric{
				MetricName: new(s.Metric.MetricName),
				Namespace:  s.Metric.Namespace,
			},
			Period: new(int32(s.Period.IntValue())),
			Stat:   new(s.Stat),
			Unit:   types.StandardUnit(s.Unit),
		}
		if len(s.Metric.Dimensions) > 0 {
			ms.Metric.Dimensions = make([]types.Dimension, len(s.Metric.Dimensions))
			for j, d := range s.Metric.Dimensions {
				ms.Metric.Dimensions[j] = types.Dimension{Name: new(d.Name), Value: new(d.Value)}
			}
		}
		out.MetricStat = ms
	}
	return out
}

// clip keeps a quoted value in a message short.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
