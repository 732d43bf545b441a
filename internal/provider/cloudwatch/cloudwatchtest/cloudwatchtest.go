// Package cloudwatchtest is a CloudWatch stand-in for tests: an HTTP
// server that checks GetMetricData requests as the AWS SDK sends them and
// answers with recorded answers (answers/*.json), so that canaryd's
// CloudWatch provider and Argo Rollouts' own (the nested test/ module) are
// held to the same answers. Nothing it serves reaches the internet.
package cloudwatchtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/encoding/cbor"
)

// The fake credentials of every test, and its region. No test sends them
// anywhere but a loopback stand-in.
const (
	AccessKey = "AKIDCANARYDTEST00001"
	SecretKey = "canaryd/test/secret/key/00000000000000000"
	Region    = "eu-west-1"
	// RequestID is the request id of every answer.
	RequestID = "030a8061-95f5-4a39-8ef8-fd3dc2da8a82"
)

//go:embed answers/*.json
var answers embed.FS

// answer is a recorded GetMetricData answer (answers/*.json): the status,
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

// Answers lists the recorded answers' names.
func Answers() []string {
	entries, _ := answers.ReadDir("answers")
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}

// Body is the recorded answer name's status and body, as the stand-in
// sends them.
func Body(name string) (int, []byte, error) {
	a, body, err := load(name)
	return a.Status, body, err
}

// load reads a recorded answer and encodes its body.
func load(name string) (answer, []byte, error) {
	data, err := answers.ReadFile(path.Join("answers", name))
	if err != nil {
		return answer{}, nil, err
	}
	var a answer
	if err := json.Unmarshal(data, &a); err != nil {
		return a, nil, fmt.Errorf("%s: %v", name, err)
	}
	if a.Raw != "" {
		return a, []byte(a.Raw), nil
	}
	d := json.NewDecoder(bytes.NewReader(a.Body))
	d.UseNumber()
	var tree any
	if err := d.Decode(&tree); err != nil {
		return a, nil, fmt.Errorf("%s: %v", name, err)
	}
	body := cbor.Encode(toCBOR(tree, false))
	if a.Truncate > 0 {
		body = body[:a.Truncate]
	}
	return a, body, nil
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

// Backend is the stand-in: it checks each request as the AWS SDK sends
// GetMetricData (the path, the protocol's headers, and its SigV4
// signature, which the SDK's signer must give the same: checkSignature)
// and answers with a recorded answer.
type Backend struct {
	t   testing.TB
	srv *httptest.Server

	mu    sync.Mutex
	file  string
	delay time.Duration
	body  []byte // the answer's body, when set, instead of file's
	// chunked sends body without its length, a piece at a time.
	chunked bool
	got     cbor.Map
	n       int
}

// NewBackend starts a stand-in, closed when the test ends.
func NewBackend(t testing.TB) *Backend {
	b := &Backend{t: t}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

// URL is the stand-in's address, the endpoint of the SDK's client.
func (b *Backend) URL() string { return b.srv.URL }

// Set answers with the recorded answer name, after delay.
func (b *Backend) Set(name string, delay time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.file, b.delay, b.body, b.chunked = name, delay, nil, false
}

// SetBody answers 200 with body, CBOR.
func (b *Backend) SetBody(body []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.file, b.delay, b.body, b.chunked = "", 0, body, false
}

// SetChunkedBody answers 200 with body, CBOR, without its length: in
// chunks of ChunkBytes, each flushed as it is written, as a proxy that
// streams the answer sends it.
func (b *Backend) SetChunkedBody(body []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.file, b.delay, b.body, b.chunked = "", 0, body, true
}

// ChunkBytes is the size of the chunks of SetChunkedBody.
const ChunkBytes = 1 << 10

// Sent is the last request's body, decoded, and how many requests were
// made.
func (b *Backend) Sent() (cbor.Map, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got, b.n
}

func (b *Backend) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	t, file, delay, fixed, chunked := b.t, b.file, b.delay, b.body, b.chunked
	b.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/service/GraniteServiceVersion20100801/operation/GetMetricData" {
		t.Errorf("request %s %s", r.Method, r.URL.Path)
	}
	if r.Header.Get("Smithy-Protocol") != "rpc-v2-cbor" || r.Header.Get("Content-Type") != "application/cbor" {
		t.Errorf("headers: %v", r.Header)
	}
	data, _ := io.ReadAll(r.Body)
	if err := checkSignature(r, data); err != nil {
		t.Error(err)
	}
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
	w.Header().Set("X-Amzn-Requestid", RequestID)
	if fixed != nil {
		w.Header().Set("Content-Type", "application/cbor")
		w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
		if chunked {
			writeChunked(w, fixed)
			return
		}
		// As CloudWatch answers: with its length.
		w.Header().Set("Content-Length", strconv.Itoa(len(fixed)))
		_, _ = w.Write(fixed)
		return
	}
	a, body, err := load(file)
	if err != nil {
		t.Error(err)
	}
	w.Header().Set("Content-Type", "application/cbor")
	if a.ContentType != "" {
		w.Header().Set("Content-Type", a.ContentType)
	} else {
		w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	}
	for k, v := range a.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.Status)
	_, _ = w.Write(body)
}

