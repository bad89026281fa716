package payretry

// Submissions on the C asynchronous path: pay_submit_async starts the payment
// on the client's engine threads and returns at once, and its done callback
// hands the answer to a channel the submitting goroutine waits on. No OS
// thread is held per payment in flight: a waiting goroutine is parked, not
// blocked in C, so 1,000 payments in flight cost 1,000 goroutines and the
// library's few engine threads.

/*
#include "helpers.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// asyncAnswer is what pay_submit_async's done callback reported: rc 0 and a
// result (ours to free), or the code and message of the payment's failed call.
type asyncAnswer struct {
	rc      C.int
	result  *C.pay_result
	message string
}

// take turns the answer into the values Submit returns, freeing the C result.
func (a asyncAnswer) take() (*Result, error) {
	if a.rc != 0 {
		return nil, &Error{Code: ErrorCode(a.rc), Message: a.message}
	}
	return newResult(a.result), nil
}

// pendingSubmit is one payment started with pay_submit_async, from the start
// until its done callback ran.
type pendingSubmit struct {
	state     *clientState
	answer    chan asyncAnswer // capacity 1: the callback never blocks the engine thread
	mu        sync.Mutex
	abandoned bool // the submitter stopped waiting: the callback frees the result itself
}

// deliver runs on an engine thread (the done callback). It must be short:
// every payment in flight on that thread waits while it runs.
func (p *pendingSubmit) deliver(a asyncAnswer) {
	p.mu.Lock()
	if p.abandoned {
		p.mu.Unlock()
		C.pay_result_free(a.result) // NULL (a failed call) is a no-op
	} else {
		p.answer <- a
		p.mu.Unlock()
	}
	p.state.calls.Done() // Close may free the client now; the callback returns before the engine stops
}

// abandon marks the wait abandoned, unless the answer has arrived meanwhile,
// which it then returns.
func (p *pendingSubmit) abandon() (asyncAnswer, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case a := <-p.answer:
		return a, true
	default:
	}
	p.abandoned = true
	return asyncAnswer{}, false
}

// wait returns the payment's answer, or an *AbandonedError once ctx ended
// (after DeadlineGrace for a deadline, since the engine had the same one).
func (p *pendingSubmit) wait(ctx context.Context, orderID string) (*Result, error) {
	select {
	case a := <-p.answer:
		return a.take()
	case <-ctx.Done():
	}
	select { // both ready: prefer the answer
	case a := <-p.answer:
		return a.take()
	default:
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t := time.NewTimer(DeadlineGrace)
		defer t.Stop()
		select {
		case a := <-p.answer:
			return a.take()
		case <-t.C:
		}
	}
	if a, answered := p.abandon(); answered {
		return a.take()
	}
	return nil, &AbandonedError{Op: "submit", OrderID: orderID, Err: ctx.Err()}
}

// checkPayment refuses what C strings cannot carry, before anything starts
// (the library checks everything else).
func checkPayment(p *Payment) error {
	for _, f := range []struct{ what, s string }{
		{"order id", p.OrderID}, {"idempotency key", p.IdempotencyKey}, {"path", p.Path},
		{"traceparent", p.Traceparent},
	} {
		if strings.IndexByte(f.s, 0) >= 0 {
			return invalid(f.what)
		}
	}
	for _, h := range p.Headers {
		if strings.IndexByte(h.Name, 0) >= 0 {
			return invalid("header name")
		}
		if strings.IndexByte(h.Value, 0) >= 0 {
			return invalid("value of header " + h.Name)
		}
	}
	return nil
}

// cHeaders is a payment's headers as two C arrays of C strings, for
// gopay_submit_async; free releases them.
type cHeaders struct {
	names, values **C.char
	count         C.size_t
}

func newCHeaders(hs []Header) cHeaders {
	if len(hs) == 0 {
		return cHeaders{}
	}
	size := C.size_t(len(hs)) * C.size_t(unsafe.Sizeof((*C.char)(nil)))
	c := cHeaders{names: (**C.char)(C.malloc(size)), values: (**C.char)(C.malloc(size)), count: C.size_t(len(hs))}
	names, values := unsafe.Slice(c.names, len(hs)), unsafe.Slice(c.values, len(hs))
	for i, h := range hs {
		names[i], values[i] = C.CString(h.Name), C.CString(h.Value)
	}
	return c
}

func (c cHeaders) free() {
	if c.count == 0 {
		return
	}
	names, values := unsafe.Slice(c.names, int(c.count)), unsafe.Slice(c.values, int(c.count))
	for i := range names {
		C.free(unsafe.Pointer(names[i]))
		C.free(unsafe.Pointer(values[i]))
	}
	C.free(unsafe.Pointer(c.names))
	C.free(unsafe.Pointer(c.values))
}

// start hands one payment to pay_submit_async. On success the done callback
// will run exactly once and release the client's hold (calls.Done).
func (c *Client) start(ctx context.Context, p *Payment) (*pendingSubmit, error) {
	ptr, err := c.s.acquire()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(c)
	pending := &pendingSubmit{state: c.s, answer: make(chan asyncAnswer, 1)}
	h := cgo.NewHandle(pending)
	order, key, path := cString(p.OrderID, false), cString(p.IdempotencyKey, true), cString(p.Path, true)
	traceparent := cString(p.Traceparent, true)
	headers := newCHeaders(p.Headers)
	defer func() {
		for _, m := range []*C.char{order, key, path, traceparent} {
			C.free(unsafe.Pointer(m))
		}
		headers.free()
	}()
	// The library copies the body (and the strings) before returning, so the
	// caller's bytes are passed as they are, with no C copy.
	var body unsafe.Pointer
	if len(p.Body) > 0 {
		body = unsafe.Pointer(&p.Body[0])
	}
	var e C.gopay_err
	if rc := C.gopay_submit_async(ptr, order, body, C.size_t(len(p.Body)), key, path, deadlineMS(ctx),
		headers.names, headers.values, headers.count, traceparent, C.uintptr_t(h), &e); rc != 0 {
		h.Delete() // nothing started: the callback will never run
		c.s.calls.Done()
		return nil, cError(rc, &e)
	}
	return pending, nil
}

// Submit submits one payment: the same bytes with one idempotency key on
// every attempt, retrying only what can recover, within the deadline (ctx's
// deadline shortens it). It returns a Result whatever the payment's outcome
// (a decline is Outcome Failed with a nil error). Errors are *Error values
// (ErrInvalid, ErrTooBig, ErrKey, ErrMismatch, ErrLedger, ...) when the call
// itself failed and nothing can have been charged, or an *AbandonedError
// when ctx ended first: see the package documentation, the payment then
// continues in the background and stays recorded. If ctx is already done,
// nothing is submitted.
//
// The payment runs on the client's engine threads (pay_submit_async): the
// calling goroutine parks on a channel and holds no OS thread while it waits.
func (c *Client) Submit(ctx context.Context, p Payment) (*Result, error) {
	if err := checkPayment(&p); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("payretry: submit of order %q not started: %w", p.OrderID, err)
	}
	pending, err := c.start(ctx, &p)
	if err != nil {
		return nil, err
	}
	res, err := pending.wait(ctx, p.OrderID)
	return c.s.attachRefusal(p.OrderID, res, err)
}
