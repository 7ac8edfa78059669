package api

import (
	"io"
	"net/http"

	"github.com/labstack/echo/v4"
)

// Body limits of every request.
const (
	// BodyLimit is the largest request body accepted, in bytes (larger →
	// request_too_large).
	BodyLimit = 64 << 10
	// DrainLimit is how much of an oversized body the gateway reads and
	// discards before it answers request_too_large. A client that sends its
	// whole body before it reads the answer (Python's urllib, many HTTP/1.1
	// clients) would otherwise meet a closed connection, see a reset or a
	// broken pipe instead of the 413, and retry a request that can never
	// succeed. A body beyond it still gets the 413 written, but the
	// connection is closed after it.
	DrainLimit = 16 << 20
)

// limitBody refuses a body larger than BodyLimit with request_too_large:
// at once when Content-Length says so, or when a handler reads past the
// limit (a chunked body). Either way up to DrainLimit of the body is read
// and discarded first, so that the client, done sending, reads the answer.
func limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > BodyLimit {
			drain(c.Response(), r.Body)
			return errBodyTooLarge
		}
		r.Body = &limitedBody{body: r.Body, left: BodyLimit, w: c.Response()}
		return next(c)
	}
}

// drain reads and discards up to DrainLimit of body; when more is left, the
// answer asks to close the connection.
func drain(w http.ResponseWriter, body io.Reader) {
	n, _ := io.CopyN(io.Discard, body, DrainLimit+1)
	if n > DrainLimit {
		w.Header().Set("Connection", "close")
	}
}

// limitedBody is a request body that fails with errBodyTooLarge past its
// limit, after draining what follows.
type limitedBody struct {
	body io.ReadCloser
	left int64
	w    http.ResponseWriter
	over bool
}

// Read implements io.Reader.
func (b *limitedBody) Read(p []byte) (int, error) {
	if b.over {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.body.Read(p)
	if int64(n) > b.left {
		b.over = true
		drain(b.w, b.body)
		return 0, errBodyTooLarge
	}
	b.left -= int64(n)
	return n, err
}

// Close implements io.Closer.
func (b *limitedBody) Close() error { return b.body.Close() }
