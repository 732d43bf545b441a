package outbound

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// TooLargeError is ReadBody's error for a body longer than its bound.
type TooLargeError struct{ Max int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the response body is longer than the %d bytes canaryd reads of it", e.Max)
}

// ReadBody reads all of body up to max bytes. A longer body is a
// *TooLargeError, found at the first byte over the bound, before more is
// read; a body of max bytes exactly is read whole.
func ReadBody(body io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(body, max+1))
	if err != nil {
		return data, err
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{Max: max}
	}
	return data, nil
}

// DrainAndClose reads and discards at most n more bytes of body, so that
// its connection can be reused when the rest is short, and closes it. A
// server that sends more is not worth reading: its connection is closed.
func DrainAndClose(body io.ReadCloser, n int64) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, n))
	_ = body.Close()
}

// AcceptGzip is the Accept-Encoding of a client that asks for answers
// compressed with gzip, as net/http's transport asks for them when a
// request names no encoding; set on the request's own headers, the
// transport adds no header of its own, which costs it a header map and
// its value at every request. Its answers are read through Inflate.
const AcceptGzip = "gzip"

// Inflate makes resp's body read inflated when the server compressed it
// with gzip (Content-Encoding: gzip), as net/http's transport makes it
// when it asked for gzip itself: the Content-Encoding and Content-Length
// are dropped, and the gzip header is read at the first Read, not here.
// For the answers of requests with Accept-Encoding: AcceptGzip.
func Inflate(resp *http.Response) {
	if resp.ContentLength == 0 || !strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		return
	}
	resp.Body = &gzipBody{rc: resp.Body}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
}

// gzipBody inflates a gzipped body, reading its header at the first Read
// (which the request's context bounds).
type gzipBody struct {
	rc  io.ReadCloser
	zr  *gzip.Reader
	err error
}

func (b *gzipBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.zr == nil {
		zr, err := gzip.NewReader(b.rc)
		if err != nil {
			b.err = err
			return 0, err
		}
		b.zr = zr
	}
	return b.zr.Read(p)
}

func (b *gzipBody) Close() error { return b.rc.Close() }
