package payretry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	payretry "github.com/payretry/payretry/bindings/go"
)

// provider is a Stripe-shaped provider that records the headers of every
// create and answers 503 to the first one.
type provider struct {
	mu      sync.Mutex
	headers []http.Header
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.headers = append(p.headers, r.Header.Clone())
	first := len(p.headers) == 1
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if first {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{"type":"api_error","message":"try again"}}`))
		return
	}
	_, _ = w.Write([]byte(`{"id":"pi_1","object":"payment_intent","status":"succeeded"}`))
}

func (p *provider) seen() []http.Header {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]http.Header(nil), p.headers...)
}

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestPaymentHeadersAndTraceparentGoOnEveryAttempt(t *testing.T) {
	need(t)
	prov := &provider{}
	srv := httptest.NewServer(prov)
	defer srv.Close()
	var mu sync.Mutex
	var lines []string
	c := newClient(t, config(t, nil, map[string]any{"base_url": srv.URL}), payretry.WithLogger(func(_ int, line string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, line)
	}))
	order := newOrder(t)
	r, err := c.Submit(context.Background(), payretry.Payment{OrderID: order, Body: body(order),
		Headers:     []payretry.Header{{Name: "X-Tenant", Value: "shop-7"}, {Name: "Stripe-Account", Value: "acct_1"}},
		Traceparent: traceparent})
	if err != nil || r.Outcome != payretry.Succeeded || r.Attempts != 2 {
		t.Fatalf("got %+v, %v", r, err)
	}
	seen := prov.seen()
	if len(seen) != 2 {
		t.Fatalf("the provider saw %d requests, want 2", len(seen))
	}
	for i, h := range seen {
		if h.Get("X-Tenant") != "shop-7" || h.Get("Stripe-Account") != "acct_1" || h.Get("Traceparent") != traceparent {
			t.Errorf("attempt %d headers: %v", i+1, h)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var ofThePayment int
	for _, l := range lines {
		if strings.Contains(l, order) {
			ofThePayment++
			if !strings.Contains(l, traceparent) {
				t.Errorf("a log line of the payment lacks its traceparent: %s", l)
			}
		}
	}
	if ofThePayment < 3 {
		t.Errorf("%d log lines of the payment, want its 2 attempts and its outcome", ofThePayment)
	}
}

func TestBadPaymentHeadersOrTraceparentSendNothing(t *testing.T) {
	need(t)
	prov := &provider{}
	srv := httptest.NewServer(prov)
	defer srv.Close()
	c := newClient(t, config(t, nil, map[string]any{"base_url": srv.URL}))
	for name, tc := range map[string]struct {
		p     payretry.Payment
		names string // what the error must name
	}{
		"the library's own key header": {payretry.Payment{Headers: []payretry.Header{{Name: "Idempotency-Key", Value: "k"}}}, "Idempotency-Key"},
		"traceparent as a header":      {payretry.Payment{Headers: []payretry.Header{{Name: "traceparent", Value: traceparent}}}, "traceparent"},
		"the config's auth header":     {payretry.Payment{Headers: []payretry.Header{{Name: "Authorization", Value: "Bearer other"}}}, "Authorization"},
		"a name that is no token":      {payretry.Payment{Headers: []payretry.Header{{Name: "X Tenant", Value: "v"}}}, ""},
		"a CR/LF in a value":           {payretry.Payment{Headers: []payretry.Header{{Name: "X-Tenant", Value: "a\r\nX-Evil: 1"}}}, ""},
		"a NUL in a value":             {payretry.Payment{Headers: []payretry.Header{{Name: "X-Tenant", Value: "a\x00"}}}, "X-Tenant"},
		"a malformed traceparent":      {payretry.Payment{Traceparent: "00-abc-01"}, "traceparent"},
		"65 headers":                   {payretry.Payment{Headers: make([]payretry.Header, 65)}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			p := tc.p
			for i := range p.Headers {
				if p.Headers[i].Name == "" {
					p.Headers[i] = payretry.Header{Name: "X-H" + strings.Repeat("x", i), Value: "v"}
				}
			}
			p.OrderID = newOrder(t)
			p.Body = body(p.OrderID)
			r, err := c.Submit(context.Background(), p)
			if r != nil || !errors.Is(err, payretry.ErrInvalid) {
				t.Fatalf("got %v, %v", r, err)
			}
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.names)) {
				t.Errorf("the error does not name %q: %v", tc.names, err)
			}
			if _, err := c.LedgerGet(p.OrderID); !errors.Is(err, payretry.ErrNotFound) {
				t.Errorf("refused, yet in the ledger: %v", err)
			}
		})
	}
	if n := len(prov.seen()); n != 0 {
		t.Fatalf("the provider saw %d requests", n)
	}
}
