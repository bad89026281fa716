// Package payretryhttp serves a payretry Client over HTTP: its metrics, for a
// Prometheus scraper (mux.Handle("/metrics", payretryhttp.MetricsHandler(client))),
// and a payment provider's notifications (mux.Handle("POST /hooks/stripe",
// payretryhttp.WebhookHandler(client))).
package payretryhttp

import (
	"errors"
	"net/http"

	payretry "github.com/payretry/payretry/bindings/go"
)

// ContentType is the Prometheus text exposition format the handler serves.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// MetricsHandler answers GET and HEAD with c.Metrics(): 200 and the text,
// 503 once the client is closed, 500 when the library fails, and 405 for any
// other method.
func MetricsHandler(c *payretry.Client) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		text, err := c.Metrics()
		switch {
		case errors.Is(err, payretry.ErrClosed):
			http.Error(w, "payretry client is closed", http.StatusServiceUnavailable)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write([]byte(text))
	})
}
