package cloudwatch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/schemas"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go"
	smithyauth "github.com/aws/smithy-go/auth"
	"github.com/aws/smithy-go/encoding/httpbinding"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/aws/smithy-go/transport/http/protocol/rpcv2"

	"github.com/canaryd/canaryd/internal/outbound"
)

// operationPath is GetMetricData's path in the AWS SDK's protocol for
// CloudWatch, Smithy RPC v2 CBOR.
const operationPath = "/service/GraniteServiceVersion20100801/operation/GetMetricData"

// getMetricData is GetMetricData as canaryd sends it, the way the AWS
// SDK's cloudwatch.Client sends it: a POST of the input, CBOR as the
// SDK's serializer writes it, to the endpoint the SDK resolves, with the
// protocol's headers, signed with SigV4 by the credentials of the SDK's
// chain (cached by it); the answer is decoded by the SDK's own protocol
// (rpcv2.Protocol.DeserializeResponse), errors included, and a failure is
// the error the client returns, word for word (TestAsTheSDK). What the
// client does besides at every call, and canaryd does not need, is left
// out: its middleware stack, built again at each call, its retries
// (canaryd's never retry), its invocation ids, user agent and metrics.
type getMetricData struct {
	url    *url.URL // the operation's, shared by requests, which do not change it
	host   string   // the Host header: the URL's host without a default port
	uri    string   // the path as SigV4 signs it
	header http.Header
	// signer and tokenSigner sign requests whose credentials have no
	// session token, and those whose have one (another header).
	signer, tokenSigner *signer
	creds               aws.CredentialsProvider // nil: requests are not signed
	proto               *rpcv2.Protocol
	op                  *smithy.OperationSchema
	send                outbound.Doer
}

// protocolHeaders are the headers of every request in the SDK's
// protocol: the SDK sends them, and signs them.
var protocolHeaders = map[string]string{
	"Smithy-Protocol":   "rpc-v2-cbor",
	"Accept":            "application/cbor",
	"Content-Type":      "application/cbor",
	"X-Amzn-Query-Mode": "true", // CloudWatch answers errors as its query protocol names them
}

