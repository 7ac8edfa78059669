package benche2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/pgstore"
)

// floorKey is the Redis hash the EVALSHA floor reads; it holds fields of the
// sizes an operation's record has (filled by NewFloors).
const floorKey = "bench:{floor}"

// floorScript is the EVALSHA floor's one round trip: the hash at KEYS[1],
// the read a replay's acquire script makes. Reply: the flat field/value list.
var floorScript = redis.NewScript(`return redis.call('HGETALL', KEYS[1])`)

// Floors is the Echo server of the HTTP floors, inside the benchmark
// process: each route answers a fixed body (a real oncegate answer, so the
// same size and bytes) with no work (/json/...), after one EVALSHA on the
// stack's Redis (/evalsha/...), or after the amnesia guard's PostgreSQL
// query on the stack's truth (/pg/..., pgstore.Store.FindRecent with a
// param hash no record has, as a preview of new params). All read the
// request body to its end, as any handler must.
type Floors struct {
	// URL is the server's base URL.
	URL   string
	srv   *http.Server
	rdb   redis.UniversalClient
	truth *pgstore.Store
}

// floorSubject and floorHash are what the PostgreSQL floor looks up.
const floorSubject = "alice"

var floorHash = fmt.Sprintf("%064x", 1)

// NewFloors starts the floor server on a free loopback port. bodies maps a
// route name to the body it answers: POST or GET /json/<name>,
// /evalsha/<name> and /pg/<name>. rdb is a client of the stack's Redis (a
// single server or a Redis Cluster; the floors close it), truthURL its
// truth database. With cert, the floors serve HTTPS with it, as the
// production-like profile's gateways do; without, plain HTTP.
func NewFloors(rdb redis.UniversalClient, truthURL string, bodies map[string][]byte, cert *tls.Certificate) (*Floors, error) {
	ctx := context.Background()
	truth, err := pgstore.Open(ctx, truthURL)
	if err != nil {
		rdb.Close()
		return nil, fmt.Errorf("floors: %w", err)
	}
	if err := rdb.HSet(ctx, floorKey, "state", "DONE", "param_hash", fmt.Sprintf("%064x", 0),
		"owner", "bench-floor-owner-0000000000000000", "result", `{"id":"tr_floor","status":"succeeded","amount":"12.5","currency":"USD"}`).Err(); err != nil {
		rdb.Close()
		truth.Close()
		return nil, fmt.Errorf("fill floor key: %w", err)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	for name, body := range bodies {
		plain := func(c echo.Context) error {
			if _, err := io.Copy(io.Discard, c.Request().Body); err != nil {
				return err
			}
			return c.JSONBlob(http.StatusOK, body)
		}
		withEvalsha := func(c echo.Context) error {
			if _, err := io.Copy(io.Discard, c.Request().Body); err != nil {
				return err
			}
			if err := floorScript.Run(c.Request().Context(), rdb, []string{floorKey}).Err(); err != nil {
				return err
			}
			return c.JSONBlob(http.StatusOK, body)
		}
		withQuery := func(c echo.Context) error {
			if _, err := io.Copy(io.Discard, c.Request().Body); err != nil {
				return err
			}
			_, err := truth.FindRecent(c.Request().Context(), idemstore.FindRecentParams{
				Subject: floorSubject, Scope: scopeLegacy, ParamHash: floorHash, Since: time.Now().Add(-24 * time.Hour)})
			if err != nil && !errors.Is(err, idemstore.ErrNotFound) {
				return err
			}
			return c.JSONBlob(http.StatusOK, body)
		}
		e.Match([]string{http.MethodGet, http.MethodPost}, "/json/"+name, plain)
		e.Match([]string{http.MethodGet, http.MethodPost}, "/pg/"+name, withQuery)
		e.Match([]string{http.MethodGet, http.MethodPost}, "/evalsha/"+name, withEvalsha)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		rdb.Close()
		truth.Close()
		return nil, fmt.Errorf("listen floors: %w", err)
	}
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 2 * time.Minute}
	scheme := "http"
	if cert != nil {
		scheme = "https"
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}}
		l = tls.NewListener(l, srv.TLSConfig)
	}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "floors: serve: %v\n", err)
		}
	}()
	return &Floors{URL: scheme + "://" + l.Addr().String(), srv: srv, rdb: rdb, truth: truth}, nil
}

// Close stops the server.
func (f *Floors) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f.srv.Shutdown(ctx)
	_ = f.rdb.Close()
	f.truth.Close()
}
