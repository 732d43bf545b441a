package prometheus

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/canaryd/canaryd/internal/analysis"
)

// decodeFastSeeds are responses as Prometheus, Thanos and Mimir write them,
// and near misses of each.
var decodeFastSeeds = []string{
	`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1763816000.123,"0.995"]}]}}`,
	`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"pod":"b","__name__":"x"},"value":[1692000000,"11"]},{"metric":{"pod":"a"},"value":[1692000000,"10"]}]}}`,
	`{"status":"success","data":{"resultType":"vector","result":[]}}`,
	`{"status":"success","data":{"resultType":"scalar","result":[1692000000,"NaN"]}}`,
	`{"status":"success","data":{"resultType":"scalar","result":[1692000000.5,"+Inf"]}}`,
	`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"s":"1"},"values":[[1,"11"],[2,"12"]]},{"metric":{"s":"2"},"values":[[1,"13"],[2,"14"]]}]}}`,
	`{"status":"success","data":{"resultType":"matrix","result":[]},"warnings":["w1","w2"],"infos":["i"]}`,
	"{\n  \"status\" : \"success\",\n  \"data\" : {\"resultType\" : \"vector\", \"result\" : [ ]}\n}\n",
	`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1e3"]}]}}`,
	`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0x1p-2"]}]}}`,
	`{"status":"success","data":{"resultType":"vector","result":[{"value":[-1.12345,"-0"]}]}}`,
	`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0.99930"]},{"metric":{},"value":[1,"1.0"]},{"metric":{},"value":[1,"0.30000000000000004"]},{"metric":{},"value":[1,"Inf"]},{"metric":{},"value":[1,"0.25"]},{"metric":{},"value":[1,"2.50"]}]}}`,
	`{"status":"success","data":{"resultType":"scalar","result":[1,"0.50"]}}`,
}

