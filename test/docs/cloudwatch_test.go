package docs

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/smithy-go/encoding/cbor"
)

// localStack is the CloudWatch endpoint the examples name
// (docs/providers/cloudwatch.md, AWS_ENDPOINT_URL): LocalStack's; the
// test's stand-in takes its place.
const localStack = "http://localhost:4566"

// startCloudWatch starts a stand-in for CloudWatch's GetMetricData, in
// the AWS SDK's protocol (Smithy RPC v2 CBOR): it answers a signed
// request with one result of three values, newest first, and anything
// else with CloudWatch's 403.
func startCloudWatch(t *testing.T) string {
	answer := cbor.Encode(cbor.Map{
		"MetricDataResults": cbor.List{cbor.Map{
			"Id": cbor.String("rate"), "Label": cbor.String("rate"), "StatusCode": cbor.String("Complete"),
			"Timestamps": cbor.List{
				&cbor.Tag{ID: 1, Value: cbor.Float64(1599076380)},
				&cbor.Tag{ID: 1, Value: cbor.Float64(1599076320)},
				&cbor.Tag{ID: 1, Value: cbor.Float64(1599076260)},
			},
			"Values": cbor.List{cbor.Float64(0.004), cbor.Float64(0.006), cbor.Float64(0.005)},
		}},
		"Messages": cbor.List{},
	})
	denied := cbor.Encode(cbor.Map{"__type": cbor.String("com.amazon.coral.service#AccessDeniedException"), "message": cbor.String("not authorized")})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		rw.Header().Set("Content-Type", "application/cbor")
		rw.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
		if r.URL.Path != "/service/GraniteServiceVersion20100801/operation/GetMetricData" || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=") {
			rw.Header().Set("X-Amzn-Query-Error", "AccessDenied;Sender")
			rw.WriteHeader(http.StatusForbidden)
			_, _ = rw.Write(denied)
			return
		}
		_, _ = rw.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
