package cloudwatch_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/canaryd/canaryd/internal/provider/cloudwatch"
)

// The fake credentials of every test, and its region. No test sends them
// anywhere but a loopback stand-in.
const (
	accessKey = "AKIDCANARYDTEST00001"
	secretKey = "canaryd/test/secret/key/00000000000000000"
	region    = "eu-west-1"
)

// at is the instant of the tests' measurements.
var at = time.Unix(1599076435, 0)

// answer is a recorded GetMetricData answer (testdata/*.json): the status,
// headers, and the body as CloudWatch sends it in the AWS SDK's protocol,
// Smithy RPC v2 CBOR: body is written as JSON here, with the wire's field
// names, and encoded to CBOR when it is sent (numbers as doubles,
// Timestamps' elements as epoch seconds under CBOR tag 1, as CloudWatch's
// answers have them). raw is sent as it is instead; truncate cuts the
// encoded body to that many bytes.
type answer struct {
	Status      int               `json:"status"`
	Headers     map[string]string `json:"headers"`
	ContentType string            `json:"contentType"`
	Body        json.RawMessage   `json:"body"`
	Raw         string            `json:"raw"`
	Truncate    int               `json:"truncate"`
}

// load reads a recorded answer and encodes its body.
func load(t testing.TB, file string) (answer, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var a answer
	if err := json.Unmarshal(data, &a); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if a.Raw != "" {
		return a, []byte(a.Raw)
	}
	d := json.NewDecoder(bytes.NewReader(a.Body))
	d.UseNumber()
	var tree any
	if err := d.Decode(&tree); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	body := cbor.Encode(toCBOR(tree, false))
	if a.Truncate > 0 {
		body = body[:a.Truncate]
	}
	return a, body
}

// toCBOR is a JSON tree as CBOR; time makes numbers timestamps.
func toCBOR(v any, time bool) cbor.Value {
	switch x := v.(type) {
	case map[string]any:
		m := cbor.Map{}
		for k, e := range x {
			m[k] = toCBOR(e, k == "Timestamps")
		}
		return m
	case []any:
		l := cbor.List{}
		for _, e := range x {
			l = append(l, toCBOR(e, time))
		}
		return l
	case json.Number:
		f, _ := x.Float64()
		if time {
			return &cbor.Tag{ID: 1, Value: cbor.Float64(f)}
		}
		return cbor.Float64(f)
	case string:
		return cbor.String(x)
	case bool:
		return cbor.Bool(x)
	}
	return &cbor.Nil{}
}

// backend is a CloudWatch stand-in: it checks each request as the AWS SDK
// sends GetMetricData (the path, the protocol's headers, the signature's
// key) and answers with a recorded answer.
type backend struct {
	t   *testing.T
	srv *httptest.Server

	mu    sync.Mutex
	file  string
	delay time.Duration
	body  []byte // the answer's body, when set, instead of file's
	got   cbor.Map
	n     int
}

func newBackend(t *testing.T) *backend {
	b := &backend{t: t}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

// set changes what the stand-in answers.
func (b *backend) set(file string, delay time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.file, b.delay, b.body = file, delay, nil
}

// setBody answers 200 with body.
func (b *backend) setBody(body []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.file, b.delay, b.body = "", 0, body
}

// sent is the last request's body, decoded, and how many were made.
func (b *backend) sent() (cbor.Map, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got, b.n
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	t, file, delay, fixed := b.t, b.file, b.delay, b.body
	b.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/service/GraniteServiceVersion20100801/operation/GetMetricData" {
		t.Errorf("request %s %s", r.Method, r.URL.Path)
	}
	if r.Header.Get("Smithy-Protocol") != "rpc-v2-cbor" || r.Header.Get("Content-Type") != "application/cbor" {
		t.Errorf("headers: %v", r.Header)
	}
	if auth := r.Header.Get("Authorization"); !strings.Contains(auth, "Credential="+accessKey+"/") || !strings.Contains(auth, "/"+region+"/monitoring/aws4_request") {
		t.Errorf("Authorization: %q", auth)
	}
	data, _ := io.ReadAll(r.Body)
	v, err := cbor.Decode(data)
	if err != nil {
		t.Errorf("the request is not CBOR: %v", err)
	}
	m, _ := v.(cbor.Map)
	b.mu.Lock()
	b.got, b.n = m, b.n+1
	b.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if fixed != nil {
		w.Header().Set("Content-Type", "application/cbor")
		w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
		_, _ = w.Write(fixed)
		return
	}
	a, body := load(t, file)
	w.Header().Set("Content-Type", "application/cbor")
	if a.ContentType != "" {
		w.Header().Set("Content-Type", a.ContentType)
	} else {
		w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	}
	for k, v := range a.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("X-Amzn-Requestid", "030a8061-95f5-4a39-8ef8-fd3dc2da8a82")
	w.WriteHeader(a.Status)
	_, _ = w.Write(body)
}

// testConfig points the AWS SDK at the stand-in, with the fake
// credentials, and away from every file and the instance's role.
func testConfig(endpoint string) []func(*config.LoadOptions) error {
	return []func(*config.LoadOptions) error{
		config.WithRegion(region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(accessKey, secretKey, "")),
		config.WithBaseEndpoint(endpoint),
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
	}
}

// newProvider builds a provider that sends to b.
func newProvider(t testing.TB, b *backend, o cloudwatch.Options) *cloudwatch.Provider {
	t.Helper()
	o.Load = append(testConfig(b.srv.URL), o.Load...)
	p, err := cloudwatch.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.CloseIdleConnections)
	return p
}

// timeOf reads a CBOR timestamp of the request.
func timeOf(v cbor.Value) (time.Time, error) {
	tag, ok := v.(*cbor.Tag)
	if !ok || tag.ID != 1 {
		return time.Time{}, fmt.Errorf("not a timestamp: %#v", v)
	}
	switch x := tag.Value.(type) {
	case cbor.Float64:
		return time.UnixMilli(int64(float64(x) * 1000)), nil
	case cbor.Uint:
		return time.Unix(int64(x), 0), nil
	}
	return time.Time{}, fmt.Errorf("not a timestamp: %#v", tag.Value)
}