func TestDecodeFast(t *testing.T) {
	tests := []struct {
		name, body   string
		wantOK       bool
		wantScalar   bool
		wantValue    float64
		wantValues   []float64
		wantWarnings []string
	}{
		{name: "vector", body: decodeFastSeeds[0], wantOK: true, wantValues: []float64{0.995}},
		{name: "vector with labels", body: decodeFastSeeds[1], wantOK: true, wantValues: []float64{11, 10}},
		{name: "empty vector", body: decodeFastSeeds[2], wantOK: true, wantValues: []float64{}},
		{name: "scalar NaN", body: decodeFastSeeds[3], wantOK: true, wantScalar: true, wantValue: math.NaN()},
		{name: "scalar +Inf", body: decodeFastSeeds[4], wantOK: true, wantScalar: true, wantValue: math.Inf(1)},
		{name: "matrix", body: decodeFastSeeds[5], wantOK: true, wantValues: []float64{11, 12, 13, 14}},
		{name: "warnings", body: decodeFastSeeds[6], wantOK: true, wantValues: []float64{}, wantWarnings: []string{"w1", "w2"}},
		{name: "white space", body: decodeFastSeeds[7], wantOK: true, wantValues: []float64{}},
		{name: "value with an exponent", body: decodeFastSeeds[8], wantOK: true, wantValues: []float64{1000}},

		// Everything else is client_golang's to decide.
		{name: "error status", body: `{"status":"error","errorType":"bad_data","error":"parse error"}`},
		{name: "no data", body: `{"status":"success","data":null}`},
		{name: "null result", body: `{"status":"success","data":{"resultType":"vector","result":null}}`},
		{name: "string result", body: `{"status":"success","data":{"resultType":"string","result":[1,"x"]}}`},
		{name: "result before its type", body: `{"status":"success","data":{"result":[],"resultType":"vector"}}`},
		{name: "key in another case", body: `{"Status":"success","data":{"resultType":"vector","result":[]}}`},
		{name: "duplicate key", body: `{"status":"success","status":"success","data":{"resultType":"vector","result":[]}}`},
		{name: "unknown key", body: `{"status":"success","data":{"resultType":"vector","result":[]},"stats":{}}`},
		{name: "trailing garbage", body: `{"status":"success","data":{"resultType":"vector","result":[]}}x`},
		{name: "truncated", body: `{"status":"success","data":{"resultType":"vector","result":[`},
		{name: "HTML", body: `<html>login</html>`},
		{name: "escaped value", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"\u0031"]}]}}`},
		{name: "escaped label", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"\"q\""},"value":[1,"1"]}]}}`},
		{name: "non-ASCII label", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"é"},"value":[1,"1"]}]}}`},
		{name: "dotted label name", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a.b":"1"},"value":[1,"1"]}]}}`},
		{name: "histogram sample", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1,{"count":"1","sum":"1"}]}]}}`},
		{name: "three-element pair", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1","2"]}]}}`},
		{name: "one-element pair", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}}`},
		{name: "timestamp with an exponent", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1e9,"1"]}]}}`},
		{name: "timestamp with a leading zero", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[01,"1"]}]}}`},
		{name: "timestamp as a string", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":["1","1"]}]}}`},
		{name: "unquoted value", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,1]}]}}`},
		{name: "value that is no number", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}`},
		{name: "null sample", body: `{"status":"success","data":{"resultType":"vector","result":[null]}}`},
		{name: "trailing comma", body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]},]}}`},
	}
	for _, tc := range tests {
		got, ok := decodeFast([]byte(tc.body), math.MaxInt)
		if ok != tc.wantOK {
			t.Errorf("%s: ok = %v, want %v", tc.name, ok, tc.wantOK)
			continue
		}
		if !ok {
			continue
		}
		if got.scalar != tc.wantScalar || !sameFloat(got.value, tc.wantValue) || !sameFloats(got.values, tc.wantValues) {
			t.Errorf("%s: got scalar %v %v values %v, want scalar %v %v values %v", tc.name, got.scalar, got.value, got.values, tc.wantScalar, tc.wantValue, tc.wantValues)
		}
		if len(got.warnings) != len(tc.wantWarnings) || (len(got.warnings) > 0 && !reflect.DeepEqual(got.warnings, tc.wantWarnings)) {
			t.Errorf("%s: warnings %q, want %q", tc.name, got.warnings, tc.wantWarnings)
		}
	}
}

// FuzzDecodeFast checks decodeFast against client_golang: whatever it
// reads, client_golang must read the same way, values, display, warnings
// and infos alike.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range decodeFastSeeds {
		f.Add([]byte(s))
	}
	prom, err := promapi.NewClient(promapi.Config{Address: "http://127.0.0.1:1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := decodeFast(body, math.MaxInt)
		if !ok {
			return
		}
		resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody}
		value, warnings, infos, err := v1.NewAPI(&replay{Client: prom, resp: resp, body: body, max: math.MaxInt}).Query(context.Background(), "q", time.Unix(1, 0))
		if err != nil {
			t.Fatalf("decodeFast read %q, client_golang refused it: %v", body, err)
		}
		wantValue, wantDisplay, err := convert(value)
		if err != nil {
			t.Fatalf("decodeFast read %q, convert refused client_golang's value: %v", body, err)
		}
		var gotValue any = got.values
		if got.scalar {
			gotValue = got.value
		}
		gotDisplay := got.display()
		if !sameValue(gotValue, wantValue) || gotDisplay != wantDisplay {
			t.Fatalf("%q: decodeFast (%#v, %q), client_golang (%#v, %q)", body, gotValue, gotDisplay, wantValue, wantDisplay)
		}
		if g, w := annotations(got.warnings, got.infos), annotations(warnings, infos); !reflect.DeepEqual(g, w) {
			t.Fatalf("%q: decodeFast annotations %v, client_golang %v", body, g, w)
		}
		if got.scalar {
			return
		}
		// The cap: countValues agrees, and one value fewer allowed is
		// too many.
		if n, ok := countValues(body); !ok || n != len(got.values) {
			t.Fatalf("%q: countValues = %d, %v; decodeFast read %d values", body, n, ok, len(got.values))
		}
		if len(got.values) > 0 {
			if a, ok := decodeFast(body, len(got.values)-1); !ok || !a.tooMany || a.values != nil {
				t.Fatalf("%q: decodeFast with a cap of %d = %+v, %v; want tooMany", body, len(got.values)-1, a, ok)
			}
		}
	})
}

// FuzzCountValues checks the cap of the responses decodeFast leaves to
// client_golang: whatever client_golang decodes, countValues counts at
// least the values it yields, so that no spelling of a response (escapes,
// key order, histograms, repeated keys) gets more values past the cap.
func FuzzCountValues(f *testing.F) {
	for _, s := range decodeFastSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"data":{"result":[{"metric":{"a":"\"b"},"values":[[1,"1"],[2,"2"]]}],"resultType":"matrix"},"status":"success"}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"histogram":[1,{"count":"1","sum":"1","buckets":[[0,"0","1","1"]]}]}]}}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[[1,{"count":"1","sum":"1"}]]}]}}`,
		`{"status":"success","\u0064ata":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]},"data":{"resultType":"vector","result":[]}}`,
	} {
		f.Add([]byte(s))
	}
	prom, err := promapi.NewClient(promapi.Config{Address: "http://127.0.0.1:1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n, ok := countValues(body)
		resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody}
		value, _, _, err := v1.NewAPI(&replay{Client: prom, resp: resp, body: body, max: math.MaxInt}).Query(context.Background(), "q", time.Unix(1, 0))
		if err != nil {
			return
		}
		var values int
		switch v := value.(type) {
		case model.Vector:
			values = len(v)
		case model.Matrix:
			for _, s := range v {
				if s != nil {
					values += len(s.Values) + len(s.Histograms)
				}
			}
		default:
			return
		}
		if !ok || n < values {
			t.Fatalf("%q: countValues = %d, %v; client_golang decoded %d values", body, n, ok, values)
		}
	})
}

