package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/harness/testenv"

	"github.com/oncegate/oncegate/status"
)

// gatewayURL and downstreamURL are those of the stack TestMain starts; the
// examples run against it.
var gatewayURL, downstreamURL string

func TestMain(m *testing.M) {
	testenv.MainWithStack(m, testenv.StackOptions{}, func(s *testenv.Stack) {
		gatewayURL, downstreamURL = s.GatewayURL, s.DownstreamURL
	})
}

// newClient is the client of the examples: subject alice of the dev tokens.
func newClient() *client.Client {
	c, err := client.New(gatewayURL, "dev-alice")
	if err != nil {
		panic(err)
	}
	return c
}

// transfer is the params of payments.transfer. Amount is a Decimal, sent
// as a JSON string.
type transfer struct {
	Amount   client.Decimal `json:"amount"`
	Currency string         `json:"currency"`
	PayeeID  string         `json:"payee_id"`
	Memo     string         `json:"memo,omitempty"`
}

// transferResult is the part of the simulator's transfer the examples read.
type transferResult struct {
	Amount          client.Decimal `json:"amount"`
	Currency        string         `json:"currency"`
	ClientReference string         `json:"client_reference"`
}

func ExampleClient_Preview() {
	ctx := context.Background()
	c := newClient()
	p, err := c.Preview(ctx, "payments.transfer", transfer{Amount: "12.50", Currency: " usd ", PayeeID: "p-preview"})
	if err != nil {
		fmt.Println(err)
		return
	}
	detail, err := p.DecodePreview()
	if err != nil {
		fmt.Println(err)
		return
	}
	currency, _ := detail.Params.String("currency")
	fmt.Println(p.Status, currency, p.Fingerprint != "", p.ExpiresAt.After(time.Now()))
	// Output: preview_ready USD true true
}

