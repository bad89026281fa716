package payretry_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	payretry "github.com/payretry/payretry/bindings/go"
)

const webhookSecret = "whsec_go_binding_webhook_secret"

// stripeSignature is Stripe-Signature as Stripe computes it:
// t=<unix s>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>.
func stripeSignature(secret string, t int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%d.", t)
	m.Write(body)
	return fmt.Sprintf("t=%d,v1=%s", t, hex.EncodeToString(m.Sum(nil)))
}

func stripeEvent(id, order, object string) []byte {
	return []byte(fmt.Sprintf(`{
  "id": %q,
  "object": "event",
  "type": "payment_intent.succeeded",
  "data": {"object": {"id": "pi_%s", "object": %q, "status": "succeeded", "metadata": {"order_id": %q}}}
}`, id, id, object, order))
}

func TestApplyWebhookSettlesAnUnknownPaymentOnceAndRefusesAForgery(t *testing.T) {
	need(t)
	c := newClient(t, config(t, map[string]any{"max_attempts": 2}, map[string]any{
		"webhook": map[string]any{"secret": webhookSecret}}))
	order := newOrder(t)
	script(t, order, "lost_response", "lost_response")
	r, err := c.Submit(context.Background(), payretry.Payment{OrderID: order, Body: body(order)})
	if err != nil || r.Outcome != payretry.Unknown {
		t.Fatalf("submit: %v %+v", err, r)
	}

	event := stripeEvent("evt_go_"+order, order, "payment_intent")
	req := httptest.NewRequest("POST", "https://shop.example/hooks/stripe", bytes.NewReader(event))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", stripeSignature(webhookSecret, time.Now().Unix(), event))
	reply, err := c.ApplyWebhook(req)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Status != 200 || len(reply.Body) != 0 || reply.Verdict != "accepted" || reply.Scheme != "stripe" {
		t.Fatalf("%d %q %q: %s", reply.Status, reply.Body, reply.Verdict, reply.JSON)
	}
	if len(reply.Events) != 1 || reply.Events[0].Effect != "settled" || reply.Events[0].OrderID != order ||
		reply.Events[0].StateBefore != "UNKNOWN" || reply.Events[0].StateAfter != "SUCCEEDED" {
		t.Fatalf("events: %s", reply.JSON)
	}
	// A library from before the events' money_state leaves it MoneyUnknown;
	// one with it names the state the typed event carries.
	var raw struct {
		Events []struct {
			MoneyState *string `json:"money_state"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(reply.JSON), &raw); err != nil || len(raw.Events) != 1 {
		t.Fatalf("%v: %s", err, reply.JSON)
	}
	if m := raw.Events[0].MoneyState; (m == nil && reply.Events[0].MoneyState != payretry.MoneyUnknown) ||
		(m != nil && *m != reply.Events[0].MoneyState.String()) {
		t.Fatalf("event money state %v: %s", reply.Events[0].MoneyState, reply.JSON)
	}
	if rec, err := c.LedgerGet(order); err != nil || rec.Payment.State != "SUCCEEDED" {
		t.Fatalf("ledger: %v %+v", err, rec)
	}

	// Delivered again: a duplicate, acknowledged.
	again, err := c.ApplyWebhookRequest(context.Background(), payretry.WebhookRequest{
		Method: "POST", URL: "https://shop.example/hooks/stripe", Body: event,
		Headers: []payretry.Header{{Name: "stripe-signature", Value: req.Header.Get("Stripe-Signature")}},
	})
	if err != nil || again.Status != 200 || len(again.Events) != 1 || again.Events[0].Effect != "duplicate" {
		t.Fatalf("again: %v %s", err, again.JSON)
	}

	// Signed with another secret: refused, and nothing changes.
	forged := httptest.NewRequest("POST", "/hooks/stripe", bytes.NewReader(event))
	forged.Header.Set("Stripe-Signature", stripeSignature("whsec_someone_else", time.Now().Unix(), event))
	refused, err := c.ApplyWebhook(forged)
	if err != nil || refused.Status != 400 || refused.ContentType != "text/plain" || string(refused.Body) != "refused" ||
		refused.Verdict != "refused" || refused.Why == "" {
		t.Fatalf("forged: %v %d %q %s", err, refused.Status, refused.Body, refused.JSON)
	}
	if charges(t, order) != 1 {
		t.Fatalf("charges: %d", charges(t, order))
	}
}

func TestApplyWebhookErrors(t *testing.T) {
	need(t)
	plain := newClient(t, config(t, nil, nil))
	_, err := plain.ApplyWebhookRequest(context.Background(), payretry.WebhookRequest{Method: "POST", Body: []byte("{}")})
	if !errors.Is(err, payretry.ErrConfig) {
		t.Fatalf("no webhook block: %v", err)
	}
	c := newClient(t, config(t, nil, map[string]any{"webhook": map[string]any{"secret": webhookSecret}}))
	_, err = c.ApplyWebhookRequest(context.Background(), payretry.WebhookRequest{
		Method: "POST", Headers: []payretry.Header{{Name: "Stripe-Signature", Value: "t=1\x00"}}})
	if !errors.Is(err, payretry.ErrInvalid) {
		t.Fatalf("NUL: %v", err)
	}
	_ = c.Close()
	if _, err := c.ApplyWebhookRequest(context.Background(), payretry.WebhookRequest{Method: "POST"}); !errors.Is(err, payretry.ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}
