package server

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"testing/iotest"
)

func TestNegotiate(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   responseMode
	}{
		{"", modeJSON},
		{"application/json", modeJSON},
		{"*/*", modeJSON},
		{"text/html", modeJSON},
		{"application/x-ndjson", modeNDJSON},
		{"text/event-stream", modeSSE},
		{"text/event-stream; charset=utf-8", modeSSE},
		{"application/json, application/x-ndjson", modeNDJSON},
		{"application/x-ndjson;q=0, text/event-stream", modeSSE},
		{"application/x-ndjson;q=0", modeJSON},
		{"garbage;;;, text/event-stream", modeSSE},
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		if got := negotiate(r); got != tc.want {
			t.Errorf("Accept %q: mode %d, want %d", tc.accept, got, tc.want)
		}
	}
}

// TestReadAtMost holds readAtMost to io.ReadAll(io.LimitReader(r, limit)):
// the same bytes, or an error when it fails, whether the request declared
// its length or not, and however the reader hands out its bytes.
func TestReadAtMost(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 4000, 10000, maxPresized, maxPresized + 1, 3 * maxPresized} {
		data := bytes.Repeat([]byte("canaryd "), n/8+1)[:n]
		for _, limit := range []int64{1, 512, 4001, 10001, 4 * maxPresized} {
			// A body declares its true length, or none; one declared
			// longer than the limit is refused before it is read.
			declares := []int64{-1}
			if int64(n) < limit {
				declares = append(declares, int64(n))
			}
			for _, declared := range declares {
				for name, reader := range map[string]func() io.Reader{
					"whole":    func() io.Reader { return bytes.NewReader(data) },
					"bytewise": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) },
					"failing":  func() io.Reader { return iotest.TimeoutReader(bytes.NewReader(data)) },
				} {
					want, wantErr := io.ReadAll(io.LimitReader(reader(), limit))
					got, err := readAtMost(reader(), limit, declared)
					// After an error the bytes read are not used.
					if (wantErr == nil && !bytes.Equal(got, want)) || (err == nil) != (wantErr == nil) {
						t.Errorf("%d bytes, limit %d, declared %d, %s: %d bytes, %v; want %d bytes, %v",
							n, limit, declared, name, len(got), err, len(want), wantErr)
					}
				}
			}
		}
	}
}

// TestReadAtMostBelievesLittle checks that a declared length past
// maxPresized makes no buffer larger than it before the bytes arrive.
func TestReadAtMostBelievesLittle(t *testing.T) {
	got, err := readAtMost(bytes.NewReader([]byte("{}")), 100<<20, 100<<20-1)
	if err != nil || string(got) != "{}" || cap(got) > maxPresized {
		t.Errorf("a 2-byte body declared as 100 MiB: %q, %v, a buffer of %d bytes; want {} in at most %d", got, err, cap(got), maxPresized)
	}
}
