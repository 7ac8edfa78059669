package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/resolution"
)

// ChangeResolveOnce is the workflow.GetVersion change ID of first-wins
// resolution: from its version 1 on, a workflow that an operator resolved
// stays open for ResolutionGrace after it recorded the decision, so that a
// late second decision (a resolve signal from the Web UI) is refused inside
// the workflow, logged and shown in its state query and details, rather
// than failing against a closed workflow. Histories recorded before it
// close right after the decision.
const ChangeResolveOnce = "resolve-once"

// ResolutionGrace is how long a resolved workflow stays open to refuse, and
// show, late decisions. The outcome is recorded and answered before it.
const ResolutionGrace = 30 * time.Second

// maxRefused bounds how many refused decisions the state view keeps.
const maxRefused = 20

// RefusedResolution is a resolution the workflow did not apply.
type RefusedResolution struct {
	// Outcome is the outcome it asked for.
	Outcome operation.ResolutionOutcome `json:"outcome"`
	// Operator is who sent it.
	Operator string `json:"operator"`
	// Via is operation.ViaUpdate or operation.ViaSignal.
	Via string `json:"via"`
	// At is when the workflow refused it.
	At time.Time `json:"at"`
	// Why is the error type: ErrTypeAlreadyResolved, ErrTypeNotAwaitingReview
	// or ErrTypeInvalidResolution.
	Why string `json:"why"`
	// Message says why in words.
	Message string `json:"message"`
	// Signal is the ordinal of the resolve signal refused (as in
	// operation.OperatorDecision); 0 for an Update.
	Signal int `json:"signal,omitempty"`
}

// NotAwaitingReview is the details payload of an ErrTypeNotAwaitingReview error.
type NotAwaitingReview struct {
	// State is the workflow's current state.
	State operation.State `json:"state"`
}

// resolver applies the first well-formed decision made while the operation
// waits for review, whether it comes by Update or by signal, and refuses
// every other one.
type resolver struct {
	in       operation.Input
	view     *StateView
	decision *operation.OperatorDecision
	outcome  operation.Final
	final    *operation.Final
}

// register installs the resolve Update (with its validator) and the
// goroutine that receives resolve signals.
func (r *resolver) register(ctx workflow.Context) error {
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateResolve, r.handleUpdate, workflow.UpdateHandlerOptions{
		Validator:   r.validateUpdate,
		Description: "Decide an operation waiting for manual review; the first decision wins.",
	}); err != nil {
		return fmt.Errorf("register update %s: %w", UpdateResolve, err)
	}
	workflow.Go(ctx, func(ctx workflow.Context) {
		ch := workflow.GetSignalChannel(ctx, SignalResolve)
		for n := 1; ; n++ {
			var res operation.Resolution
			if !ch.Receive(ctx, &res) {
				return
			}
			if err := r.accept(ctx, res, operation.ViaSignal, n); err != nil {
				r.refuse(ctx, res, operation.ViaSignal, n, err)
			}
			r.view.ResolveSignals = n
		}
	})
	return nil
}

// validateUpdate refuses, before anything is written to the history, an
// Update that cannot be the decision. It only reads.
func (r *resolver) validateUpdate(ctx workflow.Context, res operation.Resolution) error {
	_, err := r.check(ctx, res)
	if err != nil {
		why, message := refusalOf(err)
		workflow.GetLogger(ctx).Warn("Refused a resolution", "Via", operation.ViaUpdate, "Outcome", res.Outcome,
			"Operator", res.Operator, "Why", why, "Error", message)
		countRefused(ctx, operation.ViaUpdate, why)
	}
	return err
}

// refusalOf is a refusal's error type and its reason in words.
func refusalOf(err error) (why, message string) {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Type(), appErr.Message()
	}
	return ErrTypeInvalidResolution, err.Error()
}

// countRefused counts a refused decision in MetricResolutionsRefused (the
// SDK's handler records nothing while a history replays).
func countRefused(ctx workflow.Context, via, why string) {
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{"via": via, "why": why}).
		Counter(MetricResolutionsRefused).Inc(1)
}

// handleUpdate accepts the decision (checked again: two Updates admitted in
// one workflow task both passed the validator) and answers the final state
// once the workflow recorded it.
func (r *resolver) handleUpdate(ctx workflow.Context, res operation.Resolution) (operation.ResolveAnswer, error) {
	if err := r.accept(ctx, res, operation.ViaUpdate, 0); err != nil {
		r.refuse(ctx, res, operation.ViaUpdate, 0, err)
		return operation.ResolveAnswer{}, err
	}
	if err := workflow.Await(ctx, func() bool { return r.final != nil }); err != nil {
		return operation.ResolveAnswer{}, fmt.Errorf("await outcome: %w", err)
	}
	return operation.ResolveAnswer{Result: *r.final, Decision: *r.decision}, nil
}

