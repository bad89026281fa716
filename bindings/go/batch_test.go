package payretry_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	payretry "github.com/payretry/payretry/bindings/go"
)

func TestSubmitBatchAnswersEachPaymentInOrder(t *testing.T) {
	need(t)
	c := newClient(t, config(t, nil, nil))
	declined := newOrder(t)
	script(t, declined, "decline")
	bad := newOrder(t) + "\x00"
	var payments []payretry.Payment
	for i := 0; i < 6; i++ {
		order := newOrder(t)
		payments = append(payments, payretry.Payment{OrderID: order, Body: body(order)})
	}
	payments = append(payments, payretry.Payment{OrderID: declined, Body: body(declined)},
		payretry.Payment{OrderID: bad, Body: body("x")})
	results := c.SubmitBatch(context.Background(), payments, 3)
	if len(results) != len(payments) {
		t.Fatalf("%d results for %d payments", len(results), len(payments))
	}
	for i, r := range results[:6] {
		if r.Err != nil || r.Result.Outcome != payretry.Succeeded || r.Result.OrderID != payments[i].OrderID {
			t.Errorf("payment %d: %+v", i, r)
		} else if n := charges(t, payments[i].OrderID); n != 1 {
			t.Errorf("payment %d charged %d times", i, n)
		}
	}
	if r := results[6]; r.Err != nil || r.Result.Outcome != payretry.Failed {
		t.Errorf("declined payment: %+v", r)
	}
	if r := results[7]; r.Result != nil || !errors.Is(r.Err, payretry.ErrInvalid) {
		t.Errorf("order id with a NUL: %+v", r)
	}
}

func TestSubmitBatchWithEndedContextStartsNothing(t *testing.T) {
	need(t)
	c := newClient(t, config(t, nil, nil))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	order := newOrder(t)
	results := c.SubmitBatch(ctx, []payretry.Payment{{OrderID: order, Body: body(order)}}, 0)
	if r := results[0]; r.Result != nil || !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("got %+v", r)
	}
	if _, err := c.LedgerGet(order); !errors.Is(err, payretry.ErrNotFound) {
		t.Fatalf("the ledger knows an order that was not started: %v", err)
	}
	if n := charges(t, order); n != 0 {
		t.Fatalf("charges = %d", n)
	}
}

func TestLedgerListFiltersByState(t *testing.T) {
	need(t)
	c := newClient(t, config(t, nil, nil))
	ok, unknown := newOrder(t), newOrder(t)
	submit(t, c, ok)
	lostFourTimes(t, c, unknown)
	all, err := c.LedgerList(payretry.LedgerFilter{})
	if err != nil || len(all) != 2 {
		t.Fatalf("all: %+v, %v", all, err)
	}
	list, err := c.LedgerList(payretry.LedgerFilter{State: "UNKNOWN"})
	if err != nil || len(list) != 1 || list[0].OrderID != unknown || list[0].State != "UNKNOWN" ||
		list[0].Delivery != "maybe_processed" || list[0].Attempts != 4 {
		t.Fatalf("UNKNOWN: %+v, %v", list, err)
	}
	if list, err := c.LedgerList(payretry.LedgerFilter{Limit: 1}); err != nil || len(list) != 1 || list[0].OrderID != ok {
		t.Fatalf("limit 1 (oldest update first): %+v, %v", list, err)
	}
	if list, err := c.LedgerList(payretry.LedgerFilter{UpdatedBefore: all[0].UpdatedAt.Time()}); err != nil || len(list) != 0 {
		t.Fatalf("updated before the first update: %+v, %v", list, err)
	}
	_, err = c.LedgerList(payretry.LedgerFilter{State: "LOST"})
	if !errors.Is(err, payretry.ErrInvalid) || !strings.Contains(err.Error(), "state must be") {
		t.Fatalf("unknown state: %v", err)
	}
}
