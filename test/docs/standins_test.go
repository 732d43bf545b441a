package docs

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// influxdbAddress and nerdGraphURL are the InfluxDB and the NerdGraph the
// examples name (docs/providers/influxdb.md, newrelic.md); the test's
// stand-ins take their place.
const (
	influxdbAddress = "http://influxdb.example.com:8086"
	nerdGraphURL    = "https://api.newrelic.com/graphql"
)

// startInfluxDB starts a stand-in for InfluxDB's query API: it answers a
// Flux query that sends a token and an organization with one record, a
// success rate of 0.995, and anything else with InfluxDB's 401.
func startInfluxDB(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v2/query" || r.URL.Query().Get("org") == "" || !strings.HasPrefix(r.Header.Get("Authorization"), "Token ") {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(rw, `{"code":"unauthorized","message":"unauthorized access"}`)
			return
		}
		rw.Header().Set("Content-Type", "text/csv; charset=utf-8")
		_, _ = io.WriteString(rw, "#datatype,string,long,dateTime:RFC3339,double,string\r\n#group,false,false,false,false,true\r\n#default,_result,,,,\r\n"+
			",result,table,_time,_value,_field\r\n,,0,2020-09-02T19:53:55Z,0.995,success_rate\r\n\r\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// startNerdGraph starts a stand-in for New Relic's NerdGraph: it answers a
// NRQL query that sends a key with one row, a success rate of 99.5%, and
// anything else with NerdGraph's 401.
func startNerdGraph(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Api-Key") == "" {
			rw.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(rw, `{"errors":[{"extensions":{"error_code":"BAD_API_KEY"},"message":"Invalid API key"}]}`)
			return
		}
		_, _ = io.WriteString(rw, `{"data":{"actor":{"account":{"nrql":{"results":[{"successRate":99.5}]}}}}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/graphql"
}