// check says why res cannot be the decision now, or returns the operator
// it is recorded under: its token's (proven) operator when the input
// carries resolution keys, else the one it names (histories before them).
func (r *resolver) check(ctx workflow.Context, res operation.Resolution) (string, error) {
	if d := r.decision; d != nil {
		return "", temporal.NewApplicationError(fmt.Sprintf("already resolved: %s decided %s at %s via %s",
			d.Operator, d.Outcome, d.DecidedAt.UTC().Format(time.RFC3339), d.Via), ErrTypeAlreadyResolved, *d)
	}
	if r.view.State != operation.StateNeedsReview {
		return "", temporal.NewApplicationError(fmt.Sprintf("not awaiting review: the operation is %s", r.view.State),
			ErrTypeNotAwaitingReview, NotAwaitingReview{State: r.view.State})
	}
	operator := res.Operator
	if len(r.in.ResolutionKeys) > 0 {
		st, err := resolution.Verify(r.in.ResolutionKeys, r.in.OperationID, res, workflow.Now(ctx))
		if err != nil {
			return "", temporal.NewApplicationError("invalid resolution: no valid token from the gateway: "+err.Error(),
				ErrTypeInvalidResolution)
		}
		operator = st.Operator
	}
	if operator == "" {
		return "", temporal.NewApplicationError("invalid resolution: operator is required", ErrTypeInvalidResolution)
	}
	if _, err := resolutionOutcome(res, r.in.Downstream.ResultRef); err != nil {
		return "", temporal.NewApplicationError("invalid resolution: "+err.Error(), ErrTypeInvalidResolution)
	}
	return operator, nil
}

// accept makes res the decision, or says why it cannot be; signal is the
// ordinal of the resolve signal that carried it (0 for an Update).
func (r *resolver) accept(ctx workflow.Context, res operation.Resolution, via string, signal int) error {
	operator, err := r.check(ctx, res)
	if err != nil {
		return err
	}
	out, _ := resolutionOutcome(res, r.in.Downstream.ResultRef) // checked above
	out.ResolvedAt, out.ResolvedBy = workflow.Now(ctx), operator
	r.outcome = out
	r.decision = &operation.OperatorDecision{Outcome: res.Outcome, Operator: operator, DecidedAt: out.ResolvedAt, Via: via,
		Note: res.Note, EvidenceURL: res.EvidenceURL, Signal: signal}
	r.view.Decision = r.decision
	workflow.GetLogger(ctx).Info("Operation resolved by an operator", "Outcome", res.Outcome, "Operator", operator, "Via", via)
	setDetails(ctx, r.in, *r.view)
	return nil
}

// refuse logs a refused decision and shows it in the state view and
// details, with the reason in words only: the error's own text adds the
// SDK's "(type: …, retryable: true)", which a person must not read as
// "send it again".
func (r *resolver) refuse(ctx workflow.Context, res operation.Resolution, via string, signal int, err error) {
	why, message := refusalOf(err)
	workflow.GetLogger(ctx).Warn("Refused a resolution", "Via", via, "Outcome", res.Outcome, "Operator", res.Operator,
		"Why", why, "Error", message, "Signal", signal)
	countRefused(ctx, via, why)
	refused := RefusedResolution{Outcome: res.Outcome, Operator: res.Operator, Via: via, At: workflow.Now(ctx),
		Why: why, Message: message, Signal: signal}
	r.view.Refused = append(r.view.Refused, refused)
	if len(r.view.Refused) > maxRefused {
		r.view.Refused = r.view.Refused[len(r.view.Refused)-maxRefused:]
	}
	setDetails(ctx, r.in, *r.view)
}

// wait blocks until a decision is accepted and returns its result.
func (r *resolver) wait(ctx workflow.Context) (operation.Final, error) {
	if err := workflow.Await(ctx, func() bool { return r.decision != nil }); err != nil {
		return operation.Final{}, fmt.Errorf("wait for %s: %w", SignalResolve, err)
	}
	return r.outcome, nil
}

// finish records the final state, answers the Updates waiting for it and,
// when a person decided (from ChangeResolveOnce version 1 on), keeps the
// workflow open for ResolutionGrace to refuse late decisions visibly.
func (r *resolver) finish(ctx workflow.Context, out operation.Final) error {
	r.final = &out
	if r.decision != nil && changeVersion(ctx, ChangeResolveOnce) >= 1 {
		// Canceled during the grace: the outcome is recorded, close normally.
		if err := workflow.Sleep(ctx, ResolutionGrace); err != nil && !temporal.IsCanceledError(err) {
			return fmt.Errorf("resolution grace: %w", err)
		}
	}
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return fmt.Errorf("await handlers: %w", err)
	}
	return nil
}
