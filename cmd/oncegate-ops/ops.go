package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/internal/opsconfig"
)

// usage is printed on a usage error.
const usage = `usage: oncegate-ops <command> [flags]

commands:
  list [--state needs_manual_review|in_flight|completed|failed] [--older-than DURATION] [--json]
  show <operation_id> [--json]
  resolve <operation_id> --outcome completed|failed [--result JSON] [--reason TEXT] --note TEXT
          [--evidence-url URL] [--print-payload] [--json]
          --print-payload decides nothing: it prints the resolve signal's
          input, signed for you (valid 10 minutes), and the temporal
          workflow signal command that sends it (or paste it in the Web UI)
  limits show --subject SUBJECT [--role ROLE] [--json]
  limits reset --subject SUBJECT [--json]
  approvals [--state pending|approved|declined] [--json]
  passkey invite --subject|--person NAME [--role ROLE]... [--json]
          prints a one-time enrolment link (--role: an approver's role,
          such as finance, named by an action's approval.approvers)
  passkey list [--subject NAME] [--revoked] [--json]
  passkey revoke <passkey_id>
  receipt verify <receipt> [--jwks URL|FILE] [--json]
          verify a terminal answer's receipt offline and print what it states;
          --jwks defaults to the gateway's GATEWAY_URL/.well-known/jwks.json

Every command exits 0 on success (and on --help), 1 when the gateway
refuses (such as already_resolved: another decision was first) or cannot be
reached, 2 on a usage error. A refusal prints its meaning and each of its
errors; --json prints the gateway's answer as it is instead, a refusal's too.

environment:
  GATEWAY_URL          the gateway (default http://127.0.0.1:8080)
  ONCEGATE_OPS_TOKEN   the operator's bearer token (default dev-ops)
`

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// errUsage marks a command line the CLI cannot run.
var errUsage = errors.New("usage")

// cli runs one command against the gateway's ops API.
type cli struct {
	base string
	http *http.Client
	// ops is the client of the gateway's ops routes; opsErr is why there
	// is none (a gateway URL or token it refuses), reported by the first
	// command that needs it.
	ops    *client.Ops
	opsErr error
	stdout io.Writer
	stderr io.Writer
	// asJSON is the command's --json: print the gateway's answer as it is,
	// a refusal's too.
	asJSON bool
}

// run executes args (without the program name) and returns the exit status.
func run(ctx context.Context, args []string, environ map[string]string, stdout, stderr io.Writer) int {
	cfg, err := opsconfig.FromEnv(environ)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitUsage
	}
	c := &cli{
		base:   strings.TrimRight(cfg.GatewayURL, "/"),
		http:   &http.Client{Timeout: client.DefaultRequestTimeout},
		stdout: stdout,
		stderr: stderr,
	}
	// One attempt per command, as a person runs it: a read the gateway
	// could not answer is run again by its operator.
	c.ops, c.opsErr = client.NewOps(cfg.GatewayURL, cfg.Token, client.WithHTTPClient(c.http), client.WithRetry(1, 0))
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "list":
		err = c.list(ctx, args[1:])
	case "show":
		err = c.show(ctx, args[1:])
	case "resolve":
		err = c.resolve(ctx, args[1:])
	case "limits":
		err = c.limits(ctx, args[1:])
	case "approvals":
		err = c.approvals(ctx, args[1:])
	case "passkey":
		err = c.passkey(ctx, args[1:])
	case "receipt":
		err = c.receiptCmd(ctx, args[1:])
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		err = fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
	var refused *client.Error
	if c.asJSON && errors.As(err, &refused) {
		if perr := c.printJSON(refused.Raw); perr != nil {
			fmt.Fprintf(stderr, "oncegate-ops: %v\n", perr)
		}
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return exitOK
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "oncegate-ops: %v\n\n%s", err, usage)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "oncegate-ops: %s\n", describe(err))
		return exitError
	}
}

// gateway returns the client of the gateway's ops routes, or why there is none.
func (c *cli) gateway() (*client.Ops, error) {
	return c.ops, c.opsErr
}

// describe is err for a person: a refusal as its request, its HTTP code,
// the gateway's status and meaning, and each entry of its errors on a line.
func describe(err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.HTTPCode, serverMessage(e.Raw))
	}
	return err.Error()
}

