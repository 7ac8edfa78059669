package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	tclient "go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/client/temporaltool"
)

// driverPoll is how often the driver looks for a preview to approve.
const driverPoll = 500 * time.Millisecond

// driver starts an agent workflow and stands for its user: it shows each
// preview that waits for approval and signals the answer.
type driver struct {
	tc  tclient.Client
	cfg config
	// yes approves every preview without asking (never a repeat of a recent operation).
	yes bool
	in  *bufio.Reader
	out io.Writer
}

// run starts the agent on request and returns its report.
func (d *driver) run(ctx context.Context, request string) (Report, error) {
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	run, err := d.tc.ExecuteWorkflow(ctx, tclient.StartWorkflowOptions{ID: "agent-" + hex.EncodeToString(id), TaskQueue: d.cfg.TaskQueue},
		AgentWorkflowName, Task{Request: request})
	if err != nil {
		return Report{}, fmt.Errorf("start agent: %w", err)
	}
	fmt.Fprintf(d.out, "agent workflow %s started\n", run.GetID())
	done := make(chan error, 1)
	var rep Report
	go func() { done <- run.Get(ctx, &rep) }()
	answered := map[string]bool{}
	tick := time.NewTicker(driverPoll)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return rep, fmt.Errorf("agent %s: %w", run.GetID(), err)
			}
			return rep, nil
		case <-tick.C:
		}
		p, ok := pending(ctx, d.tc, run.GetID())
		if !ok || answered[p.OperationID] {
			continue
		}
		a, err := d.ask(p)
		if err != nil {
			return rep, err
		}
		if err := d.tc.SignalWorkflow(ctx, run.GetID(), "", temporaltool.SignalApproval, a); err != nil {
			return rep, fmt.Errorf("signal approval: %w", err)
		}
		answered[p.OperationID] = true
	}
}

// pending asks the agent which preview waits for approval (false when none,
// or while the workflow cannot answer queries, such as before it previewed).
func pending(ctx context.Context, tc tclient.Client, id string) (temporaltool.Preview, bool) {
	v, err := tc.QueryWorkflow(ctx, id, "", temporaltool.QueryPendingApproval)
	if err != nil {
		return temporaltool.Preview{}, false
	}
	var p *temporaltool.Preview
	if err := v.Get(&p); err != nil || p == nil {
		return temporaltool.Preview{}, false
	}
	return *p, true
}

// ask shows the preview and reads the user's answer.
func (d *driver) ask(p temporaltool.Preview) (temporaltool.Approval, error) {
	a := temporaltool.Approval{OperationID: p.OperationID, By: "driver"}
	fmt.Fprintf(d.out, "\n%s %s\n  %s\n", p.Scope, compact(p.Detail), p.Meaning)
	if p.RecentOperation != nil {
		fmt.Fprintf(d.out, "  it repeats operation %s (%s)\n", p.RecentOperation.OperationID, p.RecentOperation.State)
	}
	if d.yes {
		a.Approved = p.RecentOperation == nil
		fmt.Fprintf(d.out, "approved: %v (-yes)\n", a.Approved)
		return a, nil
	}
	approved, err := d.yesNo("Approve? [y/N] ")
	if err != nil {
		return a, err
	}
	a.Approved = approved
	if approved && p.RecentOperation != nil {
		if a.AcknowledgeRepeat, err = d.yesNo("Do it again although it was just done? [y/N] "); err != nil {
			return a, err
		}
		a.Approved = a.AcknowledgeRepeat
	}
	return a, nil
}

func (d *driver) yesNo(prompt string) (bool, error) {
	fmt.Fprint(d.out, prompt)
	line, err := d.in.ReadString('\n')
	if err != nil && line == "" {
		return false, fmt.Errorf("read answer: %w", err)
	}
	line = strings.ToLower(strings.TrimSpace(line))
	return line == "y" || line == "yes", nil
}

// compact prints a JSON value on one line.
func compact(raw json.RawMessage) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}
