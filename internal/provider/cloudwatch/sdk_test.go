package cloudwatch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	smithycbor "github.com/aws/smithy-go/encoding/cbor"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/canaryd/canaryd/internal/outbound"
	"github.com/canaryd/canaryd/internal/provider/cloudwatch/cloudwatchtest"
)

// captured is an HTTP client that keeps the request the AWS SDK's client
// sends, and fails it.
type captured struct {
	req  *http.Request
	body []byte
}

var errCaptured = errors.New("captured")

func (c *captured) Do(req *http.Request) (*http.Response, error) {
	c.req = req
	c.body, _ = io.ReadAll(req.Body)
	return nil, errCaptured
}

// TestRequestAsTheSDKs holds each request canaryd sends to the one the AWS
// SDK's client sends for the same configuration, window and queries: the
// URL (the endpoint of the region, FIPS, dual-stack, AWS_ENDPOINT_URL with
// a path), the Host, the body byte for byte and the protocol's headers;
// and holds its signature to the one the SDK's signer gives the same
// request, with and without a session token, on two days.
func TestRequestAsTheSDKs(t *testing.T) {
	static := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "")
	withToken := credentials.NewStaticCredentialsProvider("ASIAEXAMPLE", "secret/with+signs", "IQoJb3JpZ2luX2VjEXAMPLE//token==")
	at := time.Date(2026, 11, 28, 23, 59, 59, 987_000_000, time.UTC)
	for _, tt := range []struct {
		name   string
		opts   cloudwatch.Options
		creds  aws.CredentialsProvider
		config string
	}{
		{"the region's endpoint", cloudwatch.Options{Region: "eu-west-1"}, static, `{"interval": "30m", "metricDataQueries": [
			{"id": "rate", "expression": "errors / requests", "label": "Error rate", "period": 300},
			{"id": "errors", "metricStat": {"metric": {"namespace": "app", "metricName": "errors", "dimensions": [{"name": "Service", "value": "checkout"}, {"name": "Zone", "value": "a  b"}]}, "period": 300, "stat": "Sum", "unit": "Count"}, "returnData": false},
			{"id": "requests", "metricStat": {"metric": {"namespace": "app", "metricName": "requests"}, "period": "60", "stat": "p99"}, "returnData": false}]}`},
		{"a session token", cloudwatch.Options{Region: "us-east-1"}, withToken, `{"metricDataQueries": [{"id": "m", "expression": "SEARCH('{AWS/EC2,InstanceId} MetricName=\"CPUUtilization\"', 'Average', 300)"}]}`},
		{"FIPS", cloudwatch.Options{Region: "us-east-1", EndpointOptions: cloudwatch.EndpointResolverOptions{UseFIPSEndpoint: aws.FIPSEndpointStateEnabled}}, static, `{"metricDataQueries": [{"id": "m", "expression": "1"}]}`},
		{"dual-stack, China", cloudwatch.Options{Region: "cn-north-1", EndpointOptions: cloudwatch.EndpointResolverOptions{UseDualStackEndpoint: aws.DualStackEndpointStateEnabled}}, static, `{"metricDataQueries": [{"id": "m", "expression": "1"}]}`},
		{"AWS_ENDPOINT_URL with a port", cloudwatch.Options{Region: "eu-west-1", BaseEndpoint: aws.String("http://127.0.0.1:4566")}, withToken, `{"metricDataQueries": [{"id": "m", "expression": "1"}]}`},
		{"AWS_ENDPOINT_URL with the default port and a path", cloudwatch.Options{Region: "eu-west-1", BaseEndpoint: aws.String("https://cloudwatch.example.com:443/proxy/aws/")}, static, `{"metricDataQueries": [{"id": "m", "expression": "1"}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Credentials = tt.creds
			opts.Retryer = aws.NopRetryer{}
			sent := &captured{}
			opts.HTTPClient = sent
			client := cloudwatch.New(opts)
			m, errs := decode(json.RawMessage(tt.config))
			pl, errs2 := check(m)
			if len(errs) > 0 || len(errs2) > 0 {
				t.Fatal(errs, errs2)
			}
			start := at.Add(-pl.interval)
			if _, err := client.GetMetricData(context.Background(), &cloudwatch.GetMetricDataInput{StartTime: &start, EndTime: &at, MetricDataQueries: pl.queries}); !errors.Is(err, errCaptured) {
				t.Fatalf("the SDK's request: %v", err)
			}

			g, err := newGetMetricData(client, aws.NewCredentialsCache(tt.creds), http.DefaultTransport)
			if err != nil {
				t.Fatal(err)
			}
			if pl.body, err = g.encodeQueries(pl.queries); err != nil {
				t.Fatal(err)
			}
			sc := newScratch(g)
			for _, now := range []time.Time{at, at.Add(time.Second), at.Add(25 * time.Hour)} {
				sc.body = appendBody(sc.body[:0], pl.body, start, at)
				req, err := g.request(context.Background(), sc, now)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(sc.body, sent.body) {
					t.Errorf("the body:\n got %x\nwant %x (the SDK's)", sc.body, sent.body)
				}
				if got, want := req.URL.String(), sent.req.URL.String(); got != want {
					t.Errorf("URL %s, want the SDK's %s", got, want)
				}
				if want := sent.req.Host; want != "" && req.Host != want || want == "" && req.Host != sent.req.URL.Host {
					t.Errorf("Host %q, want the SDK's %q (URL %s)", req.Host, want, sent.req.URL.Host)
				}
				for k := range protocolHeaders {
					if got, want := req.Header.Values(k), sent.req.Header.Values(k); !reflect.DeepEqual(got, want) {
						t.Errorf("%s: %q, want the SDK's %q", k, got, want)
					}
				}
				checkSigned(t, req, sc.body, tt.creds, now, tt.opts.Region)
			}
		})
	}
}

// checkSignature holds req's signature to the one the AWS SDK's signer
// gives it, signing the same headers but those canaryd leaves unsigned,
// as the SDK does (Accept-Encoding).
func checkSigned(t *testing.T, req *http.Request, body []byte, creds aws.CredentialsProvider, now time.Time, region string) {
	t.Helper()
	c, err := creds.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sdk := req.Clone(context.Background())
	for _, k := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token", "Accept-Encoding"} {
		delete(sdk.Header, k)
	}
	sum := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(context.Background(), c, sdk, hex.EncodeToString(sum[:]), "monitoring", region, now); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		if got, want := req.Header.Get(k), sdk.Header.Get(k); got != want {
			t.Errorf("%s:\n got %s\nwant %s (the SDK's signer)", k, got, want)
		}
	}
}

// sdkDecode is the AWS SDK's own decoding of a 200 answer of body.
func sdkDecode(t testing.TB, body []byte) (cloudwatch.GetMetricDataOutput, error) {
	t.Helper()
	g, err := newGetMetricData(cloudwatch.New(cloudwatch.Options{Region: "eu-west-1"}), nil, http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	var out cloudwatch.GetMetricDataOutput
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body))}}
	err = g.proto.DeserializeResponse(context.Background(), g.op, cloudwatch.TypeRegistry, resp, &out)
	return out, err
}

// sdkEncode is out as the AWS SDK's serializer writes it: maps and lists
// of indefinite length, as an RPC v2 server might answer.
func sdkEncode(t testing.TB, out *cloudwatch.GetMetricDataOutput) []byte {
	t.Helper()
	g, err := newGetMetricData(cloudwatch.New(cloudwatch.Options{Region: "eu-west-1"}), nil, http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	req := smithyhttp.NewStackRequest().(*smithyhttp.Request)
	if err := g.proto.SerializeRequest(context.Background(), g.op, out, req); err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(req.GetStream())
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// answers are GetMetricData answers of every shape decodeAnswer takes,
// and of shapes it leaves to the SDK: each recorded answer, encoded with
// definite lengths, and the same again as the SDK's serializer writes it
// (indefinite lengths), numbers as integers, floats and half-floats,
// nulls, unknown and repeated keys, a chunked string.
func answers(t testing.TB) [][]byte {
	var bodies [][]byte
	for _, name := range cloudwatchtest.Answers() {
		status, body, err := cloudwatchtest.Body(name)
		if err != nil {
			t.Fatal(err)
		}
		if status == http.StatusOK {
			bodies = append(bodies, body)
			if out, err := sdkDecode(t, body); err == nil {
				bodies = append(bodies, sdkEncode(t, &out))
			}
		}
	}
	m := func(kv ...any) smithycbor.Map {
		out := smithycbor.Map{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1].(smithycbor.Value)
		}
		return out
	}
	s := func(v string) smithycbor.Value { return smithycbor.String(v) }
	ts := func(v smithycbor.Value) smithycbor.Value { return &smithycbor.Tag{ID: 1, Value: v} }
	for _, v := range []smithycbor.Value{
		m("MetricDataResults", smithycbor.List{m("Id", s("a"), "Label", s("b"), "StatusCode", s("Complete"),
			"Timestamps", smithycbor.List{ts(smithycbor.Uint(1599076435)), ts(smithycbor.NegInt(5)), ts(smithycbor.Float32(1.5e9)), ts(smithycbor.Float64(1599076435.123)), &smithycbor.Nil{}},
			"Values", smithycbor.List{smithycbor.Uint(3), smithycbor.NegInt(2), smithycbor.Float32(0.25), smithycbor.Float64(math.Inf(-1)), &smithycbor.Nil{}, &smithycbor.Undefined{}},
			"Messages", smithycbor.List{m("Code", s("c"), "Value", s("v")), m("Code", s("only"))})},
			"Messages", smithycbor.List{m("Value", s("top"))}, "NextToken", s("next")),
		m("MetricDataResults", smithycbor.List{&smithycbor.Nil{}, m()}),
		m("MetricDataResults", smithycbor.List{}),
		m(),
		m("MetricDataResults", smithycbor.List{m("Id", s("a"), "Unknown", s("x"))}),
		m("MetricDataResults", smithycbor.List{m("Id", &smithycbor.Nil{})}),
		m("MetricDataResults", smithycbor.List{m("Values", smithycbor.List{smithycbor.Float64(1)}, "Timestamps", smithycbor.List{ts(smithycbor.String("x"))})}),
		m("MetricDataResults", smithycbor.List{m("Values", smithycbor.List{s("x")})}),
		m("MetricDataResults", m("Id", s("a"))),
		m("Other", smithycbor.Uint(1)),
		smithycbor.List{},
		&smithycbor.Nil{},
	} {
		bodies = append(bodies, smithycbor.Encode(v))
	}
	return append(bodies,
		[]byte{0xa1, 0x71, 'M', 'e', 't', 'r', 'i', 'c', 'D', 'a', 't', 'a', 'R', 'e', 's', 'u', 'l', 't', 's', 0x81, 0xa1, 0x66, 'V', 'a', 'l', 'u', 'e', 's', 0x81, 0xf9, 0x3c, 0x00}, // a half-float
		[]byte{0xa1, 0x69, 'N', 'e', 'x', 't', 'T', 'o', 'k', 'e', 'n', 0x7f, 0x61, 'a', 0x61, 'b', 0xff},                                                                               // a chunked string
		[]byte{0xbf, 0x69, 'N', 'e', 'x', 't', 'T', 'o', 'k', 'e', 'n', 0x61, 'a', 0x69, 'N', 'e', 'x', 't', 'T', 'o', 'k', 'e', 'n', 0x61, 'b', 0xff},                                  // a key twice
	)
}

// TestDecodeAnswerAsTheSDK holds decodeAnswer to the AWS SDK's
// deserializer on every answer of answers and every truncation of each:
// what it decodes, the SDK decodes without an error and to the same
// results, messages and token (nil and empty lists apart, pointers by
// what they point to); what it does not, the SDK decodes instead.
func TestDecodeAnswerAsTheSDK(t *testing.T) {
	taken := 0
	for _, full := range answers(t) {
		for n := len(full); n >= 0; n-- {
			for _, known := range [][]*string{nil, knownStrings} {
				if compareDecoders(t, full[:n], known) && n == len(full) {
					taken++
				}
			}
		}
	}
	if taken < 30 {
		t.Errorf("decodeAnswer took %d whole answers of those tried, fewer than the 30 it should", taken)
	}
}

// knownStrings are strings a request might hold, which the answers of
// answers repeat.
var knownStrings = []*string{aws.String("rate"), nil, aws.String("errors"), aws.String("a"), aws.String("Error rate")}

// compareDecoders compares decodeAnswer's decoding of body with the SDK's,
// and reports whether decodeAnswer took it.
func compareDecoders(t testing.TB, body []byte, known []*string) bool {
	t.Helper()
	var got cloudwatch.GetMetricDataOutput
	if !decodeAnswer(body, known, &got) {
		if !reflect.DeepEqual(got, cloudwatch.GetMetricDataOutput{}) {
			t.Errorf("%x: decodeAnswer did not take it, but changed its output", body)
		}
		return false
	}
	want, err := sdkDecode(t, body)
	if err != nil {
		t.Errorf("%x: decodeAnswer took what the SDK refuses: %v", body, err)
		return true
	}
	if g, w := show(&got), show(&want); g != w {
		t.Errorf("%x:\n got %s\nwant %s (the SDK's)", body, g, w)
	}
	return true
}

// show writes an output whole: what its pointers point to, nil and
// empty lists apart, each value's bits (NaN is a NaN's), each time's
// instant and location.
func show(out *cloudwatch.GetMetricDataOutput) string {
	var b strings.Builder
	str := func(p *string) string {
		if p == nil {
			return "nil"
		}
		return strconv.Quote(*p)
	}
	msgs := func(ms []types.MessageData) {
		fmt.Fprintf(&b, "messages(nil=%t", ms == nil)
		for _, m := range ms {
			fmt.Fprintf(&b, " %s:%s", str(m.Code), str(m.Value))
		}
		b.WriteString(") ")
	}
	fmt.Fprintf(&b, "results(nil=%t) ", out.MetricDataResults == nil)
	for _, r := range out.MetricDataResults {
		fmt.Fprintf(&b, "{%s %s %q ", str(r.Id), str(r.Label), r.StatusCode)
		msgs(r.Messages)
		fmt.Fprintf(&b, "times(nil=%t", r.Timestamps == nil)
		for _, t := range r.Timestamps {
			fmt.Fprintf(&b, " %d/%d/%p", t.Unix(), t.Nanosecond(), t.Location())
		}
		fmt.Fprintf(&b, ") values(nil=%t", r.Values == nil)
		for _, v := range r.Values {
			fmt.Fprintf(&b, " %x", math.Float64bits(v))
		}
		b.WriteString(")} ")
	}
	msgs(out.Messages)
	b.WriteString(str(out.NextToken))
	return b.String()
}

// FuzzDecodeAnswer holds decodeAnswer to the AWS SDK's deserializer on any
// answer (see TestDecodeAnswerAsTheSDK).
func FuzzDecodeAnswer(f *testing.F) {
	for _, body := range answers(f) {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		compareDecoders(t, body, nil)
		compareDecoders(t, body, knownStrings)
	})
}

// TestDecodeAnswerAllocations: an answer of one result costs three
// allocations (the results, the timestamps, the values) when its Id and
// Label are known, five otherwise (the strings, their pointers), where
// the SDK's deserializer costs 10.
func TestDecodeAnswerAllocations(t *testing.T) {
	body := smithycbor.Encode(smithycbor.Map{"MetricDataResults": smithycbor.List{smithycbor.Map{
		"Id": smithycbor.String("rate"), "Label": smithycbor.String("rate"), "StatusCode": smithycbor.String("Complete"),
		"Timestamps": smithycbor.List{&smithycbor.Tag{ID: 1, Value: smithycbor.Float64(1599076435)}, &smithycbor.Tag{ID: 1, Value: smithycbor.Float64(1599076375)}},
		"Values":     smithycbor.List{smithycbor.Float64(0.995), smithycbor.Float64(0.99)},
	}}, "Messages": smithycbor.List{}})
	var out cloudwatch.GetMetricDataOutput
	for _, tt := range []struct {
		known []*string
		most  float64
	}{{nil, 5}, {[]*string{aws.String("rate")}, 3}} {
		if n := testing.AllocsPerRun(100, func() {
			if !decodeAnswer(body, tt.known, &out) {
				t.Fatal("not taken")
			}
		}); n > tt.most {
			t.Errorf("known %d strings: %.0f allocations, more than %.0f", len(tt.known), n, tt.most)
		}
	}
	if out.MetricDataResults[0].Id == nil || *out.MetricDataResults[0].Label != "rate" {
		t.Errorf("%s", show(&out))
	}
}

// TestErrorsAsTheSDKs: a request that fails before an answer (credentials
// that cannot be had, a connection refused, a measurement canceled) fails
// with the error the AWS SDK's client gives, word for word, as the errors
// of answers do (TestArgoCases, test/argo).
func TestErrorsAsTheSDKs(t *testing.T) {
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String()
	}()
	noCreds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no credentials here")
	})
	static := credentials.NewStaticCredentialsProvider(cloudwatchtest.AccessKey, cloudwatchtest.SecretKey, "")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		name  string
		creds aws.CredentialsProvider
		ctx   context.Context
	}{
		{"no credentials", noCreds, context.Background()},
		{"a connection refused", static, context.Background()},
		{"canceled", static, canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			transport := &http.Transport{}
			defer transport.CloseIdleConnections()
			opts := cloudwatch.Options{Region: cloudwatchtest.Region, BaseEndpoint: aws.String(refused), Credentials: aws.NewCredentialsCache(tt.creds),
				Retryer: aws.NopRetryer{}, HTTPClient: outbound.Doer{Transport: transport}}
			client := cloudwatch.New(opts)
			at := time.Unix(1599076435, 0)
			start := at.Add(-5 * time.Minute)
			queries := []types.MetricDataQuery{{Id: aws.String("m"), Expression: aws.String("1")}}
			_, want := client.GetMetricData(tt.ctx, &cloudwatch.GetMetricDataInput{StartTime: &start, EndTime: &at, MetricDataQueries: queries})

			g, err := newGetMetricData(client, opts.Credentials, transport)
			if err != nil {
				t.Fatal(err)
			}
			sc := newScratch(g)
			body, err := g.encodeQueries(queries)
			if err != nil {
				t.Fatal(err)
			}
			sc.body = appendBody(nil, body, start, at)
			req, got := g.request(tt.ctx, sc, time.Now())
			if got == nil {
				got = g.do(tt.ctx, sc, req, 1<<20, nil, &sc.out)
			}
			if want == nil || got == nil || got.Error() != want.Error() {
				t.Errorf("got  %v\nwant %v (the SDK's client)", got, want)
			}
		})
	}
}

// TestScratchReuse: a request's body can be had again (GetBody, for the
// transport's retry on a connection the server had closed) as it was
// sent, and a measurement's scratch is kept for the next one only when
// nothing may still read it: a 2xx answer read whole, the body read to
// its end and not asked for again, and short.
func TestScratchReuse(t *testing.T) {
	b := cloudwatchtest.NewBackend(t)
	b.Set("values.json", 0)
	g, err := newGetMetricData(cloudwatch.New(cloudwatch.Options{Region: cloudwatchtest.Region, BaseEndpoint: aws.String(b.URL())}), aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(cloudwatchtest.AccessKey, cloudwatchtest.SecretKey, "")), http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	send := func(body []byte) (*scratch, *http.Request) {
		sc := newScratch(g)
		sc.body = body
		req, err := g.request(context.Background(), sc, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return sc, req
	}
	sc, req := send([]byte{0xbf, 0xff})
	again, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(again); !bytes.Equal(got, []byte{0xbf, 0xff}) || !sc.rewound || sc.reusable() {
		t.Errorf("GetBody: %x, rewound %t, reusable %t; want the body, rewound, not reusable", got, sc.rewound, sc.reusable())
	}
	sc, req = send([]byte{0xbf, 0xff})
	if err := g.do(context.Background(), sc, req, 1<<20, nil, &sc.out); err != nil || !sc.reusable() {
		t.Errorf("a 200 read whole: %v, reusable %t", err, sc.reusable())
	}
	b.Set("error_500.json", 0)
	sc, req = send([]byte{0xbf, 0xff})
	if err := g.do(context.Background(), sc, req, 1<<20, nil, &sc.out); err == nil || sc.reusable() {
		t.Errorf("a 500: %v, reusable %t", err, sc.reusable())
	}
	b.Set("values.json", 0)
	long := append([]byte{0xbf, 0x61, 'x', 0x79, maxPooledRequest >> 8, 0}, bytes.Repeat([]byte{'y'}, maxPooledRequest)...)
	sc, req = send(append(long, 0xff))
	_ = g.do(context.Background(), sc, req, 1<<20, nil, &sc.out)
	if sc.reusable() {
		t.Error("a long body's scratch is reusable")
	}
}
