package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"
)

// passkey runs `passkey invite|list|revoke`.
func (c *cli) passkey(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: passkey needs invite, list or revoke", errUsage)
	}
	switch args[0] {
	case "invite":
		return c.passkeyInvite(ctx, args[1:])
	case "list":
		return c.passkeyList(ctx, args[1:])
	case "revoke":
		return c.passkeyRevoke(ctx, args[1:])
	}
	return fmt.Errorf("%w: unknown passkey command %q (invite, list or revoke)", errUsage, args[0])
}

// passkeyInvite prints a one-time enrolment link for --subject.
func (c *cli) passkeyInvite(ctx context.Context, args []string) error {
	fs := newFlagSet("passkey invite")
	subject := fs.String("subject", "", "who enrols a passkey (required)")
	asJSON := c.jsonFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *subject == "" {
		return fmt.Errorf("%w: passkey invite --subject NAME", errUsage)
	}
	payload, err := json.Marshal(map[string]string{"subject": *subject})
	if err != nil {
		return err
	}
	body, err := c.do(ctx, http.MethodPost, "/v1/ops/passkeys/invites", payload)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(body)
	}
	var a struct {
		URL       string `json:"url"`
		ExpiresAt string `json:"expires_at"`
	}
	if err := json.Unmarshal(body, &a); err != nil || a.URL == "" {
		return fmt.Errorf("passkey invite: unexpected answer: %s", serverMessage(body))
	}
	fmt.Fprintln(c.stdout, a.URL)
	fmt.Fprintf(c.stderr, "one-time enrolment link for %s, valid until %s: give it to %s only\n", *subject, a.ExpiresAt, *subject)
	return nil
}

// passkeyList prints the passkeys (of --subject), revoked ones with --revoked.
func (c *cli) passkeyList(ctx context.Context, args []string) error {
	fs := newFlagSet("passkey list")
	subject := fs.String("subject", "", "only this subject's passkeys")
	revoked := fs.Bool("revoked", false, "include revoked passkeys")
	asJSON := c.jsonFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: passkey list takes no arguments", errUsage)
	}
	q := url.Values{}
	if *subject != "" {
		q.Set("subject", *subject)
	}
	if *revoked {
		q.Set("revoked", "true")
	}
	body, err := c.do(ctx, http.MethodGet, "/v1/ops/passkeys?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(body)
	}
	var a struct {
		Passkeys []struct {
			ID            string `json:"id"`
			Subject       string `json:"subject"`
			CreatedAt     string `json:"created_at"`
			LastUsedAt    string `json:"last_used_at"`
			RevokedAt     string `json:"revoked_at"`
			RevokedBy     string `json:"revoked_by"`
			EnrolTraceID  string `json:"enrol_trace_id"`
			RevokeTraceID string `json:"revoke_trace_id"`
		} `json:"passkeys"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return fmt.Errorf("passkey list: decode answer: %w", err)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSUBJECT\tENROLLED_AT\tLAST_USED_AT\tREVOKED_AT\tREVOKED_BY\tENROL_TRACE\tREVOKE_TRACE")
	for _, k := range a.Passkeys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Subject, k.CreatedAt, k.LastUsedAt, k.RevokedAt, k.RevokedBy,
			k.EnrolTraceID, k.RevokeTraceID)
	}
	return tw.Flush()
}

// passkeyRevoke revokes one passkey.
func (c *cli) passkeyRevoke(ctx context.Context, args []string) error {
	fs := newFlagSet("passkey revoke")
	c.jsonFlag(fs) // revoke prints the gateway's JSON answer with or without it
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: passkey revoke takes one passkey id", errUsage)
	}
	body, err := c.do(ctx, http.MethodPost, "/v1/ops/passkeys/"+url.PathEscape(pos[0])+"/revoke", nil)
	if err != nil {
		return err
	}
	return c.printJSON(body)
}

// approvals lists approvals, pending ones with --state pending.
func (c *cli) approvals(ctx context.Context, args []string) error {
	fs := newFlagSet("approvals")
	state := fs.String("state", "", "only approvals in this state: pending, approved, declined")
	asJSON := c.jsonFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: approvals takes no arguments", errUsage)
	}
	path := "/v1/ops/approvals"
	if *state != "" {
		path += "?" + url.Values{"state": {*state}}.Encode()
	}
	body, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(body)
	}
	var a struct {
		Approvals []struct {
			OperationID    string   `json:"operation_id"`
			State          string   `json:"state"`
			Scope          string   `json:"scope"`
			Subject        string   `json:"subject"`
			Reasons        []string `json:"reasons"`
			RequestedAt    string   `json:"requested_at"`
			ExpiresAt      string   `json:"expires_at"`
			DecidedAt      string   `json:"decided_at"`
			EvidenceSHA256 string   `json:"evidence_sha256"`
		} `json:"approvals"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return fmt.Errorf("approvals: decode answer: %w", err)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION_ID\tSTATE\tSCOPE\tSUBJECT\tREASONS\tREQUESTED_AT\tEXPIRES_AT\tDECIDED_AT\tEVIDENCE_SHA256")
	for _, r := range a.Approvals {
		reasons := ""
		for i, x := range r.Reasons {
			if i > 0 {
				reasons += ","
			}
			reasons += x
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.OperationID, r.State, r.Scope, r.Subject, reasons,
			r.RequestedAt, r.ExpiresAt, r.DecidedAt, r.EvidenceSHA256)
	}
	return tw.Flush()
}
