package catalog

import (
	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/plan"
)

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
	b := &plan.BusinessState{Field: rb.Field, Succeeded: rb.Succeeded, Failed: rb.Failed, Pending: rb.Pending, ReasonField: rb.ReasonField}
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
	if !envconfig.ValidName(w.SecretEnv) {
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
