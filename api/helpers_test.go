package api

import (
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/api/messages"
)

type echoContext = echo.Context

func messagesLang(l string) messages.Lang { return messages.Lang(l) }

func messagesData() messages.Data {
	return messages.Data{OperationID: "op", Scope: "payments.transfer", PreviewTool: "p", ConfirmTool: "c",
		PollWith: PollWith, PollAfterSeconds: "2", RetryAfterSeconds: "1", TraceID: "t"}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}
