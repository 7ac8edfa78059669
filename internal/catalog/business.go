package catalog

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Phase is what a downstream's business state means.
type Phase string

const (
	// PhaseSucceeded means the operation is done.
	PhaseSucceeded Phase = "succeeded"
	// PhaseFailed means it definitely failed (a refusal, even a late one).
	PhaseFailed Phase = "failed"
	// PhasePending means it is still on its way.
	PhasePending Phase = "pending"
	// PhaseUnknown means the answer holds no state, or one the catalog does
	// not list: nothing can be concluded from it.
	PhaseUnknown Phase = "unknown"
)

// Classify reads the business state of answer (a downstream's JSON record)
// and says what it means, with the failure reason for PhaseFailed. It is
// pure, so the workflow may call it.
func (b *BusinessState) Classify(answer json.RawMessage) (state string, phase Phase, reason string) {
	var doc any
	if err := json.Unmarshal(answer, &doc); err != nil {
		return "", PhaseUnknown, ""
	}
	state, ok := Lookup(doc, b.Field).(string)
	switch {
	case !ok:
		return "", PhaseUnknown, ""
	case slices.Contains(b.Succeeded, state):
		return state, PhaseSucceeded, ""
	case slices.Contains(b.Failed, state):
		reason, _ = Lookup(doc, b.ReasonField).(string)
		if reason == "" {
			reason = state
		}
		return state, PhaseFailed, reason
	case slices.Contains(b.Pending, state):
		return state, PhasePending, ""
	default:
		return state, PhaseUnknown, ""
	}
}

// Lookup returns the member of doc (decoded JSON) at the dotted path, or nil.
func Lookup(doc any, path string) any {
	if path == "" {
		return nil
	}
	for _, name := range strings.Split(path, ".") {
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil
		}
		doc = obj[name]
	}
	return doc
}

// buildBusinessState fills the business-state settings of d from r and
// reports whether they are valid.
func buildBusinessState(p problems, d *Downstream, r rawDownstream) bool {
	ok := true
	if r.BusinessState == nil {
		for _, set := range []struct {
			name string
			set  bool
		}{{"completion_deadline", r.CompletionDeadline != ""}, {"poll_interval", r.PollInterval != ""}, {"webhook", r.Webhook != nil}} {
			if set.set {
				p.addf("downstream.%s needs downstream.business_state: without one a 2xx is the outcome", set.name)
				ok = false
			}
		}
		return ok
	}
	rb := r.BusinessState
	b := &BusinessState{Field: rb.Field, Succeeded: rb.Succeeded, Failed: rb.Failed, Pending: rb.Pending, ReasonField: rb.ReasonField}
	d.BusinessState = b
	if b.Field == "" {
		p.addf("downstream.business_state.field is required (the dotted path of the state in the answer, such as status)")
		ok = false
	}
	if len(b.Succeeded) == 0 || len(b.Failed) == 0 {
		p.addf("downstream.business_state needs succeeded and failed values (which states mean done and failed)")
		ok = false
	}
	seen := map[string]string{}
	for _, list := range []struct {
		name   string
		values []string
	}{{"succeeded", b.Succeeded}, {"failed", b.Failed}, {"pending", b.Pending}} {
		for _, v := range list.values {
			if other, dup := seen[v]; dup {
				p.addf("downstream.business_state: %q is listed under both %s and %s", v, other, list.name)
				ok = false
			}
			seen[v] = list.name
		}
	}
	var dOK, iOK bool
	if d.CompletionDeadline, dOK = p.duration("downstream.completion_deadline", r.CompletionDeadline, 0, len(b.Pending) > 0); dOK && len(b.Pending) > 0 && d.CompletionDeadline <= 0 {
		p.addf("downstream.completion_deadline %s must be > 0", fmtDur(d.CompletionDeadline))
		dOK = false
	}
	if d.PollInterval, iOK = p.duration("downstream.poll_interval", r.PollInterval, DefaultPollInterval, false); iOK && d.PollInterval <= 0 {
		p.addf("downstream.poll_interval %s must be > 0", fmtDur(d.PollInterval))
		iOK = false
	}
	if len(b.Pending) > 0 && d.Status == "" && r.Webhook == nil {
		p.addf("downstream.business_state has pending values but neither downstream.status nor downstream.webhook: a pending operation could never learn its outcome")
		ok = false
	}
	return ok && dOK && iOK && buildWebhook(p, d, r.Webhook)
}

// buildWebhook fills d.Webhook from r and reports whether it is valid.
func buildWebhook(p problems, d *Downstream, r *rawWebhook) bool {
	if r == nil {
		return true
	}
	w := &Webhook{SecretEnv: r.SecretEnv, SignatureHeader: r.SignatureHeader, ReferenceField: r.ReferenceField, ObjectField: r.ObjectField}
	d.Webhook = w
	ok := true
	if !validEnvName(w.SecretEnv) {
		p.addf("downstream.webhook.secret_env %q must name the environment variable holding the signing secret", w.SecretEnv)
		ok = false
	}
	if w.SignatureHeader == "" {
		p.addf("downstream.webhook.signature_header is required (the header carrying t=<unix>,v1=<hex HMAC-SHA256>)")
		ok = false
	}
	if w.ReferenceField == "" {
		w.ReferenceField = DefaultWebhookReferenceField
	}
	if w.ObjectField == "" {
		w.ObjectField = DefaultWebhookObjectField
	}
	var tOK bool
	if w.Tolerance, tOK = p.duration("downstream.webhook.tolerance", r.Tolerance, DefaultWebhookTolerance, false); tOK &&
		(w.Tolerance <= 0 || w.Tolerance > MaxWebhookTolerance) {
		p.addf("downstream.webhook.tolerance %s must be > 0 and at most %s (replays are refused by receipts kept twice that long)",
			fmtDur(w.Tolerance), fmtDur(MaxWebhookTolerance))
		tOK = false
	}
	return ok && tOK
}

// pendingWorst is how long a pending operation may stay in flight after
// its execute call: the completion deadline plus the status query running
// when it passes.
func (d *Downstream) pendingWorst() time.Duration {
	if d.BusinessState == nil || len(d.BusinessState.Pending) == 0 {
		return 0
	}
	return satAdd(d.CompletionDeadline, d.ReconcileRetry().Worst())
}
