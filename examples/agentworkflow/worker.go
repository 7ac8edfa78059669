package main

import (
	"fmt"

	tclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/client/temporaltool"
)

// newWorker builds the agent's worker on tc: the Agent workflow, the
// planner and the oncegate activities with the agent's gateway client.
func newWorker(tc tclient.Client, cfg config) (worker.Worker, error) {
	gw, err := client.New(cfg.GatewayURL, cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("gateway client: %w", err)
	}
	w := worker.New(tc, cfg.TaskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(Agent, workflow.RegisterOptions{Name: AgentWorkflowName})
	w.RegisterActivity(&Planner{})
	temporaltool.Register(w, &temporaltool.Activities{Client: gw})
	return w, nil
}
