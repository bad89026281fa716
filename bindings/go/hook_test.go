package payretry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	payretry "github.com/payretry/payretry/bindings/go"
)

// The hook sees every attempt of a payment with the same key and bytes, and
// the headers it adds do not break the request.
func TestRequestHookSeesEveryAttempt(t *testing.T) {
	need(t)
	var mu sync.Mutex
	var seen []payretry.AttemptInfo
	c := newClient(t, config(t, nil, nil), payretry.WithRequestHook(func(info payretry.AttemptInfo, h *payretry.Headers) error {
		mu.Lock()
		seen = append(seen, info)
		mu.Unlock()
		return h.Add("X-Go-Hook", "attempt")
	}))
	order := newOrder(t)
	script(t, order, "lost_response", "none")
	r := submit(t, c, order)
	if r.Outcome != payretry.Succeeded || r.Attempts != 2 || r.HookErr != nil {
		t.Fatalf("got %v after %d attempts (hook error %v): %s", r.Outcome, r.Attempts, r.HookErr, r.JSON)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("the hook saw %d attempts, want 2", len(seen))
	}
	for i, a := range seen {
		if a.Attempt != i+1 || a.Method != "POST" || a.OrderID != order || a.IdempotencyKey != r.IdempotencyKey ||
			a.Path != "/v1/payments" || !strings.HasSuffix(a.URL, "/v1/payments") || a.Time.IsZero() {
			t.Errorf("attempt %d: %+v", i+1, a)
		}
		if !bytes.Equal(a.Body, seen[0].Body) || len(a.Body) == 0 {
			t.Errorf("attempt %d sent other bytes: %q vs %q", i+1, a.Body, seen[0].Body)
		}
	}
	if n := charges(t, order); n != 1 {
		t.Fatalf("charges = %d", n)
	}
}

var errNoSigningKey = errors.New("no signing key")

// A hook that refuses (an error or a panic) before anything was sent fails
// the call with ErrHook wrapping its own error, and nothing is charged.
func TestRequestHookRefusalIsErrHookAndSendsNothing(t *testing.T) {
	need(t)
	for name, hook := range map[string]payretry.RequestHook{
		"error": func(payretry.AttemptInfo, *payretry.Headers) error { return errNoSigningKey },
		"panic": func(payretry.AttemptInfo, *payretry.Headers) error { panic("signer exploded") },
	} {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, config(t, nil, nil), payretry.WithRequestHook(hook))
			order := newOrder(t)
			r, err := c.Submit(context.Background(), payretry.Payment{OrderID: order, Body: body(order)})
			if r != nil || !errors.Is(err, payretry.ErrHook) {
				t.Fatalf("got %v, %v", r, err)
			}
			switch name {
			case "error":
				if !errors.Is(err, errNoSigningKey) {
					t.Errorf("the hook's error is not wrapped: %v", err)
				}
			case "panic":
				if !strings.Contains(err.Error(), "panicked: signer exploded") {
					t.Errorf("the panic is not reported: %v", err)
				}
			}
			if n := charges(t, order); n != 0 {
				t.Fatalf("charges = %d", n)
			}
		})
	}
}

// A refusal after an attempt that may have been processed cannot be an
// error: the payment is Unknown, and the Result carries the hook's error.
func TestRequestHookRefusalAfterALostResponseIsUnknown(t *testing.T) {
	need(t)
	c := newClient(t, config(t, nil, nil), payretry.WithRequestHook(func(info payretry.AttemptInfo, _ *payretry.Headers) error {
		if info.Attempt > 1 {
			return errNoSigningKey
		}
		return nil
	}))
	order := newOrder(t)
	script(t, order, "lost_response", "none")
	r := submit(t, c, order)
	if r.Outcome != payretry.Unknown || r.Delivery != payretry.MaybeProcessed || !errors.Is(r.HookErr, errNoSigningKey) {
		t.Fatalf("got %v/%v (hook error %v): %s", r.Outcome, r.Delivery, r.HookErr, r.JSON)
	}
	if n := charges(t, order); n != 1 {
		t.Fatalf("charges = %d (the lost response was a charge)", n)
	}
}

// Headers the library owns are refused by name, and a Headers kept past its
// hook is dead.
func TestRequestHookHeadersRules(t *testing.T) {
	need(t)
	var mu sync.Mutex
	var kept *payretry.Headers
	var addErrs []error
	c := newClient(t, config(t, nil, nil), payretry.WithRequestHook(func(_ payretry.AttemptInfo, h *payretry.Headers) error {
		errs := []error{h.Add("Idempotency-Key", "mine"), h.Add("Content-Type", "text/plain"),
			h.Add("X-Bad", "line\r\nbreak"), h.Add("Bad Name", "v"), h.Add("X-Fine", "v")}
		mu.Lock()
		defer mu.Unlock()
		kept, addErrs = h, errs
		return nil
	}))
	order := newOrder(t)
	if r := submit(t, c, order); r.Outcome != payretry.Succeeded {
		t.Fatalf("got %v: %s", r.Outcome, r.JSON)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(addErrs) != 5 {
		t.Fatalf("the hook ran %d Adds", len(addErrs))
	}
	for i, err := range addErrs[:4] {
		if !errors.Is(err, payretry.ErrInvalid) {
			t.Errorf("Add #%d: want ErrInvalid, got %v", i+1, err)
		}
	}
	if err := addErrs[0]; err == nil || !strings.Contains(strings.ToLower(err.Error()), "idempotency-key") {
		t.Errorf("the refusal does not name the header: %v", err)
	}
	if addErrs[4] != nil {
		t.Errorf("Add X-Fine: %v", addErrs[4])
	}
	if err := kept.Add("X-Late", "v"); !errors.Is(err, payretry.ErrInvalid) {
		t.Errorf("Add after the hook returned: %v", err)
	}
}

// Lookups go through the hook too; a refused one leaves the payment UNKNOWN
// and the caller gets the hook's error (Query's Result, Reconcile's report).
func TestRequestHookRefusingLookupsLeavesThePaymentUnknown(t *testing.T) {
	need(t)
	base := startTestSim(t, "--profile", "checkout_com", "--api-key", apiKey)
	var lookups atomic.Int64
	c := newClient(t, config(t, nil, map[string]any{"provider": "checkout_com", "base_url": base, "create_path": "/payments"}),
		payretry.WithRequestHook(func(info payretry.AttemptInfo, _ *payretry.Headers) error {
			if info.Method == "GET" {
				lookups.Add(1)
				if !strings.HasPrefix(info.Path, "/payments?reference=") || len(info.Body) != 0 {
					return fmt.Errorf("unexpected lookup %s %s", info.Method, info.Path)
				}
				return errNoSigningKey
			}
			return nil
		}))
	order := newOrder(t)
	scriptAt(t, base, order, "lost_response")
	if r := submit(t, c, order); r.Outcome != payretry.Unknown {
		t.Fatalf("got %v: %s", r.Outcome, r.JSON)
	}
	q, err := c.Query(context.Background(), order)
	if err != nil || q.Outcome != payretry.Unknown || !errors.Is(q.HookErr, errNoSigningKey) {
		t.Fatalf("Query: %+v, %v", q, err)
	}
	rep, err := c.Reconcile(context.Background(), nil)
	if err != nil || rep.Unknown != 1 || !errors.Is(rep.HookErrs[order], errNoSigningKey) {
		t.Fatalf("Reconcile: %+v, %v", rep, err)
	}
	if lookups.Load() < 2 {
		t.Fatalf("the hook saw %d lookups, want one per Query and Reconcile at least", lookups.Load())
	}
}
