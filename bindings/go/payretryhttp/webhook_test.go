package payretryhttp_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	payretry "github.com/payretry/payretry/bindings/go"
	"github.com/payretry/payretry/bindings/go/payretryhttp"
)

const secret = "whsec_payretryhttp_test_secret"

// stripeSignature is Stripe-Signature as Stripe computes it.
func stripeSignature(key string, t int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(key))
	fmt.Fprintf(m, "%d.", t)
	m.Write(body)
	return fmt.Sprintf("t=%d,v1=%s", t, hex.EncodeToString(m.Sum(nil)))
}

func post(t *testing.T, url string, body []byte, signature string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if signature != "" {
		req.Header.Set("Stripe-Signature", signature)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func TestWebhookHandlerAnswersTheProvidersAck(t *testing.T) {
	if os.Getenv("PAYRETRY_PREFIX") == "" {
		if os.Getenv("PAYRETRY_REQUIRE_BINDINGS") == "1" {
			t.Fatal("PAYRETRY_REQUIRE_BINDINGS=1 but PAYRETRY_PREFIX is not set")
		}
		t.Skip("PAYRETRY_PREFIX is not set (an install prefix of libpayretry; see ../README.md)")
	}
	// Nothing is sent to the provider: a Stripe event is verified and recorded only.
	c, err := payretry.NewClient(`{"provider":"stripe","base_url":"http://127.0.0.1:1","ledger":"memory:",` +
		`"webhook":{"secret":"` + secret + `"}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/stripe", payretryhttp.WebhookHandler(c))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	url := srv.URL + "/hooks/stripe"

	event := []byte(`{"id":"evt_http_1","object":"event","type":"payment_intent.succeeded",` +
		`"data":{"object":{"id":"pi_1","object":"payment_intent","status":"succeeded","metadata":{"order_id":"o-http"}}}}`)
	if status, _, body := post(t, url, event, stripeSignature(secret, time.Now().Unix(), event)); status != 200 || body != "" {
		t.Fatalf("signed: %d %q", status, body)
	}
	status, ctype, body := post(t, url, event, stripeSignature("whsec_other", time.Now().Unix(), event))
	if status != 400 || ctype != "text/plain" || body != "refused" {
		t.Fatalf("forged: %d %q %q", status, ctype, body)
	}
	if status, _, _ := post(t, url, event, ""); status != 400 {
		t.Fatalf("unsigned: %d", status)
	}
	if status, _, _ := post(t, url, bytes.Repeat([]byte("x"), payretryhttp.MaxWebhookBytes+1), "t=1,v1=00"); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("too large: %d", status)
	}
	c.Close()
	if status, _, _ := post(t, url, event, stripeSignature(secret, time.Now().Unix(), event)); status != http.StatusServiceUnavailable {
		t.Fatalf("after Close: %d", status)
	}
}
