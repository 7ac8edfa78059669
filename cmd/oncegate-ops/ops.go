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
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/oncegate/oncegate/internal/opsconfig"
)

// usage is printed on a usage error.
const usage = `usage: oncegate-ops <command> [flags]

commands:
  list [--state needs_manual_review|in_flight|completed|failed] [--older-than DURATION] [--json]
  show <operation_id> [--json]
  resolve <operation_id> --outcome completed|failed [--result JSON] [--reason TEXT] --note TEXT
          [--evidence-url URL] [--json]
  limits show --subject SUBJECT [--role ROLE] [--json]
  limits reset --subject SUBJECT [--json]
  approvals [--state pending|approved|declined] [--json]
  passkey invite --subject NAME [--json]     prints a one-time enrolment link
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
	base   string
	token  string
	http   *http.Client
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
		token:  cfg.Token,
		http:   &http.Client{Timeout: 30 * time.Second},
		stdout: stdout,
		stderr: stderr,
	}
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
	var refused *refusal
	if c.asJSON && errors.As(err, &refused) {
		if perr := c.printJSON(refused.body); perr != nil {
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
		fmt.Fprintf(stderr, "oncegate-ops: %v\n", err)
		return exitError
	}
}

// operation is one row of the list answer (the truth record's fields).
type operation struct {
	OperationID string `json:"operation_id"`
	State       string `json:"state"`
	Scope       string `json:"scope"`
	Subject     string `json:"subject"`
	UpdatedAt   string `json:"updated_at"`
	Reason      string `json:"reason"`
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
	q := url.Values{}
	if *state != "" {
		q.Set("state", *state)
	}
	if *olderThan > 0 {
		q.Set("older_than", olderThan.String())
	}
	path := "/v1/ops/operations"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	body, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(body)
	}
	ops, err := decodeList(body)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION_ID\tSTATE\tSCOPE\tSUBJECT\tUPDATED_AT\tAGE\tREASON")
	for _, o := range ops {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.OperationID, o.State, o.Scope, o.Subject, o.UpdatedAt,
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
	body, err := c.do(ctx, http.MethodGet, "/v1/ops/operations/"+url.PathEscape(pos[0]), nil)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(body)
	}
	return printShow(c.stdout, body)
}

// resolveRequest is the body of POST /v1/ops/operations/{id}/resolve.
type resolveRequest struct {
	Outcome string          `json:"outcome"`
	Result  json.RawMessage `json:"result,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Note    string          `json:"note"`
	// EvidenceURL links the evidence.
	EvidenceURL string `json:"evidence_url,omitempty"`
}

// resolve sends an operator's decision for an operation awaiting review.
func (c *cli) resolve(ctx context.Context, args []string) error {
	fs := newFlagSet("resolve")
	outcome := fs.String("outcome", "", "completed or failed (required)")
	result := fs.String("result", "", "the operation's result as JSON (completed)")
	reason := fs.String("reason", "", "why it failed (required when failed)")
	note := fs.String("note", "", "what you checked and why you decided so (required)")
	evidence := fs.String("evidence-url", "", "a link to the evidence (statement, ticket)")
	asJSON := c.jsonFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: resolve takes one operation_id", errUsage)
	}
	req := resolveRequest{Outcome: *outcome, Reason: *reason, Note: *note, EvidenceURL: *evidence}
	switch *outcome {
	case "completed":
	case "failed":
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
	payload, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", pos[0], err)
	}
	body, err := c.do(ctx, http.MethodPost, "/v1/ops/operations/"+url.PathEscape(pos[0])+"/resolve", payload)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(body)
	}
	return printResolved(c.stdout, body)
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
	path := "/v1/ops/limits/" + url.PathEscape(*subject)
	method := http.MethodGet
	if args[0] == "reset" {
		path, method = path+"/reset", http.MethodPost
	} else if *role != "" {
		path += "?role=" + url.QueryEscape(*role)
	}
	body, err := c.do(ctx, method, path, nil)
	if err != nil {
		return err
	}
	switch {
	case *asJSON:
		return c.printJSON(body)
	case args[0] == "reset":
		return printReset(c.stdout, body)
	}
	return printLimits(c.stdout, body)
}

