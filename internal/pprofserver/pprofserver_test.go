package pprofserver

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/envconfig"
)

func TestStart(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	t.Run("unset serves nothing", func(t *testing.T) {
		stop, err := Start(Config{}, logger)
		require.NoError(t, err)
		stop()
	})

	t.Run("set serves the index and the profiles", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		require.NoError(t, l.Close())
		stop, err := Start(Config{Addr: addr}, logger)
		require.NoError(t, err)
		defer stop()
		resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	})

	t.Run("a bad address is an error", func(t *testing.T) {
		_, err := Start(Config{Addr: "not-an-address"}, logger)
		assert.ErrorContains(t, err, `ONCEGATE_PPROF_ADDR="not-an-address"`)
	})
}

func TestEnvAddrIsTheTag(t *testing.T) {
	vars, err := envconfig.Vars[Config]()
	require.NoError(t, err)
	assert.Equal(t, []envconfig.Var{{Name: EnvAddr}}, vars)
}
