package payretry

// The request hook: a Go function called before every attempt of every
// payment and before every status lookup, to add headers (a signature) or
// to refuse the request.

/*
#include "helpers.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// AttemptInfo is what is about to be sent (pay_attempt_info), copied into Go
// values: the hook may keep it.
type AttemptInfo struct {
	Method         string // "POST" for a payment; "GET" or "POST" for a lookup
	URL            string // the full URL
	Path           string // the request target as sent, e.g. "/v1/payments" or "/v1/payment_intents/pi_1?x=1"
	OrderID        string
	IdempotencyKey string
	Body           []byte // the exact bytes of every attempt; empty for a GET lookup
	Attempt        int    // 1-based
	Time           time.Time
}

// Headers adds headers to the one request the hook was called for. It is
// valid only until the hook returns; Add returns an error after that.
type Headers struct {
	ptr *C.pay_headers
}

// Add adds a header to this request. The name must be an HTTP token and the
// value printable with no CR/LF (at most 64 headers of 8 KiB); headers
// payretry sets itself (Content-Type, Host, the idempotency key, ...) are
// refused. Errors are *Error values matching ErrInvalid, naming the problem.
func (h *Headers) Add(name, value string) error {
	if h == nil || h.ptr == nil {
		return &Error{Code: CodeInvalid, Message: "Headers.Add called after the request hook returned"}
	}
	if strings.IndexByte(name, 0) >= 0 {
		return invalid("header name")
	}
	if strings.IndexByte(value, 0) >= 0 {
		return invalid("value of header " + name)
	}
	cName, cValue := C.CString(name), C.CString(value)
	defer C.free(unsafe.Pointer(cName))
	defer C.free(unsafe.Pointer(cValue))
	var e C.gopay_err
	if rc := C.gopay_headers_add(h.ptr, cName, cValue, &e); rc != 0 {
		return cError(rc, &e)
	}
	return nil
}

// RequestHook is called before every attempt of a payment and before every
// status lookup (Query, Reconcile). Returning an error refuses that request:
// Submit then fails with an *Error matching ErrHook (and wrapping the
// hook's error) when nothing had been sent yet, or returns an Unknown Result
// whose HookErr is that error when an earlier attempt may have been
// processed; a refused lookup leaves the payment as it was.
//
// It runs on the client's engine threads for Submit and on the calling
// goroutine's thread for Query and Reconcile, so it may run concurrently with
// itself. Every payment in flight on an engine thread waits while it runs:
// keep it short (a signature, not a network call). A panic in it is
// recovered and refuses the request, as an error would.
type RequestHook func(info AttemptInfo, h *Headers) error

// WithRequestHook installs a request hook on the client.
func WithRequestHook(fn RequestHook) Option {
	return func(o *options) { o.hook = fn }
}

// hookSink is the payload of the C request hook. It keeps the error of the
// last refused request of each order until the call that made it collects it.
type hookSink struct {
	fn       RequestHook
	mu       sync.Mutex
	refusals map[string]error // order id -> why the hook refused its last request
}

func newHookSink(fn RequestHook) *hookSink {
	return &hookSink{fn: fn, refusals: map[string]error{}}
}

func (s *hookSink) refuse(orderID string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refusals[orderID] = err
}

// take removes and returns the refusal recorded for orderID, if any.
func (s *hookSink) take(orderID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.refusals[orderID]
	delete(s.refusals, orderID)
	return err
}

// run calls the Go hook for one request and returns 0 to send it. A panic
// never unwinds into C: it refuses the request.
func (s *hookSink) run(headers *C.pay_headers, info *C.pay_attempt_info) (rc C.int) {
	a := AttemptInfo{
		Method:         goString(info.method),
		URL:            goString(info.url),
		Path:           goString(info.path),
		OrderID:        goString(info.order_id),
		IdempotencyKey: goString(info.idempotency_key),
		Attempt:        int(info.attempt),
		Time:           time.UnixMilli(int64(info.unix_time_ms)),
	}
	if info.body != nil && info.body_len > 0 {
		a.Body = C.GoBytes(info.body, C.int(info.body_len))
	}
	h := &Headers{ptr: headers}
	defer func() {
		h.ptr = nil // the C handle dies with this call
		if p := recover(); p != nil {
			s.refuse(a.OrderID, fmt.Errorf("request hook panicked: %v", p))
			rc = 1
		}
	}()
	if err := s.fn(a, h); err != nil {
		s.refuse(a.OrderID, err)
		return 1
	}
	return 0
}

// attachRefusal gives the caller the hook's own error behind a refusal: on
// an *Error with CodeHook, or on a Result the hook's refusal ended.
func (st *clientState) attachRefusal(orderID string, res *Result, err error) (*Result, error) {
	if st.hook == nil {
		return res, err
	}
	if e, ok := err.(*Error); ok && e.Code == CodeHook {
		if cause := st.hook.take(orderID); cause != nil {
			return res, &Error{Code: e.Code, Message: e.Message, Err: cause}
		}
	}
	if res != nil && strings.Contains(res.Error, "request hook") {
		res.HookErr = st.hook.take(orderID)
	}
	return res, err
}

// collectRefusals takes the hook's refusals of the orders a reconcile
// report names.
func (st *clientState) collectRefusals(rep *Report) map[string]error {
	if st.hook == nil {
		return nil
	}
	var refusals map[string]error
	take := func(orderID string) {
		if err := st.hook.take(orderID); err != nil {
			if refusals == nil {
				refusals = map[string]error{}
			}
			refusals[orderID] = err
		}
	}
	for _, p := range rep.Payments {
		var named struct {
			OrderID string `json:"order_id"`
		}
		if json.Unmarshal(p, &named) == nil {
			take(named.OrderID)
		}
	}
	for _, f := range rep.Failures {
		take(f.OrderID)
	}
	return refusals
}