// resetAnswer is the part of a limits_reset answer that limits reset prints.
type resetAnswer struct {
	Status string `json:"status"`
	Reset  struct {
		Subject string `json:"subject"`
		At      string `json:"reset_at"`
		By      string `json:"reset_by"`
		TraceID string `json:"trace_id"`
	} `json:"reset"`
	Meaning string `json:"meaning"`
}

// printReset writes a limits_reset answer for a person: whose windows
// start afresh, when, by whom, and the trace id the reset is logged with.
func printReset(w io.Writer, body []byte) error {
	a, err := decodeAnswer[resetAnswer]("limits reset", body)
	if err != nil {
		return err
	}
	fields := newFieldWriter(w)
	for _, kv := range [][2]string{{"status", a.Status}, {"subject", a.Reset.Subject}, {"reset_at", a.Reset.At},
		{"reset_by", a.Reset.By}, {"trace_id", a.Reset.TraceID}, {"meaning", a.Meaning}} {
		fields.line(kv[0], kv[1])
	}
	return fields.flush()
}

// printLimits prints the budgets of a limits_shown answer as a table.
func printLimits(w io.Writer, body []byte) error {
	var ans struct {
		Limits struct {
			Subject     string `json:"subject"`
			PreviewRate string `json:"preview_rate"`
			ConfirmRate string `json:"confirm_rate"`
			Budgets     []struct {
				Name, Window, Action, Currency, Max, Used, Left string
				NextFreeAt                                      string `json:"next_free_at"`
			} `json:"budgets"`
			LastReset *struct {
				At string `json:"reset_at"`
				By string `json:"reset_by"`
			} `json:"last_reset"`
		} `json:"limits"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return fmt.Errorf("limits: decode answer: %w", err)
	}
	l := ans.Limits
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Name, b.Window, action, currency, b.Max, b.Used, b.Left, b.NextFreeAt)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if l.PreviewRate != "" || l.ConfirmRate != "" {
		fmt.Fprintf(w, "rates of %s: preview %s, confirm %s\n", l.Subject, orNone(l.PreviewRate), orNone(l.ConfirmRate))
	}
	if l.LastReset != nil {
		fmt.Fprintf(w, "windows reset at %s by %s\n", l.LastReset.At, l.LastReset.By)
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

// do sends one authenticated request and returns the body of a 2xx answer,
// or an error carrying the server's message.
func (c *cli) do(ctx context.Context, method, path string, payload []byte) ([]byte, error) {
	var reqBody io.Reader
	if payload != nil {
		reqBody = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, reqBody)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &refusal{method: method, path: path, code: resp.StatusCode, body: body}
	}
	return body, nil
}

// refusal is an answer of the gateway outside 2xx, kept as it came so that
// --json prints it as it is.
type refusal struct {
	method, path string
	code         int
	body         []byte
}

// Error is the refusal for a person: the request, the HTTP status, the
// gateway's status and meaning, and each entry of its errors on a line.
func (r *refusal) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", r.method, r.path, r.code, serverMessage(r.body))
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

// decodeList accepts a JSON array of operations or an object holding one
// under "operations" or "items".
func decodeList(body []byte) ([]operation, error) {
	var ops []operation
	if err := json.Unmarshal(body, &ops); err == nil {
		return ops, nil
	}
	var wrapped struct {
		Operations []operation `json:"operations"`
		Items      []operation `json:"items"`
	}
	if err := json.Unmarshal(body, &wrapped); err != nil {
		return nil, fmt.Errorf("decode answer: %w", err)
	}
	if wrapped.Operations != nil {
		return wrapped.Operations, nil
	}
	return wrapped.Items, nil
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

// age is how long ago the RFC 3339 time ts was, rounded to seconds, or "".
func age(ts string) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return ""
	}
	return time.Since(t).Round(time.Second).String()
}

// oneLine folds a multi-line text into one table cell.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
