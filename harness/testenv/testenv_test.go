package testenv_test

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncegate/oncegate/harness/testenv"
	"syscall"
	"testing"
)

func TestMain(m *testing.M) { testenv.Main(m) }
func TestServers(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	defer c.Close()
	if err := c.Set(context.Background(), "a", "b", 0).Err(); err != nil {
		t.Fatal(err)
	}
	url := testenv.NewDatabase(t)
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	for name, pid := range map[string]int{"redis": r.Pid(), "postgres": testenv.SharedPostgres(t).Pid()} {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("%s's pid %d: %v", name, pid, err)
		}
	}
}

func TestTemporal(t *testing.T) {
	tp := testenv.SharedTemporal(t)
	c := tp.Client(t)
	_, err := c.CheckHealth(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(tp.Pid(), 0); err != nil {
		t.Fatalf("temporal's pid %d: %v", tp.Pid(), err)
	}
}
