package payretryhttp_test

import (
	"log"
	"net/http"

	payretry "github.com/payretry/payretry/bindings/go"
	"github.com/payretry/payretry/bindings/go/payretryhttp"
)

// The README's "Webhooks" snippet, compiled (not run: it serves forever).
func ExampleWebhookHandler() {
	client, err := payretry.NewClient(`{"provider":"stripe","base_url":"https://api.stripe.com",` +
		`"auth":{"bearer_env":"STRIPE_KEY"},"webhook":{"secret_env":"STRIPE_WEBHOOK_SECRET"},` +
		`"ledger":"sqlite:///var/lib/shop/payments.db"}`)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/stripe", payretryhttp.WebhookHandler(client))
	mux.Handle("/metrics", payretryhttp.MetricsHandler(client))
	log.Fatal(http.ListenAndServe(":8080", mux))
}