// list prints the operations in a state as a table.
func (c *cli) list(ctx context.Context, args []string) error {
	fs := newFlagSet("list")
	state := fs.String("state", "", "only operations in this state: needs_manual_review, in_flight, completed, failed")
	olderThan := fs.Duration("older-than", 0, "only operations that entered their state at least this long ago (such as 10m)")
	asJSON := c.jsonFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: list takes no arguments, got %q", errUsage, pos)
	}
	if *olderThan < 0 {
		return fmt.Errorf("%w: --older-than must not be negative, got %s", errUsage, *olderThan)
	}
	ops, err := c.gateway()
	if err != nil {
		return err
	}
	list, err := ops.Operations(ctx, client.OperationFilter{State: *state, OlderThan: *olderThan})
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(list.Raw)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION_ID\tSTATE\tSCOPE\tSUBJECT\tUPDATED_AT\tAGE\tREASON")
	for _, o := range list.Operations {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.OperationID, o.State, o.Scope, o.Subject, stamp(o.UpdatedAt),
			age(o.UpdatedAt), oneLine(o.Reason))
	}
	return tw.Flush()
}

// show prints one operation: what it is (action, bound params), where it
// stands, its decision and its timeline.
func (c *cli) show(ctx context.Context, args []string) error {
	fs := newFlagSet("show")
	asJSON := c.jsonFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: show takes one operation_id", errUsage)
	}
	ops, err := c.gateway()
	if err != nil {
		return err
	}
	op, err := ops.Operation(ctx, pos[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(op.Raw)
	}
	return printShow(c.stdout, op)
}

// resolve sends an operator's decision for an operation awaiting review.
func (c *cli) resolve(ctx context.Context, args []string) error {
	fs := newFlagSet("resolve")
	outcome := fs.String("outcome", "", "completed or failed (required)")
	result := fs.String("result", "", "the operation's result as JSON (completed)")
	reason := fs.String("reason", "", "why it failed (required when failed)")
	note := fs.String("note", "", "what you checked and why you decided so (required)")
	evidence := fs.String("evidence-url", "", "a link to the evidence (statement, ticket)")
	payload := fs.Bool("print-payload", false, "decide nothing: print the signed resolve signal input for the Temporal Web UI or temporal workflow signal")
	asJSON := c.jsonFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: resolve takes one operation_id", errUsage)
	}
	req := client.Resolution{Outcome: *outcome, Reason: *reason, Note: *note, EvidenceURL: *evidence}
	switch *outcome {
	case client.OutcomeCompleted:
	case client.OutcomeFailed:
		if *reason == "" {
			return fmt.Errorf("%w: --reason is required with --outcome failed", errUsage)
		}
	default:
		return fmt.Errorf("%w: --outcome must be completed or failed", errUsage)
	}
	if *note == "" {
		return fmt.Errorf("%w: --note is required", errUsage)
	}
	if *result != "" {
		if !json.Valid([]byte(*result)) {
			return fmt.Errorf("%w: --result is not valid JSON", errUsage)
		}
		req.Result = json.RawMessage(*result)
	}
	ops, err := c.gateway()
	if err != nil {
		return err
	}
	if *payload {
		signal, err := ops.ResolutionPayload(ctx, pos[0], req)
		if err != nil {
			return err
		}
		if *asJSON {
			return c.printJSON(signal.Raw)
		}
		return printPayload(c.stdout, signal)
	}
	resolved, err := ops.Resolve(ctx, pos[0], req)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(resolved.Raw)
	}
	return printResolved(c.stdout, resolved)
}

// limits shows a subject's budgets (used and left per window) or resets
// its windows (operator only; the gateway logs and counts it).
func (c *cli) limits(ctx context.Context, args []string) error {
	if len(args) == 0 || (args[0] != "show" && args[0] != "reset") {
		return fmt.Errorf("%w: limits show|reset --subject SUBJECT", errUsage)
	}
	fs := newFlagSet("limits " + args[0])
	subject := fs.String("subject", "", "the subject (required)")
	role := fs.String("role", "", "the subject's role, for the budgets of a role (show; default agent)")
	asJSON := c.jsonFlag(fs)
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 || *subject == "" {
		return fmt.Errorf("%w: limits %s takes --subject SUBJECT and no arguments", errUsage, args[0])
	}
	ops, err := c.gateway()
	if err != nil {
		return err
	}
	if args[0] == "reset" {
		reset, err := ops.ResetLimits(ctx, *subject)
		if err != nil {
			return err
		}
		if *asJSON {
			return c.printJSON(reset.Raw)
		}
		return printReset(c.stdout, reset)
	}
	shown, err := ops.Limits(ctx, *subject, *role)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(shown.Raw)
	}
	return printLimits(c.stdout, shown.Limits)
}

