package payretry

/*
#include "helpers.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unsafe"
)

// WebhookRequest is a provider's notification as the HTTP server received
// it: the method, the full URL the provider called (scheme and host
// included: Square signs it), every header, and the raw body bytes before
// any parsing (every scheme signs bytes).
type WebhookRequest struct {
	Method  string
	URL     string
	Headers []Header
	Body    []byte
}

// WebhookReply is what to answer the provider (send Status, a Content-Type
// header when ContentType is not empty, and Body, as they are) and what the
// notification did.
type WebhookReply struct {
	Status      int    `json:"-"`
	ContentType string `json:"-"`
	Body        []byte `json:"-"`
	// Verdict: "accepted" (Status is the provider's ack, 2xx), "refused"
	// (400: not verified, malformed, stale or replayed; nothing changed) or
	// "retry" (503: verified but not stored; the provider delivers it again).
	Verdict string         `json:"verdict"`
	Why     string         `json:"why"`
	Scheme  string         `json:"scheme"`
	Events  []WebhookEvent `json:"events"`
	// JSON is the library's whole outcome document (webhook.h).
	JSON string `json:"-"`
}

// WebhookEvent is what one event of a notification did.
type WebhookEvent struct {
	EventID           string `json:"event_id"`
	Type              string `json:"type"`
	OrderID           string `json:"order_id"`
	ProviderPaymentID string `json:"provider_payment_id"`
	ProviderStatus    string `json:"provider_status"`
	// MoneyState: what the event says about the money (webhook.h;
	// MoneyUnknown when it says nothing, or from a library before it). Fulfil
	// on MoneyPaid (or MoneyAuthorized where you capture later), never on a
	// SUCCEEDED StateAfter alone.
	MoneyState MoneyState `json:"money_state"`
	Finding    string     `json:"finding"` // succeeded, failed or noted
	// Effect: settled, recorded, conflict, duplicate, kept, ignored or error.
	Effect      string `json:"effect"`
	StateBefore string `json:"state_before"`
	StateAfter  string `json:"state_after"`
	Why         string `json:"why"`
}

// ApplyWebhook hands payretry the notification r carries, reading its body
// to the end (wrap it in http.MaxBytesReader to bound it), and returns what
// to answer. The URL is r.URL when absolute, else http(s)://r.Host plus
// r.URL.RequestURI() (https when r.TLS is set); forwarded headers are not
// trusted: behind a proxy that rewrites the URL, set the config's
// webhook.notification_url. See ApplyWebhookRequest.
func (c *Client) ApplyWebhook(r *http.Request) (WebhookReply, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return WebhookReply{}, fmt.Errorf("payretry: reading the webhook body: %w", err)
	}
	headers := make([]Header, 0, len(r.Header)+1)
	if r.Host != "" {
		headers = append(headers, Header{Name: "Host", Value: r.Host})
	}
	for name, values := range r.Header {
		for _, v := range values {
			headers = append(headers, Header{Name: name, Value: v})
		}
	}
	return c.ApplyWebhookRequest(r.Context(), WebhookRequest{Method: r.Method, URL: requestURL(r), Headers: headers, Body: body})
}

func requestURL(r *http.Request) string {
	if r.URL.IsAbs() {
		return r.URL.String()
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + r.URL.RequestURI()
}

// ApplyWebhookRequest verifies a notification with the config's "webhook"
// secrets and records each event it names once, settling an UNKNOWN
// payment it reports as succeeded or failed (pay_webhook_apply). A forged,
// stale or unstorable notification is a reply, not an error; an error is a
// failed call: ErrConfig (the profile reads no notifications, or the config
// lacks a secret its scheme needs), ErrInvalid (a NUL in a string), ErrClosed.
// It blocks on the ledger (and, for Mollie, on the provider's lookup); when
// ctx ends first only the wait is abandoned (*AbandonedError): the
// notification is still recorded, and the provider, without its ack,
// delivers it again.
func (c *Client) ApplyWebhookRequest(ctx context.Context, req WebhookRequest) (WebhookReply, error) {
	if strings.IndexByte(req.Method, 0) >= 0 {
		return WebhookReply{}, invalid("webhook method")
	}
	if strings.IndexByte(req.URL, 0) >= 0 {
		return WebhookReply{}, invalid("webhook URL")
	}
	for _, h := range req.Headers {
		if strings.IndexByte(h.Name, 0) >= 0 || strings.IndexByte(h.Value, 0) >= 0 {
			return WebhookReply{}, invalid("webhook header " + fmt.Sprintf("%q", h.Name))
		}
	}
	if err := ctx.Err(); err != nil {
		return WebhookReply{}, fmt.Errorf("payretry: webhook not applied: %w", err)
	}
	type native struct {
		status            int
		contentType, body string
		outcome           string
	}
	out, done, err := call(ctx, c, func(ptr *C.pay_client) (native, error) {
		method, url := C.CString(req.Method), C.CString(req.URL)
		headers := newCHeaders(req.Headers)
		defer func() {
			C.free(unsafe.Pointer(method))
			C.free(unsafe.Pointer(url))
			headers.free()
		}()
		var body unsafe.Pointer
		if len(req.Body) > 0 {
			body = unsafe.Pointer(&req.Body[0])
		}
		var reply C.pay_webhook_reply
		var e C.gopay_err
		if rc := C.gopay_webhook_apply(&reply, ptr, method, url, headers.names, headers.values, headers.count, body,
			C.size_t(len(req.Body)), &e); rc != 0 {
			return native{}, cError(rc, &e)
		}
		return native{int(reply.status), takeBuf(&reply.content_type), takeBuf(&reply.body), takeBuf(&reply.outcome)}, nil
	})
	if !done {
		return WebhookReply{}, &AbandonedError{Op: "webhook", Err: ctx.Err()}
	}
	if err != nil {
		return WebhookReply{}, err
	}
	reply := WebhookReply{Status: out.status, ContentType: out.contentType, Body: []byte(out.body), JSON: out.outcome}
	if err := json.Unmarshal([]byte(out.outcome), &reply); err != nil {
		return reply, fmt.Errorf("payretry: decoding the webhook outcome: %w", err)
	}
	return reply, nil
}