// checkSignature checks r's SigV4 signature as CloudWatch would: the AWS
// SDK's signer, given the headers r says it signed, its time, the fake
// credentials (and r's session token) and the body, must sign it the
// same.
func checkSignature(r *http.Request, body []byte) error {
	auth := r.Header.Get("Authorization")
	const scheme = "AWS4-HMAC-SHA256 Credential=" + AccessKey + "/"
	_, signedHeaders, ok := strings.Cut(auth, ", SignedHeaders=")
	signedHeaders, _, ok2 := strings.Cut(signedHeaders, ",")
	if !strings.HasPrefix(auth, scheme) || !strings.Contains(auth, "/"+Region+"/monitoring/aws4_request, ") || !ok || !ok2 {
		return fmt.Errorf("the Authorization header is not a SigV4 one of the test credentials and region: %q", auth)
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %v", err)
	}
	resign := &http.Request{Method: r.Method, URL: &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath},
		Host: r.Host, Header: http.Header{}, ContentLength: int64(len(body))}
	for _, name := range strings.Split(signedHeaders, ";") {
		if name != "host" && name != "content-length" && name != "x-amz-date" && name != "x-amz-security-token" {
			resign.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: AccessKey, SecretAccessKey: SecretKey, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, resign, hex.EncodeToString(sum[:]), "monitoring", Region, at); err != nil {
		return err
	}
	if want := resign.Header.Get("Authorization"); auth != want {
		return fmt.Errorf("the signature is not the AWS SDK's:\n got %s\nwant %s", auth, want)
	}
	return nil
}

// writeChunked writes body in chunks of ChunkBytes, flushing each, until
// it is written or the client has gone.
func writeChunked(w http.ResponseWriter, body []byte) {
	f, _ := w.(http.Flusher)
	for len(body) > 0 {
		n := min(ChunkBytes, len(body))
		if _, err := w.Write(body[:n]); err != nil {
			return
		}
		if f != nil {
			f.Flush()
		}
		body = body[n:]
	}
}

// Config points the AWS SDK at endpoint, with the fake credentials, and
// away from every file and the instance's role.
func Config(endpoint string) []func(*config.LoadOptions) error {
	return []func(*config.LoadOptions) error{
		config.WithRegion(Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, "")),
		config.WithBaseEndpoint(endpoint),
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
	}
}

// Env is the environment that gives the AWS SDK's default chain the fake
// credentials, the region and endpoint, and no file or instance role:
// files names files that do not exist.
func Env(endpoint, files string) map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID": AccessKey, "AWS_SECRET_ACCESS_KEY": SecretKey, "AWS_SESSION_TOKEN": "",
		"AWS_REGION": Region, "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "", "AWS_ENDPOINT_URL": endpoint,
		"AWS_CONFIG_FILE": path.Join(files, "config"), "AWS_SHARED_CREDENTIALS_FILE": path.Join(files, "credentials"),
		"AWS_EC2_METADATA_DISABLED": "true",
	}
}

// Timestamp reads a CBOR timestamp of a request.
func Timestamp(v cbor.Value) (time.Time, error) {
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