// printReset writes a limits_reset answer for a person: whose windows
// start afresh, when, by whom, and the trace id the reset is logged with.
func printReset(w io.Writer, a *client.LimitsReset) error {
	fields := newFieldWriter(w)
	for _, kv := range [][2]string{{"status", string(a.Status)}, {"subject", a.Reset.Subject}, {"reset_at", stamp(a.Reset.At)},
		{"reset_by", a.Reset.By}, {"trace_id", a.Reset.TraceID}, {"meaning", a.Meaning}} {
		fields.line(kv[0], kv[1])
	}
	return fields.flush()
}

// printLimits prints a subject's budgets as a table.
func printLimits(w io.Writer, l client.SubjectLimits) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BUDGET\tWINDOW\tACTION\tCURRENCY\tMAX\tUSED\tLEFT\tNEXT_FREE_AT")
	for _, b := range l.Budgets {
		action := b.Action
		if action == "" {
			action = "*"
		}
		currency := b.Currency
		if currency == "" {
			currency = "any currency"
		}
		next := ""
		if b.NextFreeAt != nil {
			next = stamp(*b.NextFreeAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Name, b.Window, action, currency, b.Max, b.Used, b.Left, next)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if l.PreviewRate != "" || l.ConfirmRate != "" {
		fmt.Fprintf(w, "rates of %s: preview %s, confirm %s\n", l.Subject, orNone(l.PreviewRate), orNone(l.ConfirmRate))
	}
	if l.LastReset != nil {
		fmt.Fprintf(w, "windows reset at %s by %s\n", stamp(l.LastReset.At), l.LastReset.By)
	}
	return nil
}

// orNone is s, or "unlimited" when empty.
func orNone(s string) string {
	if s == "" {
		return "unlimited"
	}
	return s
}

// printJSON writes body indented.
func (c *cli) printJSON(body []byte) error {
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		_, err = c.stdout.Write(body)
		return err
	}
	out.WriteByte('\n')
	_, err := out.WriteTo(c.stdout)
	return err
}

// serverMessage picks the most telling text of an error answer, followed
// by each entry of its errors (field: problem) on a line of its own.
func serverMessage(body []byte) string {
	var m struct {
		Status  string `json:"status"`
		Message string `json:"message"`
		Meaning string `json:"meaning"`
		Error   any    `json:"error"`
		Errors  []struct {
			Field    string `json:"field"`
			Problem  string `json:"problem"`
			Expected string `json:"expected"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(body, &m); err == nil {
		var parts []string
		if m.Status != "" {
			parts = append(parts, m.Status)
		}
		switch {
		case m.Message != "":
			parts = append(parts, m.Message)
		case m.Meaning != "":
			parts = append(parts, m.Meaning)
		case m.Error != nil:
			parts = append(parts, fmt.Sprint(m.Error))
		}
		msg := strings.Join(parts, ": ")
		for _, p := range m.Errors {
			msg += "\n  - "
			if p.Field != "" {
				msg += p.Field + ": "
			}
			msg += p.Problem
			if p.Expected != "" {
				msg += " (expected " + p.Expected + ")"
			}
		}
		if msg != "" {
			return msg
		}
	}
	if s := strings.TrimSpace(string(body)); s != "" {
		return s
	}
	return "(empty answer)"
}

// jsonFlag declares --json on fs: print the gateway's answer as it is,
// a refusal's too (with the refusal's exit status).
func (c *cli) jsonFlag(fs *flag.FlagSet) *bool {
	fs.BoolVar(&c.asJSON, "json", false, "print the gateway's JSON answer, a refusal's too")
	return &c.asJSON
}

// newFlagSet returns a flag set that returns its errors instead of exiting
// or printing them: run prints each once, with the usage.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse parses flags placed before, between or after the positional
// arguments (flag stops at the first one) and returns the positionals.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// age is how long ago t was, rounded to seconds, or "" when t is unknown.
func age(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return time.Since(t).Round(time.Second).String()
}

// stamp is t as the gateway writes it (RFC 3339), or "" when t is unknown.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

// oneLine folds a multi-line text into one table cell.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
