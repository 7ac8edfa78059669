package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/oncegate/oncegate/client"
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

// roleFlags collects a repeated --role.
type roleFlags []string

// String implements flag.Value.
func (r *roleFlags) String() string { return strings.Join(*r, ",") }

// Set implements flag.Value.
func (r *roleFlags) Set(v string) error {
	*r = append(*r, v)
	return nil
}

// passkeyInvite prints a one-time enrolment link for --subject (or
// --person: the same), whose passkey will have each --role.
func (c *cli) passkeyInvite(ctx context.Context, args []string) error {
	fs := newFlagSet("passkey invite")
	subject := fs.String("subject", "", "who enrols a passkey (required; or --person)")
	person := fs.String("person", "", "the same as --subject: the person who enrols")
	var roles roleFlags
	fs.Var(&roles, "role", "a role the passkey will have, such as finance (repeatable)")
	asJSON := c.jsonFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *subject != "" && *person != "" && *subject != *person {
		return fmt.Errorf("%w: passkey invite takes --subject or --person, not two names", errUsage)
	}
	if *subject == "" {
		subject = person
	}
	if len(pos) > 0 || *subject == "" {
		return fmt.Errorf("%w: passkey invite --subject|--person NAME [--role ROLE]...", errUsage)
	}
	ops, err := c.gateway()
	if err != nil {
		return err
	}
	a, err := ops.InvitePasskey(ctx, *subject, roles...)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(a.Raw)
	}
	if a.URL == "" {
		return fmt.Errorf("passkey invite: unexpected answer: %s", serverMessage(a.Raw))
	}
	fmt.Fprintln(c.stdout, a.URL)
	withRoles := ""
	if len(a.Roles) > 0 {
		withRoles = " (roles: " + strings.Join(a.Roles, ", ") + ")"
	}
	fmt.Fprintf(c.stderr, "one-time enrolment link for %s%s, valid until %s: give it to %s only\n", *subject, withRoles, stamp(a.ExpiresAt), *subject)
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
	ops, err := c.gateway()
	if err != nil {
		return err
	}
	a, err := ops.Passkeys(ctx, client.PasskeyFilter{Subject: *subject, Revoked: *revoked})
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(a.Raw)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSUBJECT\tENROLLED_AT\tLAST_USED_AT\tREVOKED_AT\tREVOKED_BY\tENROL_TRACE\tREVOKE_TRACE")
	for _, k := range a.Passkeys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Subject, stamp(k.CreatedAt), stamp(k.LastUsedAt), stamp(k.RevokedAt), k.RevokedBy,
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
	ops, err := c.gateway()
	if err != nil {
		return err
	}
	a, err := ops.RevokePasskey(ctx, pos[0])
	if err != nil {
		return err
	}
	return c.printJSON(a.Raw)
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
	ops, err := c.gateway()
	if err != nil {
		return err
	}
	a, err := ops.Approvals(ctx, client.ApprovalFilter{State: *state})
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(a.Raw)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION_ID\tSTATE\tSCOPE\tSUBJECT\tREASONS\tREQUESTED_AT\tEXPIRES_AT\tDECIDED_AT\tEVIDENCE_SHA256")
	for _, r := range a.Approvals {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.OperationID, r.State, r.Scope, r.Subject, strings.Join(r.Reasons, ","),
			stamp(r.RequestedAt), stamp(r.ExpiresAt), stamp(r.DecidedAt), r.EvidenceSHA256)
	}
	return tw.Flush()
}