func TestCountValues(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int
		ok   bool
	}{
		{decodeFastSeeds[0], 1, true},
		{decodeFastSeeds[1], 2, true},
		{decodeFastSeeds[2], 0, true},
		{decodeFastSeeds[3], 0, true}, // a scalar: not a list
		{decodeFastSeeds[5], 4, true},
		{`{"status":"error","errorType":"bad_data","error":"x"}`, 0, true},
		{`{"data":{"result":[{"metric":{"a":"\"]}"},"values":[[1,"1"],[2,"2"],[3,"3"]]}]}}`, 3, true},
		{`{"data":{"result":[{"histograms":[[1,{}],[2,{}]],"values":[[1,"1"]]}]}}`, 3, true},
		{`{"data":{"result":[` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `]}}`, 0, true},
		{`{"DaTa":{"RESULT":[{},{"Values":[[1,"1"],[2,"2"]]}]}}`, 3, true},
		{`{"data":{"result":[{"values":[[1,"1"]`, 1, false},
		{``, 0, false},
		{`[]`, 0, false},
	} {
		n, ok := countValues([]byte(tc.body))
		if n != tc.want || ok != tc.ok {
			t.Errorf("countValues(%.60q) = %d, %v; want %d, %v", tc.body, n, ok, tc.want, tc.ok)
		}
	}
}

// TestDecodeFastCap: a result over the cap is not read past it.
func TestDecodeFastCap(t *testing.T) {
	body := []byte(decodeFastSeeds[5]) // four values
	if a, ok := decodeFast(body, 4); !ok || a.tooMany || len(a.values) != 4 {
		t.Errorf("cap 4: %+v, %v", a, ok)
	}
	if a, ok := decodeFast(body, 3); !ok || !a.tooMany || a.values != nil {
		t.Errorf("cap 3: %+v, %v; want tooMany", a, ok)
	}
	// A scalar is one value, whatever the cap.
	if a, ok := decodeFast([]byte(decodeFastSeeds[3]), 0); !ok || a.tooMany || !a.scalar {
		t.Errorf("scalar: %+v, %v", a, ok)
	}
}