// newGetMetricData resolves GetMetricData's endpoint and signing as the
// client c would, once: region, AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_CLOUDWATCH (c's BaseEndpoint), FIPS and dual-stack.
func newGetMetricData(c *cloudwatch.Client, creds aws.CredentialsProvider, transport http.RoundTripper) (*getMetricData, error) {
	o := c.Options()
	if o.Region != "" && !validRegion(o.Region) {
		return nil, fmt.Errorf("invalid AWS region %q", clip(o.Region))
	}
	params := cloudwatch.EndpointParameters{
		UseDualStack: aws.Bool(o.EndpointOptions.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled),
		UseFIPS:      aws.Bool(o.EndpointOptions.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled),
		Endpoint:     o.BaseEndpoint,
	}
	if o.Region != "" {
		params.Region = aws.String(o.Region)
	}
	ep, err := o.EndpointResolverV2.ResolveEndpoint(context.Background(), params)
	if err != nil {
		return nil, fmt.Errorf("CloudWatch's endpoint does not resolve: %v", err)
	}
	u := ep.URI
	u.Path = smithyhttp.JoinPath(u.Path, operationPath)
	if u.RawPath != "" {
		u.RawPath = smithyhttp.JoinPath(u.RawPath, operationPath)
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	g := &getMetricData{
		url: &u, host: signedHost(&u), uri: httpbinding.EscapePath(u.EscapedPath(), false),
		header: http.Header{}, creds: creds, send: outbound.Doer{Transport: transport},
		proto: rpcv2.NewCBOR(schemas.GraniteServiceVersion20100801),
		op:    smithy.NewOperationSchema(schemas.GetMetricData, schemas.GetMetricDataInput, schemas.GetMetricDataOutput),
	}
	if err := smithyhttp.ValidateEndpointHost(g.host); err != nil {
		return nil, fmt.Errorf("CloudWatch's endpoint: %v", err)
	}
	signed := map[string]string{}
	for k, v := range protocolHeaders {
		signed[k] = v
	}
	for k := range ep.Headers {
		signed[http.CanonicalHeaderKey(k)] = ep.Headers.Get(k)
	}
	for k, v := range signed {
		g.header[k] = []string{v}
	}
	// Asked for here, the transport adds no header map of its own; not
	// signed, as the SDK's transport adds it after the signature.
	g.header["Accept-Encoding"] = []string{outbound.AcceptGzip}
	service, region := signing(ep.Properties, o.Region)
	g.signer = newSigner(service, region, g.host, signed, false)
	g.tokenSigner = newSigner(service, region, g.host, signed, true)
	return g, nil
}

// validRegion is the SDK's rule for a region: a host name's labels.
func validRegion(r string) bool {
	for _, label := range strings.Split(r, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// signing is the SigV4 service and region of the endpoint's properties,
// CloudWatch's ("monitoring") and the configuration's region unless it
// names others.
func signing(props smithy.Properties, region string) (string, string) {
	service := "monitoring"
	opts, _ := smithyauth.GetAuthOptions(&props)
	for _, o := range opts {
		if o.SchemeID != smithyauth.SchemeIDSigV4 {
			continue
		}
		if n, ok := smithyhttp.GetSigV4SigningName(&o.SignerProperties); ok && n != "" {
			service = n
		}
		if r, ok := smithyhttp.GetSigV4SigningRegion(&o.SignerProperties); ok && r != "" {
			region = r
		}
	}
	return service, region
}

// signedHost is the Host header of requests to u, as the SDK's signer
// sets it: without the scheme's default port.
func signedHost(u *url.URL) string {
	host, port := u.Host, u.Port()
	if port != "" && (strings.EqualFold(u.Scheme, "http") && port == "80" || strings.EqualFold(u.Scheme, "https") && port == "443") {
		return strings.TrimSuffix(host, ":"+port)
	}
	return host
}

// encodeQueries is the CBOR of an input of queries alone, as the SDK's
// serializer writes it: an indefinite map holding MetricDataQueries. A
// request's body is its entries between EndTime's and StartTime's
// (appendBody), where the SDK writes them.
func (g *getMetricData) encodeQueries(queries []types.MetricDataQuery) ([]byte, error) {
	req := smithyhttp.NewStackRequest().(*smithyhttp.Request)
	ctx := middleware.WithOperationName(context.Background(), "GetMetricData")
	if err := g.proto.SerializeRequest(ctx, g.op, &cloudwatch.GetMetricDataInput{MetricDataQueries: queries}, req); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(req.GetStream())
	if err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != 0xbf || body[len(body)-1] != 0xff {
		return nil, errors.New("the queries do not encode as an indefinite map")
	}
	return body[1 : len(body)-1], nil
}

// appendBody appends the CBOR of GetMetricData's input, the window from
// start to end and the queries encoded (encodeQueries), to b, as the
// SDK's serializer writes it: an indefinite map of EndTime,
// MetricDataQueries and StartTime, in that order, the times as epoch
// seconds with milliseconds, doubles under tag 1.
func appendBody(b []byte, queries []byte, start, end time.Time) []byte {
	b = append(b, 0xbf)
	b = appendTime(b, "EndTime", end)
	b = append(b, queries...)
	b = appendTime(b, "StartTime", start)
	return append(b, 0xff)
}

func appendTime(b []byte, key string, t time.Time) []byte {
	b = append(b, 0x60|byte(len(key))) // a text string shorter than 24
	b = append(b, key...)
	b = append(b, 0xc1, 0xfb) // tag 1, a double
	return binary.BigEndian.AppendUint64(b, math.Float64bits(float64(t.UnixMilli())/1e3))
}

// scratch is what a measurement writes and reads into, kept for the next
// (Provider.getScratch).
type scratch struct {
	sign   signScratch
	body   []byte
	reader bytes.Reader
	rc     io.ReadCloser // io.NopCloser(&reader)
	// getBody is the request's GetBody, made once: the transport asks
	// for the body again to send the request on another connection when
	// the one it took had been closed by the server before a byte was
	// written, and rewound says that it did.
	getBody           func() (io.ReadCloser, error)
	rewound           bool
	answered          bool        // a 2xx answer read whole: the server had read the request
	header            http.Header // getMetricData's, and the signature's
	auth, date, token [1]string
	req               http.Request
	answer            limitedBody
	read              bytes.Buffer // the answer
	answerReader      bytes.Reader // over read, for the SDK's protocol
	resp              smithyhttp.Response
	out               cloudwatch.GetMetricDataOutput
}

// maxPooledRequest is the longest body kept for the next measurement. The
// transport reads a body this short into its write buffer (4 KiB), with
// the headers, before it sends a byte of either: the server cannot
// answer, and the measurement end, while the body or the headers are
// still being read. A scratch with a longer body is left to the garbage
// collector.
const maxPooledRequest = 2 << 10

func newScratch(g *getMetricData) *scratch {
	sc := &scratch{header: make(http.Header, len(g.header)+3)}
	for k, v := range g.header {
		sc.header[k] = v
	}
	sc.rc = io.NopCloser(&sc.reader)
	sc.getBody = func() (io.ReadCloser, error) {
		sc.rewound = true
		return io.NopCloser(bytes.NewReader(sc.body)), nil
	}
	return sc
}

// request is the signed POST of sc.body.
func (g *getMetricData) request(ctx context.Context, sc *scratch, now time.Time) (*http.Request, error) {
	// The client's attempt gives up first on a context done.
	if err := ctx.Err(); err != nil {
		return nil, g.operationError(err)
	}
	if g.creds != nil {
		c, err := g.creds.Retrieve(ctx)
		if err != nil {
			return nil, g.operationError(fmt.Errorf("get identity: get credentials: %w", err))
		}
		s := g.signer
		if c.SessionToken != "" {
			s = g.tokenSigner
			sc.token[0] = c.SessionToken
			sc.header["X-Amz-Security-Token"] = sc.token[:]
		} else {
			delete(sc.header, "X-Amz-Security-Token")
		}
		sc.auth[0], sc.date[0] = s.sign(&sc.sign, &c, g.uri, sc.body, now)
		sc.header["Authorization"], sc.header["X-Amz-Date"] = sc.auth[:], sc.date[:]
	}
	sc.reader.Reset(sc.body)
	sc.rewound, sc.answered = false, false
	sc.req = http.Request{
		Method: http.MethodPost, URL: g.url, Host: g.host, Header: sc.header,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: sc.rc, GetBody: sc.getBody, ContentLength: int64(len(sc.body)),
	}
	return sc.req.WithContext(ctx), nil
}

// do sends the request and decodes its answer into out, reading at most
// maxBytes of it; an error is the SDK client's. An answer decodeAnswer
// does not take, an error status or one not read whole is given to the
// SDK's protocol, which decodes it, or makes its error, as its client
// does, from the same bytes (and the same error after them).
func (g *getMetricData) do(ctx context.Context, sc *scratch, req *http.Request, maxBytes int64, known []*string, out *cloudwatch.GetMetricDataOutput) error {
	resp, err := g.send.Do(req)
	if err != nil {
		err = &smithyhttp.RequestSendError{Err: err}
		if ctx.Err() != nil {
			err = &smithy.CanceledError{Err: ctx.Err()}
		}
		return g.responseError(&http.Response{Header: http.Header{}, Body: http.NoBody}, err)
	}
	outbound.Inflate(resp)
	sc.answer = limitedBody{rc: resp.Body, left: maxBytes, max: maxBytes, declared: resp.ContentLength}
	sc.read.Reset()
	_, readErr := sc.read.ReadFrom(&sc.answer)
	if readErr != nil {
		outbound.DrainAndClose(resp.Body, 4<<10)
	} else {
		_ = resp.Body.Close()
	}
	sc.answer = limitedBody{}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	sc.answered = ok && readErr == nil
	if sc.answered && decodeAnswer(sc.read.Bytes(), known, out) {
		return nil
	}
	sc.answerReader.Reset(sc.read.Bytes())
	var body io.Reader = &sc.answerReader
	if readErr != nil {
		body = io.MultiReader(body, failedRead{readErr})
	}
	resp.Body = io.NopCloser(body)
	sc.resp.Response = resp
	err = g.proto.DeserializeResponse(ctx, g.op, cloudwatch.TypeRegistry, &sc.resp, out)
	sc.resp.Response = nil
	sc.answerReader.Reset(nil)
	// The error keeps the answer's status and headers, not the scratch.
	resp.Body = http.NoBody
	if err != nil {
		return g.responseError(resp, err)
	}
	return nil
}

// failedRead fails every read with the error reading an answer ended
// with.
type failedRead struct{ err error }

func (f failedRead) Read([]byte) (int, error) { return 0, f.err }

// responseError is err as the SDK's client returns it for the answer
// resp: with the status and the request's id (*awshttp.ResponseError), in
// an *smithy.OperationError.
func (g *getMetricData) responseError(resp *http.Response, err error) error {
	id := resp.Header.Get("X-Amzn-Requestid")
	if id == "" {
		id = resp.Header.Get("X-Amz-Requestid")
	}
	return g.operationError(&awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp}, Err: err},
		RequestID:     id,
	})
}

func (*getMetricData) operationError(err error) error {
	return &smithy.OperationError{ServiceID: cloudwatch.ServiceID, OperationName: "GetMetricData", Err: err}
}
