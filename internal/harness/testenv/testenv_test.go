package testenv_test

import (
	"context"
	"github.com/jackc/pgx/v5"
	"github.com/oncegate/oncegate/internal/harness/testenv"
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
}

func TestTemporal(t *testing.T) {
	tp := testenv.SharedTemporal(t)
	c := tp.Client(t)
	_, err := c.CheckHealth(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
}
