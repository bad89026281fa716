package payretryhttp

import (
	"errors"
	"net/http"
	"strconv"

	payretry "github.com/payretry/payretry/bindings/go"
)

// MaxWebhookBytes bounds the body WebhookHandler reads: providers'
// notifications are a few KiB; a larger body is answered 413 unread.
const MaxWebhookBytes = 1 << 20

// WebhookHandler answers a payment provider's notifications (webhooks):
// every request goes to c.ApplyWebhook as received and payretry's reply is
// written back as it is (the provider's ack when accepted, 400 when refused,
// 503 when it could not be stored). A failed call is answered 500 (503 once
// the client is closed), never 2xx, so that the provider delivers it again:
//
//	mux.Handle("POST /hooks/stripe", payretryhttp.WebhookHandler(client))
func WebhookHandler(c *payretry.Client) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, MaxWebhookBytes)
		reply, err := c.ApplyWebhook(r)
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		case errors.Is(err, payretry.ErrClosed):
			http.Error(w, "payretry client is closed", http.StatusServiceUnavailable)
			return
		case err != nil:
			http.Error(w, "webhook not applied", http.StatusInternalServerError)
			return
		}
		if reply.ContentType != "" {
			w.Header().Set("Content-Type", reply.ContentType)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(reply.Body)))
		w.WriteHeader(reply.Status)
		_, _ = w.Write(reply.Body)
	})
}