func ExampleClient_Confirm() {
	ctx := context.Background()
	c := newClient()
	params := transfer{Amount: "25.5", Currency: "USD", PayeeID: "p-confirm", Memo: "rent"}
	p, err := c.Preview(ctx, "payments.transfer", params)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Show p to the user; once they approve, confirm with its fingerprint.
	done, err := c.Confirm(ctx, "payments.transfer", p.Fingerprint, params)
	if err == nil && done.Status == status.InProgress {
		done, err = c.Wait(ctx, done.OperationID) // the downstream was slow
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	var r transferResult
	if err := done.DecodeResult(&r); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(done.Status, r.Amount, r.Currency, r.ClientReference == p.OperationID)

	// The same confirm again (a retry, a re-planning agent) replays the first outcome.
	again, err := c.Confirm(ctx, "payments.transfer", p.Fingerprint, params)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(again.Status, again.Replayed, again.ResultRef == done.ResultRef)
	// Output:
	// completed 25.5 USD true
	// already_completed true true
}

func ExampleClient_Wait() {
	ctx := context.Background()
	c := newClient()
	// The downstream holds its answer for 3s after committing: longer than
	// the gateway's confirm budget, so the confirm answers in_progress.
	if err := setFaults(`{"hang_after_commit_ms":3000}`); err != nil {
		fmt.Println(err)
		return
	}
	defer clearFaults()
	params := transfer{Amount: "30", Currency: "EUR", PayeeID: "p-wait"}
	p, err := c.Preview(ctx, "payments.transfer", params)
	if err != nil {
		fmt.Println(err)
		return
	}
	started, err := c.Confirm(ctx, "payments.transfer", p.Fingerprint, params)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(started.Status, started.PollAfter() > 0)

	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	done, err := c.Wait(ctx, started.OperationID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(done.Status, done.ResultRef != "")
	// Output:
	// in_progress true
	// completed true
}

func ExampleClient_Status() {
	ctx := context.Background()
	c := newClient()
	params := transfer{Amount: "40", Currency: "USD", PayeeID: "p-status"}
	p, err := c.Preview(ctx, "payments.transfer", params)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := confirmAndWait(ctx, c, p.Fingerprint, params); err != nil {
		fmt.Println(err)
		return
	}
	st, err := c.Status(ctx, p.OperationID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(st.Status, st.Status.Terminal())

	_, err = c.Status(ctx, "00000000000000000000000000000000")
	fmt.Println(errors.Is(err, client.ErrUnknownOperation))
	// Output:
	// completed true
	// true
}

// Refusals are errors of a class, checked with errors.Is; the *Error
// carries the details.
func Example_errors() {
	ctx := context.Background()
	c := newClient()

	// A field the action neither binds nor passes on is refused, named.
	_, err := c.Preview(ctx, "payments.transfer", map[string]any{"amount": "5", "currency": "USD", "payee_id": "p-errors", "colour": "red"})
	var e *client.Error
	if errors.As(err, &e) && errors.Is(err, client.ErrInvalidParams) {
		for _, p := range e.Problems {
			fmt.Println("invalid:", p.Field)
		}
	}

	params := transfer{Amount: "5", Currency: "USD", PayeeID: "p-errors"}
	p, err := c.Preview(ctx, "payments.transfer", params)
	if err != nil {
		fmt.Println(err)
		return
	}
	changed := params
	changed.Amount = "500"
	_, err = c.Confirm(ctx, "payments.transfer", p.Fingerprint, changed)
	fmt.Println("security:", errors.Is(err, client.ErrSecurity))

	_, err = c.Preview(ctx, "payments.nope", params)
	fmt.Println("unknown action:", errors.Is(err, client.ErrUnknownAction))

	other, _ := client.New(gatewayURL, "not-a-token")
	_, err = other.Preview(ctx, "payments.transfer", params)
	fmt.Println("unauthenticated:", errors.Is(err, client.ErrUnauthenticated))
	// Output:
	// invalid: colour
	// security: true
	// unknown action: true
	// unauthenticated: true
}

// The amnesia guard: a preview of what was just done names the recent
// operation, and its confirm must acknowledge it.
func Example_repeat() {
	ctx := context.Background()
	c := newClient()
	params := transfer{Amount: "7.25", Currency: "USD", PayeeID: "p-repeat"}
	first, err := c.Preview(ctx, "payments.transfer", params)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := confirmAndWait(ctx, c, first.Fingerprint, params); err != nil {
		fmt.Println(err)
		return
	}

	again, err := c.Preview(ctx, "payments.transfer", params)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("recent:", again.RecentOperation.OperationID == first.OperationID, again.RecentOperation.State)

	_, err = c.Confirm(ctx, "payments.transfer", again.Fingerprint, params)
	var e *client.Error
	if errors.As(err, &e) && errors.Is(err, client.ErrRepeatUnacknowledged) {
		fmt.Println("unacknowledged:", e.RecentOperation.OperationID == first.OperationID)
	}

	// Only because the user asked to pay again:
	done, err := c.Confirm(ctx, "payments.transfer", again.Fingerprint, params, client.AcknowledgeRepeatOf(first.OperationID))
	if err == nil && done.Status == status.InProgress {
		done, err = c.Wait(ctx, done.OperationID)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(done.Status)
	// Output:
	// recent: true completed
	// unacknowledged: true
	// completed
}

// confirmAndWait confirms a payments.transfer and waits until it is final.
func confirmAndWait(ctx context.Context, c *client.Client, fingerprint string, params transfer) error {
	a, err := c.Confirm(ctx, "payments.transfer", fingerprint, params)
	if err == nil && !a.Status.Terminal() {
		_, err = c.Wait(ctx, a.OperationID)
	}
	return err
}

// setFaults sets the downstream simulator's faults.
func setFaults(body string) error {
	req, err := http.NewRequest(http.MethodPut, downstreamURL+"/_sim/faults", bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("set faults: HTTP %d", resp.StatusCode)
	}
	return nil
}

// clearFaults removes the simulator's faults.
func clearFaults() {
	req, _ := http.NewRequest(http.MethodDelete, downstreamURL+"/_sim/faults", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	} else {
		fmt.Fprintln(os.Stderr, "clear faults:", err)
	}
}