// TestAppendDisplayCap: a value never keeps more than MaxValueBytes, and
// says how many values a cut one had.
func TestAppendDisplayCap(t *testing.T) {
	if got := string(appendDisplay(nil, []float64{0.5, math.NaN(), math.Inf(-1)}, nil)); got != "[0.5,NaN,-Inf]" {
		t.Errorf("short: %q", got)
	}
	for _, n := range []int{400, 409, 410, 1000, 100000} {
		values := make([]float64, n)
		for i := range values {
			values[i] = 0.123456 // 8 bytes, 9 with the comma
		}
		got := string(appendDisplay(nil, values, nil))
		switch {
		case len(got) > analysis.MaxValueBytes:
			t.Errorf("%d values: %d bytes, more than %d", n, len(got), analysis.MaxValueBytes)
		case 9*n+1 <= analysis.MaxValueBytes-displayReserve:
			if strings.Contains(got, "…") {
				t.Errorf("%d values cut: %q", n, got[len(got)-40:])
			}
		default:
			want := fmt.Sprintf(",0.123456,… (%d values)]", n)
			if !strings.HasSuffix(got, want) || !strings.HasPrefix(got, "[0.123456,") {
				t.Errorf("%d values: ends %q; want %q", n, got[max(0, len(got)-40):], want)
			}
		}
	}
	// Long values: the cut is between two of them.
	huge := []float64{1e300, 1e300, 1e300, 1e300, 1e300, 1e300, 1e300, 1e300, 1e300, 1e300, 1e300, 1e300, 1e300, 1e300}
	got := string(appendDisplay(nil, huge, nil))
	if len(got) > analysis.MaxValueBytes || !strings.HasSuffix(got, "0,… (14 values)]") {
		t.Errorf("huge values: %d bytes, ends %q", len(got), got[len(got)-30:])
	}
}

