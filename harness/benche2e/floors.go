package benche2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/pgstore"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/internal/storeconn"
)

// floorKey is the Redis hash the EVALSHA floor reads; it holds fields of the
// sizes an operation's record has (filled by NewFloors).
const floorKey = "bench:{floor}"

// floorScript is the EVALSHA floor's one round trip: the hash at KEYS[1],
// the read a replay's acquire script makes. Reply: the flat field/value list.
var floorScript = redis.NewScript(`return redis.call('HGETALL', KEYS[1])`)

// Floors is the Echo server of the HTTP floors: in a process of its own
// (RunFloors, startFloorsProcess), or inside the benchmark process when
// Options.FloorsInline asks for it. Each route answers a fixed body (a real oncegate answer, so the
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

// NewFloors starts the floor server on listen (host:port; port 0: a free
// one). bodies maps a
// route name to the body it answers: POST or GET /json/<name>,
// /evalsha/<name> and /pg/<name>. rdb is a client of the stack's Redis (a
// single server or a Redis Cluster; the floors close it), truthURL its
// truth database. With cert, the floors serve HTTPS with it, as the
// production-like profile's gateways do; without, plain HTTP.
func NewFloors(rdb redis.UniversalClient, truthURL string, bodies map[string][]byte, cert *tls.Certificate, listen string) (*Floors, error) {
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
	l, err := net.Listen("tcp", listen)
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

// FloorsFlag is the command-line flag that makes the benchmark binary serve
// the HTTP floors instead of running the benchmark (RunFloors): the floors
// are a process of their own, as the gateway is, so that neither side of a
// comparison shares the load generator's Go runtime (its scheduler, its
// garbage collector, its netpoller) and each side's CPU is read apart.
const FloorsFlag = "-floors"

// FloorsConfig is what the floors' process serves, written by the
// benchmark as JSON to the file named by the process's argument.
type FloorsConfig struct {
	// Listen is the host:port to serve on.
	Listen string
	// Store names the stack's Redis (one server or the cluster) and its
	// truth database.
	Store storeconn.Config
	// Bodies maps a route name to the body it answers (NewFloors).
	Bodies map[string][]byte
	// CertFile and KeyFile, when set, are the certificate to serve HTTPS
	// with; unset, the floors serve plain HTTP.
	CertFile, KeyFile string
}

// RunFloors is the floors' process: it serves the floors of the
// FloorsConfig in the file at configPath until SIGINT or SIGTERM.
func RunFloors(configPath string) error {
	raw, err := os.ReadFile(configPath)
	if err != nil {
		return fmt.Errorf("floors: %w", err)
	}
	var cfg FloorsConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return fmt.Errorf("floors: %s: %w", configPath, err)
	}
	var cert *tls.Certificate
	if cfg.CertFile != "" {
		c, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return fmt.Errorf("floors: certificate: %w", err)
		}
		cert = &c
	}
	rdb, err := redisstore.Connect(cfg.Store.Redis())
	if err != nil {
		return fmt.Errorf("floors: %w", err)
	}
	f, err := NewFloors(rdb, cfg.Store.DatabaseURL, cfg.Bodies, cert, cfg.Listen)
	if err != nil {
		return err
	}
	defer f.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

// startFloorsProcess starts this binary as the floors' process serving cfg
// (its Listen chosen here) and waits until it answers through hc. It
// returns the process and the floors' base URL.
func startFloorsProcess(logDir string, cfg FloorsConfig, hc *http.Client) (*testenv.Process, string, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return nil, "", err
	}
	cfg.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, "", err
	}
	path := filepath.Join(logDir, "floors.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return nil, "", err
	}
	scheme := "http"
	if cfg.CertFile != "" {
		scheme = "https"
	}
	url := scheme + "://" + cfg.Listen
	p, err := startSelf(logDir, "floors", []string{FloorsFlag, path}, nil, func(ctx context.Context) error {
		for name := range cfg.Bodies {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/evalsha/"+name, nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("floors: GET /evalsha/%s: HTTP %d", name, resp.StatusCode)
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return p, url, nil
}
