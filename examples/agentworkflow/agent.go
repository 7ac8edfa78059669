package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/client/temporaltool"
)

const (
	// AgentWorkflowName is the registered name of Agent.
	AgentWorkflowName = "Agent"
	// DefaultTaskQueue is the agent's own task queue (AGENT_TASK_QUEUE).
	DefaultTaskQueue = "oncegate-agent"
)

// Task is what the user asked the agent, such as
// "pay 12.50 USD to p-1; pay 3 EUR to p-2 for lunch".
type Task struct {
	// Request is the user's request in words.
	Request string `json:"request"`
}

// Step is one tool call the planner chose.
type Step struct {
	// Scope is the oncegate action.
	Scope string `json:"scope"`
	// Params are the action's params.
	Params map[string]any `json:"params"`
}

// CallReport is what became of one step.
type CallReport struct {
	// Step is the planned call.
	Step Step `json:"step"`
	// OperationID is the oncegate operation, once previewed.
	OperationID string `json:"operation_id,omitempty"`
	// Status is the operation's last known status.
	Status string `json:"status,omitempty"`
	// ResultRef is the business reference of a completed call.
	ResultRef string `json:"result_ref,omitempty"`
	// Reason is why a call failed.
	Reason string `json:"reason,omitempty"`
	// Error is why the call stopped early (declined, refused, needs review).
	Error string `json:"error,omitempty"`
}

// Report is the agent's answer: one entry per planned step.
type Report struct {
	// Calls are the steps in order.
	Calls []CallReport `json:"calls"`
}

// Agent plans the request (an activity: a model would be called there) and
// performs each tool call through temporaltool.Call, waiting for the user's
// approval of each. Every step is exactly once, whatever happens to this
// workflow's worker.
func Agent(ctx workflow.Context, task Task) (Report, error) {
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var planner *Planner
	var steps []Step
	if err := workflow.ExecuteActivity(actx, planner.Plan, task).Get(ctx, &steps); err != nil {
		return Report{}, fmt.Errorf("plan: %w", err)
	}
	var rep Report
	for _, step := range steps {
		res, err := temporaltool.Call(ctx, step.Scope, step.Params, temporaltool.AwaitApproval)
		if ctx.Err() != nil {
			return rep, ctx.Err() // canceled: no further step
		}
		c := CallReport{Step: step, OperationID: res.Preview.OperationID, Status: string(res.Outcome.Status),
			ResultRef: res.Outcome.ResultRef, Reason: res.Outcome.Reason}
		if err != nil {
			c.Error = err.Error()
		}
		rep.Calls = append(rep.Calls, c)
	}
	return rep, nil
}

// Planner turns a request into tool calls by a script, standing in for a
// model: each "pay <amount> <currency> to <payee> [for <memo>]", separated
// by ";", becomes one payments.transfer.
type Planner struct{}

// payPattern is the one sentence the scripted planner understands.
var payPattern = regexp.MustCompile(`^(?i:pay)\s+([0-9]+(?:\.[0-9]+)?)\s+([A-Za-z]{3})\s+(?i:to)\s+(\S+)(?:\s+(?i:for)\s+(.+))?$`)

// Plan is the planner's activity.
func (*Planner) Plan(_ context.Context, task Task) ([]Step, error) {
	var steps []Step
	for _, sentence := range strings.Split(task.Request, ";") {
		sentence = strings.TrimSpace(sentence)
		if sentence == "" {
			continue
		}
		m := payPattern.FindStringSubmatch(sentence)
		if m == nil {
			return nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("plan: %q is not \"pay <amount> <currency> to <payee> [for <memo>]\"", sentence), "unplannable", nil)
		}
		params := map[string]any{"amount": m[1], "currency": m[2], "payee_id": m[3]}
		if m[4] != "" {
			params["memo"] = m[4]
		}
		steps = append(steps, Step{Scope: "payments.transfer", Params: params})
	}
	if len(steps) == 0 {
		return nil, temporal.NewNonRetryableApplicationError("plan: nothing to do", "unplannable", nil)
	}
	return steps, nil
}
