package payretry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// concurrencyProbe is a Stripe-shaped provider that holds each create 100 ms
// and records how many it held at once.
type concurrencyProbe struct {
	now, most atomic.Int64
}

func (p *concurrencyProbe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := p.now.Add(1)
	defer p.now.Add(-1)
	for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
	}
	time.Sleep(100 * time.Millisecond)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"id":"pi_1","object":"payment_intent","status":"succeeded"}`))
}

func TestSubmitBatchKeepsAtMostMaxInFlight(t *testing.T) {
	need(t)
	probe := &concurrencyProbe{}
	srv := httptest.NewServer(probe)
	defer srv.Close()
	c := newClient(t, config(t, nil, map[string]any{"base_url": srv.URL}))
	payments := make([]payretry.Payment, 8)
	for i := range payments {
		order := newOrder(t)
		payments[i] = payretry.Payment{OrderID: order, Body: body(order)}
	}
	for i, r := range c.SubmitBatch(context.Background(), payments, 3) {
		if r.Err != nil || r.Result.Outcome != payretry.Succeeded {
			t.Fatalf("payment %d: %+v", i, r)
		}
	}
	if most := probe.most.Load(); most != 3 {
		t.Fatalf("the provider held %d requests at once, want 3 (maxInFlight)", most)
	}
}