// TestDecodeFastDisplay checks the display of answers whose values are
// written as the display writes them, and of answers whose values are
// not: each is written as client_golang's value is (convert).
func TestDecodeFastDisplay(t *testing.T) {
	vector := func(values ...string) string {
		var b strings.Builder
		b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
		for i, v := range values {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"metric":{},"value":[1,%q]}`, v)
		}
		b.WriteString(`]}}`)
		return b.String()
	}
	scalar := func(v string) string {
		return `{"status":"success","data":{"resultType":"scalar","result":[1,"` + v + `"]}}`
	}
	for _, tc := range []struct{ body, want string }{
		{vector("0.9993"), "[0.9993]"},
		{vector("0.99930"), "[0.9993]"},
		{vector("1.0", "01", "+1", "1e0", "1"), "[1,1,1,1,1]"},
		{vector("NaN", "nan", "+Inf", "Inf", "inf", "-Inf", "-infinity"), "[NaN,NaN,+Inf,+Inf,+Inf,-Inf,-Inf]"},
		{vector("-0", "0", "-0.0", "0.000001", "1e-6"), "[-0,0,-0,0.000001,0.000001]"},
		{vector("0.30000000000000004", "0.1", "123456789012345", "1234567890123456789"), "[0.30000000000000004,0.1,123456789012345,1234567890123456800]"},
		{vector("5", "4", "3", "2", "1", "0.50"), "[5,4,3,2,1,0.5]"},
		{vector(), "[]"},
		{scalar("0.5"), "0.5"},
		{scalar("5e-1"), "0.5"},
		{scalar("+Inf"), "+Inf"},
		{scalar("-0"), "-0"},
	} {
		a, ok := decodeFast([]byte(tc.body), math.MaxInt)
		if !ok {
			t.Errorf("%s: not read", tc.body)
			continue
		}
		var value model.Value = &model.Scalar{Value: model.SampleValue(a.value)}
		if !a.scalar {
			vector := model.Vector{}
			for _, v := range a.values {
				vector = append(vector, &model.Sample{Value: model.SampleValue(v)})
			}
			value = vector
		}
		if _, want, _ := convert(value); a.display() != want || want != tc.want {
			t.Errorf("%s: display %q, convert's %q, want %q", tc.body, a.display(), want, tc.want)
		}
	}
}

// shortestTextSeeds are texts of values, as servers may write them.
var shortestTextSeeds = []string{
	"0.9993", "0", "-0", "1", "-1", "NaN", "+Inf", "-Inf", "0.1", "0.5", "100", "1e3", "1E3", "0x1p-2",
	"0.30000000000000004", "123456789012345", "1234567890123456", "999999999999999", "0.999999999999999",
	"0.000000000000000000001", "100000000000000000000", "1000000000000000000000000", "9007199254740993",
	"1.0", "0.10", "01", "00", "-00", "+1", ".5", "5.", "-.5", "1..2", "1.2.3", "nan", "inf", "Inf", "+inf",
	"infinity", "1_000", "", "-", ".", " 1", "1 ", "0.0000000000000000000001", "12345678901234.5",
	"1234567890.12345", "0.123456789012345", "0.1234567890123456", "4.9e-324", "1.7976931348623157e308",
}

// TestShortestText checks shortestText on values as they are usually
// written, which it must take, and on texts it must not.
func TestShortestText(t *testing.T) {
	for _, text := range []string{"0.9993", "0", "-0", "1", "0.000001", "123456789012345", "0.999999999999999", "NaN", "+Inf", "-Inf", "1599076435.123"} {
		if !shortestText([]byte(text)) {
			t.Errorf("%q: not taken as written", text)
		}
	}
	for _, text := range []string{"1.0", "01", "+1", ".5", "5.", "1e3", "nan", "Inf", "1234567890123456", "0.30000000000000004", "", "-", "1_000"} {
		if shortestText([]byte(text)) {
			t.Errorf("%q: taken as written", text)
		}
	}
	for _, text := range shortestTextSeeds {
		checkShortestText(t, text)
	}
	// Values of every magnitude a text of 24 bytes holds, written with
	// every precision up to float64's and beyond it.
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		v := r.Float64() * math.Pow(10, float64(r.IntN(44)-22))
		if r.IntN(2) == 0 {
			v = -v
		}
		for prec := -1; prec <= 20; prec++ {
			checkShortestText(t, strconv.FormatFloat(v, 'f', prec, 64))
		}
	}
}

// FuzzShortestText holds shortestText to strconv: a text it takes as
// written is what strconv.FormatFloat writes of the value
// strconv.ParseFloat reads in it.
func FuzzShortestText(f *testing.F) {
	for _, text := range shortestTextSeeds {
		f.Add(text)
	}
	f.Fuzz(checkShortestText)
}

func checkShortestText(t *testing.T, text string) {
	if !shortestText([]byte(text)) {
		return
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		t.Fatalf("%q taken as written, but strconv.ParseFloat refuses it: %v", text, err)
	}
	if w := strconv.FormatFloat(v, 'f', -1, 64); w != text {
		t.Fatalf("%q taken as written, but strconv.FormatFloat writes %q", text, w)
	}
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func sameFloats(a, b []float64) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for i := range a {
		if !sameFloat(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameValue(got, want any) bool {
	switch w := want.(type) {
	case float64:
		g, ok := got.(float64)
		return ok && sameFloat(g, w)
	case []float64:
		g, ok := got.([]float64)
		return ok && sameFloats(g, w)
	}
	return false
}

// BenchmarkDecodeFast reads a canary query's answer, one value, and
// writes its display.
func BenchmarkDecodeFast(b *testing.B) {
	body := []byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1599076435.123,"0.9993"]}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		a, ok := decodeFast(body, math.MaxInt)
		if !ok || a.display() != "[0.9993]" {
			b.Fatal(a, ok)
		}
	}
}
