package prometheus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/canaryd/canaryd/internal/series"
)

// QuerySeries runs the metric's query over q's range, at q's step, as a
// range query (series.Source): what the HTML report draws beneath the
// metric's measurements. It goes through the metric's own client (its
// datasource, headers and credentials, the datasource's slots and the
// bound on an answer's bytes) with the metric's timeout. At most
// q.MaxSeries series are kept and q.MaxPoints points of each; the others
// are only counted. A query whose range needs more points than that is
// refused before it is sent.
func (s *source) QuerySeries(ctx context.Context, q series.Query) (series.Set, error) {
	if err := q.Check(); err != nil {
		return series.Set{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx, sent := withSentCredentials(ctx)
	fail := func(err error) (series.Set, error) {
		return series.Set{}, scrub(err, append(sent.list(), s.secrets...))
	}

	form := "end=" + url.QueryEscape(formatTime(q.End)) +
		"&query=" + s.escapedQuery +
		"&start=" + url.QueryEscape(formatTime(q.Start)) +
		"&step=" + url.QueryEscape(strconv.FormatFloat(q.Step.Seconds(), 'f', -1, 64)) +
		s.timeoutParam
	began := time.Now()
	resp, err := s.sendRange(ctx, http.MethodPost, form)
	if err == nil && refusesPost(resp.StatusCode) {
		// client_golang's fallback: a server that refuses the POST is
		// asked again with GET.
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		resp, err = s.sendRange(ctx, http.MethodGet, form)
	}
	if err != nil {
		s.observe(began, err)
		return fail(err)
	}
	// The body is bounded by the datasource's transport (limitResponse).
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		s.observe(began, err)
		return fail(err)
	}
	set, err := decodeSeries(resp.StatusCode, body, q)
	s.observe(began, err)
	if err != nil {
		return fail(err)
	}
	set.Step = q.Step
	return set, nil
}

// sendRange sends a query_range request with form as its body (POST) or
// its URL's query (GET).
func (s *source) sendRange(ctx context.Context, method, form string) (*http.Response, error) {
	target, body := s.ep.rangeURL, io.Reader(nil)
	if method == http.MethodGet {
		target += "?" + form
	} else {
		body = strings.NewReader(form)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	req.Header = s.p.rangeHeader
	if method == http.MethodGet {
		req.Header = req.Header.Clone()
		req.Header.Del("Content-Type")
	}
	return s.ep.send(req)
}

// refusesPost says whether a status is one after which client_golang asks
// again with GET: 403, 405 or 501.
func refusesPost(status int) bool {
	return status == http.StatusForbidden || status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented
}

// decodeSeries reads a query_range answer, keeping q.MaxSeries series of
// q.MaxPoints points at most.
func decodeSeries(status int, body []byte, q series.Query) (series.Set, error) {
	var answer struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		if status != http.StatusOK {
			return series.Set{}, fmt.Errorf("server returned HTTP status %s", http.StatusText(status))
		}
		return series.Set{}, fmt.Errorf("the answer is not Prometheus' JSON: %w", err)
	}
	if answer.Status != "success" || status != http.StatusOK {
		msg := answer.Error
		if msg == "" {
			msg = "server returned HTTP status " + http.StatusText(status)
		}
		if answer.ErrorType != "" {
			msg = answer.ErrorType + ": " + msg
		}
		return series.Set{}, errors.New(msg)
	}
	if answer.Data.ResultType != model.ValMatrix.String() {
		return series.Set{}, fmt.Errorf("a range query answered a %q, not a matrix", answer.Data.ResultType)
	}
	dec := json.NewDecoder(bytes.NewReader(answer.Data.Result))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return series.Set{}, errors.New("the answer's result is not a list")
	}
	var set series.Set
	for dec.More() {
		if len(set.Series) >= q.MaxSeries {
			var skip struct{}
			if err := dec.Decode(&skip); err != nil {
				return series.Set{}, fmt.Errorf("reading the answer: %w", err)
			}
			set.More++
			continue
		}
		var raw struct {
			Metric model.Metric         `json:"metric"`
			Values [][2]json.RawMessage `json:"values"`
		}
		if err := dec.Decode(&raw); err != nil {
			return series.Set{}, fmt.Errorf("reading the answer: %w", err)
		}
		sr := series.Series{Labels: series.CutLabels(raw.Metric.String())}
		for _, pair := range raw.Values[:min(len(raw.Values), q.MaxPoints)] {
			p, err := point(pair)
			if err != nil {
				return series.Set{}, err
			}
			sr.Points = append(sr.Points, p)
		}
		set.Series = append(set.Series, sr)
	}
	return set, nil
}

// point reads [1700000000.123, "0.5"].
func point(pair [2]json.RawMessage) (series.Point, error) {
	ts, err := strconv.ParseFloat(string(pair[0]), 64)
	if err != nil || math.IsNaN(ts) || math.IsInf(ts, 0) {
		return series.Point{}, fmt.Errorf("a point's time %.40q is not a number", pair[0])
	}
	var text string
	if err := json.Unmarshal(pair[1], &text); err != nil {
		return series.Point{}, fmt.Errorf("a point's value %.40q is not a string", pair[1])
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return series.Point{}, fmt.Errorf("a point's value %.40q is not a number", text)
	}
	sec, frac := math.Modf(ts)
	return series.Point{T: time.Unix(int64(sec), int64(math.Round(frac*1e3))*1e6).UTC(), V: v}, nil
}
