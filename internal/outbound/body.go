package outbound

import (
	"fmt"
	"io"
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
