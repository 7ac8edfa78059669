package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a PostgreSQL cluster started for the tests of one package.
type Postgres struct {
	// Port is the TCP port on 127.0.0.1.
	Port int
	// Dir holds the data directory.
	Dir  string
	proc *Process
}

var sharedPostgres struct {
	once sync.Once
	pg   *Postgres
	err  error
}

// SharedPostgres returns the package's shared cluster, starting it on first use.
func SharedPostgres(t testing.TB) *Postgres {
	t.Helper()
	sharedPostgres.once.Do(func() {
		sharedPostgres.pg, sharedPostgres.err = NewPostgres()
		if sharedPostgres.err == nil {
			registerShared(sharedPostgres.pg.Stop)
		}
	})
	if sharedPostgres.err != nil {
		t.Fatal(sharedPostgres.err)
	}
	return sharedPostgres.pg
}

// NewDatabase creates a fresh, empty database in the shared cluster for t and
// returns its URL. The database is dropped at the end of the test.
func NewDatabase(t testing.TB) string {
	t.Helper()
	pg := SharedPostgres(t)
	url, err := pg.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// PostgresBinDir finds the binaries of the installed PostgreSQL.
func PostgresBinDir() (string, error) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
		return "", errors.New("testenv: PostgreSQL not installed (apt-get install -y postgresql)")
	}
	sort.Slice(matches, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(matches[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(matches[j]))))
		return vi > vj
	})
	return filepath.Dir(matches[0]), nil
}

// postgresCredential returns the credential to run PostgreSQL with: as root
// it must run as the postgres user, which also owns the data directory.
func postgresCredential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("testenv: PostgreSQL refuses root and there is no postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(path, uid, gid)
	}); err != nil {
		return nil, fmt.Errorf("chown %s: %w", dir, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// NewPostgres initializes and starts a cluster on a free port, with its data
// under the system temporary folder (reachable by the postgres user).
func NewPostgres() (*Postgres, error) {
	bin, err := PostgresBinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "oncegate-pg-")
	if err != nil {
		return nil, err
	}
	cred, err := postgresCredential(dir)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	proc, err := StartProcess("postgres", filepath.Join(dir, "postgres.log"), []string{
		filepath.Join(bin, "postgres"), "-D", data, "-p", itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=64MB",
		// Statement counts per database, for tests that count round trips.
		"-c", "shared_preload_libraries=pg_stat_statements",
	}, nil, cred)
	if err != nil {
		return nil, err
	}
	pg := &Postgres{Port: port, Dir: dir, proc: proc}
	if err := pg.waitReady(); err != nil {
		proc.Kill()
		return nil, err
	}
	return pg, nil
}

// waitReady waits until the cluster accepts connections.
func (pg *Postgres) waitReady() error {
	if err := WaitFor(context.Background(), 30*time.Second, func(ctx context.Context) error {
		c, err := pgx.Connect(ctx, pg.URL("postgres"))
		if err != nil {
			return err
		}
		return c.Close(ctx)
	}); err != nil {
		return fmt.Errorf("postgres not ready: %w\n%s", err, pg.proc.Log())
	}
	return nil
}

// Pid returns the process id of the cluster's postmaster, the parent of
// its backends.
func (pg *Postgres) Pid() int { return pg.proc.Pid() }

// URL returns the URL of database name.
func (pg *Postgres) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", pg.Port, name)
}

// CreateDatabase creates a database with a random name and returns its URL.
func (pg *Postgres) CreateDatabase(ctx context.Context) (string, error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "t_" + hex.EncodeToString(b)
	c, err := pgx.Connect(ctx, pg.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("connect postgres: %w", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	return pg.URL(name), nil
}

// Stop stops the cluster and removes its data.
func (pg *Postgres) Stop() {
	pg.proc.Stop()
	_ = os.RemoveAll(pg.Dir)
}
