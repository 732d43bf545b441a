package prometheus

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// send sends a query's request as e.client.Do does, and answers as it
// does, without what Do spends on every request for the redirects it
// might follow (a copy of the request's headers, of its URL, and their
// closures: 6 allocations and about 600 bytes a query). The request goes
// straight to the client's round trippers; an answer the client would
// follow (a redirect, when follow_redirects is set) is handed to the
// client as the answer to its first request, so that it follows it, or
// refuses to, as ever, without the query being sent again. Errors are
// the client's: a *url.Error naming the method and the URL.
func (e *endpoint) send(req *http.Request) (*http.Response, error) {
	resp, err := e.client.Transport.RoundTrip(req)
	if err != nil {
		if tlsErr, ok := err.(tls.RecordHeaderError); ok && string(tlsErr.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(), Err: err}
	}
	if resp == nil {
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(),
			Err: fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", e.client.Transport)}
	}
	if !e.follows || !redirected(resp.StatusCode) {
		return resp, nil
	}
	client := *e.client
	client.Transport = &answered{resp: resp, next: e.client.Transport}
	return client.Do(req)
}

// redirected reports whether http.Client may follow an answer of this
// status (it decides, by the Location, the method and CheckRedirect).
func redirected(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// urlErrorOp is http.Client's Op of an error: "Post" for a POST.
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	for i := 0; i < len(method); i++ {
		if c := method[i]; c < ' ' || c > '~' {
			return method
		}
	}
	return method[:1] + strings.ToLower(method[1:])
}

// answered is a round tripper whose first request has been answered
// already, with resp (it was sent for real); every later one, a
// redirect's, goes to next.
type answered struct {
	resp *http.Response
	next http.RoundTripper
}

func (a *answered) RoundTrip(req *http.Request) (*http.Response, error) {
	if resp := a.resp; resp != nil {
		a.resp = nil
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return resp, nil
	}
	return a.next.RoundTrip(req)
}
