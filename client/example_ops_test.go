package client_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/oncegate/oncegate/client"
)

// newOps is the ops client of the examples: the dev stack's operator.
func newOps() *client.Ops {
	o, err := client.NewOps(gatewayURL, "dev-ops")
	if err != nil {
		panic(err)
	}
	return o
}

// completedTransfer previews and confirms a payments.transfer of params
// as alice, waits until it completed, and returns its operation id.
func completedTransfer(ctx context.Context, params transfer) (string, error) {
	c := newClient()
	p, err := c.Preview(ctx, "payments.transfer", params)
	if err != nil {
		return "", err
	}
	return p.OperationID, confirmAndWait(ctx, c, p.Fingerprint, params)
}

// An operator reads an operation in full: its record, its bound params
// and its timeline.
func ExampleOps_Operation() {
	ctx := context.Background()
	id, err := completedTransfer(ctx, transfer{Amount: "15.00", Currency: "usd", PayeeID: "p-ops-show"})
	if err != nil {
		fmt.Println(err)
		return
	}

	op, err := newOps().Operation(ctx, id)
	if err != nil {
		fmt.Println(err)
		return
	}
	amount, _ := op.Params.Decimal("amount")
	currency, _ := op.Params.String("currency")
	fmt.Println(op.Status, op.Operation.State, op.Operation.Scope, amount, currency, len(op.Timeline) > 0)
	// Output: operation_found DONE payments.transfer 15 USD true
}

// A decision about an operation that does not wait for one is refused,
// with its class and its state; the refusal's body is kept as received.
func ExampleOps_Resolve() {
	ctx := context.Background()
	id, err := completedTransfer(ctx, transfer{Amount: "16", Currency: "USD", PayeeID: "p-ops-resolve"})
	if err != nil {
		fmt.Println(err)
		return
	}

	_, err = newOps().Resolve(ctx, id, client.Resolution{Outcome: client.OutcomeFailed,
		Reason: "not in the bank statement", Note: "checked the statement of today"})
	var e *client.Error
	if errors.As(err, &e) && errors.Is(err, client.ErrNotAwaitingReview) {
		fmt.Println(e.Status, e.HTTPCode, e.State, len(e.Raw) > 0)
	}
	// Output: not_awaiting_review 409 DONE true
}

// An operator's list of the operations that wait for a person.
func ExampleOps_Operations() {
	list, err := newOps().Operations(context.Background(), client.OperationFilter{State: "needs_manual_review"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(list.Status, list.Count == len(list.Operations))
	// Output: operations_listed true
}

// An agent's token is refused on the ops routes.
func ExampleNewOps() {
	notOps, err := client.NewOps(gatewayURL, "dev-alice")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = notOps.Operations(context.Background(), client.OperationFilter{})
	fmt.Println(errors.Is(err, client.ErrBadRequest))
	// Output: true
}
