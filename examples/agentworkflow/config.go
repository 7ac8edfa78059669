package main

import (
	"fmt"
	"os"
)

// config is the agent's environment.
type config struct {
	// GatewayURL is the oncegate gateway (GATEWAY_URL).
	GatewayURL string
	// Token is the agent's bearer token at the gateway (ONCEGATE_TOKEN).
	Token string
	// TemporalAddress is the Temporal frontend (TEMPORAL_ADDRESS).
	TemporalAddress string
	// Namespace is the Temporal namespace (TEMPORAL_NAMESPACE).
	Namespace string
	// TaskQueue is the agent's task queue (AGENT_TASK_QUEUE).
	TaskQueue string
}

// loadConfig reads the environment; GATEWAY_URL and ONCEGATE_TOKEN are required.
func loadConfig() (config, error) {
	c := config{
		GatewayURL:      os.Getenv("GATEWAY_URL"),
		Token:           os.Getenv("ONCEGATE_TOKEN"),
		TemporalAddress: envOr("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
		Namespace:       envOr("TEMPORAL_NAMESPACE", "default"),
		TaskQueue:       envOr("AGENT_TASK_QUEUE", DefaultTaskQueue),
	}
	if c.GatewayURL == "" || c.Token == "" {
		return c, fmt.Errorf("set GATEWAY_URL and ONCEGATE_TOKEN (such as: source .run/stack.env; export ONCEGATE_TOKEN=dev-alice)")
	}
	return c, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
