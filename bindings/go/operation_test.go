package payretry_test

// Captures, refunds and cancels (SubmitOperation) against the package's
// simulator in Stripe mode and a SQLite ledger: the simulator's truth
// (GET /__admin/truth?order_id=...) says what moved, and a refund that does
// not fit is refused before any byte.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	payretry "github.com/payretry/payretry/bindings/go"
)

// opClient: the stripe profile's own create path (a PaymentIntent, whose id
// the refund names) and a SQLite ledger, as an application has.
func opClient(t *testing.T) *payretry.Client {
	t.Helper()
	var c map[string]any
	if err := json.Unmarshal([]byte(config(t, nil, map[string]any{
		"ledger": "sqlite://" + filepath.Join(t.TempDir(), "ops.db")})), &c); err != nil {
		t.Fatal(err)
	}
	delete(c, "create_path")
	b, _ := json.Marshal(c)
	return newClient(t, string(b))
}

func stripeBody(order string, hold bool) []byte {
	extra := ""
	if hold {
		extra = `,"confirm":true,"payment_method":"pm_card_visa","capture_method":"manual"`
	}
	return []byte(fmt.Sprintf(`{"amount":1000,"currency":"usd","metadata":{"order_id":%q}%s}`, order, extra))
}

// paymentTruth is the simulator's truth of the order's one payment.
type paymentTruth struct {
	Captured       int64            `json:"captured"`
	Refunded       int64            `json:"refunded"`
	Operations     []map[string]any `json:"operations"`
	MovementsByKey map[string]int   `json:"movements_by_key"`
}

func truthOf(t *testing.T, order string) paymentTruth {
	t.Helper()
	resp, err := http.Get(simURL + "/__admin/truth?order_id=" + order)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var truth struct {
		Payments []paymentTruth `json:"payments"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&truth); err != nil {
		t.Fatal(err)
	}
	if len(truth.Payments) != 1 {
		t.Fatalf("truth of %s: %d payments", order, len(truth.Payments))
	}
	return truth.Payments[0]
}

func pay(t *testing.T, c *payretry.Client, order string, hold bool, want payretry.MoneyState) {
	t.Helper()
	r, err := c.Submit(context.Background(), payretry.Payment{OrderID: order, Body: stripeBody(order, hold)})
	if err != nil {
		t.Fatal(err)
	}
	if r.MoneyState != want {
		t.Fatalf("%s: money %v, want %v: %s", order, r.MoneyState, want, r.JSON)
	}
}

func TestPartialRefundMovesTheMoneyOnceAndOneThatDoesNotFitIsRefusedNothingSent(t *testing.T) {
	need(t)
	ctx := context.Background()
	c := opClient(t)
	order := newOrder(t)
	pay(t, c, order, false, payretry.MoneyPaid)

	op := payretry.Operation{OrderID: order, Kind: payretry.Refund, Ref: "r1", Amount: 400,
		Body: `{"reason":"requested_by_customer"}`}
	r, err := c.SubmitOperation(ctx, op)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != payretry.Succeeded || r.MoneyState != payretry.MoneyRefunded || r.OrderID != order+" refund r1" {
		t.Fatalf("refund: %s", r.JSON)
	}
	rec, err := c.LedgerGet(order)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rec.JSON, `"money_state":"partly_refunded"`) {
		t.Errorf("the payment's money did not move: %s", rec.JSON)
	}
	truth := truthOf(t, order)
	if truth.Refunded != 400 || truth.MovementsByKey[r.IdempotencyKey] != 1 {
		t.Fatalf("truth after the refund: %+v", truth)
	}

	// 700 of the 600 left: refused by the ledger's guard, no row, no request.
	_, err = c.SubmitOperation(ctx, payretry.Operation{OrderID: order, Kind: payretry.Refund, Ref: "r2", Amount: 700})
	if !errors.Is(err, payretry.ErrInvalid) || !strings.Contains(err.Error(), "refused, nothing sent") {
		t.Fatalf("a refund beyond what is left: %v", err)
	}
	if _, err := c.LedgerGet(order + " refund r2"); !errors.Is(err, payretry.ErrNotFound) {
		t.Errorf("a refused refund left a row: %v", err)
	}
	if truth := truthOf(t, order); truth.Refunded != 400 || len(truth.Operations) != 1 {
		t.Fatalf("truth after the refused refund: %+v", truth)
	}

	// The same ref again is the same refund; asked otherwise, a mismatch.
	again, err := c.SubmitOperation(ctx, op)
	if err != nil || !again.FromLedger || again.IdempotencyKey != r.IdempotencyKey {
		t.Fatalf("the same ref again: %v %+v", err, again)
	}
	op.Amount = 300
	if _, err := c.SubmitOperation(ctx, op); !errors.Is(err, payretry.ErrMismatch) {
		t.Fatalf("the same ref, another amount: %v", err)
	}
	if _, err := c.SubmitOperation(ctx, payretry.Operation{OrderID: order, Kind: payretry.Refund, Ref: "r\x00"}); !errors.Is(err, payretry.ErrInvalid) {
		t.Fatalf("a NUL in the ref: %v", err)
	}
	if _, err := c.SubmitOperation(ctx, payretry.Operation{OrderID: "go-never-paid", Kind: payretry.Refund, Ref: "r1", Amount: 1}); !errors.Is(err, payretry.ErrNotFound) {
		t.Fatalf("an order not in the ledger: %v", err)
	}
}

func TestAHoldIsCapturedInPartAndAnotherCanceled(t *testing.T) {
	need(t)
	ctx := context.Background()
	c := opClient(t)
	held := newOrder(t)
	pay(t, c, held, true, payretry.MoneyAuthorized)
	r, err := c.SubmitOperation(ctx, payretry.Operation{OrderID: held, Kind: payretry.Capture, Ref: "c1", Amount: 600})
	if err != nil || r.Outcome != payretry.Succeeded || r.MoneyState != payretry.MoneyPaid {
		t.Fatalf("capture: %v %+v", err, r)
	}
	if got := truthOf(t, held).Captured; got != 600 {
		t.Fatalf("captured %d, want 600", got)
	}
	if _, err := c.SubmitOperation(ctx, payretry.Operation{OrderID: held, Kind: payretry.Cancel, Ref: "x1"}); !errors.Is(err, payretry.ErrInvalid) {
		t.Fatalf("a captured payment canceled: %v", err)
	}

	other := newOrder(t)
	pay(t, c, other, true, payretry.MoneyAuthorized)
	x, err := c.SubmitOperation(ctx, payretry.Operation{OrderID: other, Kind: payretry.Cancel, Ref: "x1"})
	if err != nil || x.Outcome != payretry.Succeeded {
		t.Fatalf("cancel: %v %+v", err, x)
	}
	rec, err := c.LedgerGet(other)
	if err != nil || !strings.Contains(rec.JSON, `"money_state":"failed"`) {
		t.Fatalf("the canceled payment's row: %v %+v", err, rec)
	}
	if payretry.Cancel.String() != "cancel" {
		t.Errorf("Cancel.String() = %q", payretry.Cancel.String())
	}
}
