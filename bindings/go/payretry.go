// Package payretry is the Go binding of libpayretry, which makes
// payment-provider POSTs safe to retry: one stable idempotency key per
// payment, byte-identical attempts, per-attempt timeouts and a total
// deadline, retries only for what can recover, and UNKNOWN (never FAILED)
// when the payment may have been processed. Every submission goes through
// the ledger named in the configuration.
//
// The binding calls the C API (payretry.h) through cgo and finds it with
// pkg-config. A program built against a prefix the dynamic loader does not
// search runs without LD_LIBRARY_PATH when the prefix's lib folder is
// recorded in it at build time:
//
//	CGO_LDFLAGS="-Wl,-rpath,$(pkg-config --variable=libdir payretry)" go build
//
// A Client is safe for concurrent use; Results are plain Go values copied
// out of the C results, which are freed at once.
//
// # Threads
//
// Submit and SubmitBatch run payments on the client's engine threads
// (pay_submit_async): libcurl's multi interface keeps them all in flight
// over a bounded pool of connections, and the calling goroutine parks on a
// channel until the done callback hands over the answer. No OS thread is
// held per payment in flight: 1,000 concurrent Submits add the library's
// engine threads ("engine_threads", one per core by default) to the
// process, not 1,000 threads. Query and Reconcile block a thread in C for
// their duration. The request hook and the log function run on the engine
// threads for payments, so every payment in flight waits while they run.
//
// # Cancellation
//
// When ctx ends before the answer, the call returns an *AbandonedError
// (wrapping ctx.Err()), but only the wait is abandoned: a payment is never
// lost. The payment goes on to its end on the engine thread (or the C call
// of Query or Reconcile in the background), its result is freed, and its
// outcome stays in the ledger, so a later Submit of the same order returns
// it (or IN_PROGRESS while it still runs, or resumes it with the same key
// and bytes if it is UNKNOWN), and Query reads it. A ctx deadline is also
// passed to the engine as the payment's deadline (the smaller of it and the
// configured one), so a deadline normally ends with the engine's own UNKNOWN
// or FAILED Result rather than an error: Submit waits up to DeadlineGrace
// past the ctx deadline for it. Close waits for every payment started and
// every call still running.
package payretry

/*
// pkg-config gives the compiler and linker flags, but no rpath: payretry.pc is
// the same file in /usr, where an rpath would be wrong, and a #cgo directive
// cannot name the prefix (the only variable it knows, ${SRCDIR}, is this
// binding's folder, not the library's). So the rpath of a prefix install is
// the program's to record, through CGO_LDFLAGS (see the package comment),
// which cgo takes unchecked from the environment and Go's build cache hashes.
#cgo pkg-config: payretry
#include <payretry/payretry.h>
#include "helpers.h"

#if PAY_VERSION_MAJOR != 0
#error "payretry Go binding: needs libpayretry 0.x (PAY_VERSION_MAJOR == 0)"
#endif
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// DeadlineGrace is how long Submit keeps waiting past ctx's deadline for the
// engine's own verdict (the engine was given the same deadline, so it
// normally answers within milliseconds).
const DeadlineGrace = 500 * time.Millisecond

// Outcome is what the caller may conclude about a payment (pay_outcome).
type Outcome int

const (
	Succeeded  Outcome = 1 // took effect at the provider; fulfil on MoneyState, never on this alone
	Failed     Outcome = 2 // definitive: the provider will not charge for it
	Unknown    Outcome = 3 // may have been processed: never re-create, query later
	InProgress Outcome = 4 // another worker holds this order right now
)

func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "SUCCEEDED"
	case Failed:
		return "FAILED"
	case Unknown:
		return "UNKNOWN"
	case InProgress:
		return "IN_PROGRESS"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Delivery is how far the request got, over every attempt (pay_delivery).
type Delivery int

const (
	NotSent        Delivery = 1 // no attempt can have been processed by the provider
	MaybeProcessed Delivery = 2 // some attempt may have been processed
	Delivered      Delivery = 3 // the provider answered definitively
)

func (d Delivery) String() string {
	switch d {
	case NotSent:
		return "not_sent"
	case MaybeProcessed:
		return "maybe_processed"
	case Delivered:
		return "delivered"
	}
	return fmt.Sprintf("Delivery(%d)", int(d))
}

// MoneyState is where the money is (pay_money_state), beside whether the
// request took effect: a Succeeded create of a PayPal order or of a Stripe
// PaymentIntent that needs 3-D Secure has moved no money. Fulfil on
// MoneyPaid (or MoneyAuthorized where you capture later), never on
// Succeeded alone. The C enum is only appended to: a state this package does
// not know reads as MoneyUnknown, which never fulfils.
type MoneyState int

const (
	MoneyUnknown          MoneyState = 0 // no word read yet, or one the profile does not map: wait, query
	MoneyAwaitingCustomer MoneyState = 1 // nothing moved; the customer (or your confirm) is next: do not ship
	MoneyPending          MoneyState = 2 // the provider, a bank or the method is deciding: do not ship
	MoneyAuthorized       MoneyState = 3 // held, not captured: capture, then fulfil
	MoneyPaid             MoneyState = 4 // captured: fulfil
	MoneyPartlyRefunded   MoneyState = 5 // paid, and part of it went back
	MoneyRefunded         MoneyState = 6 // paid, and all of it went back
	MoneyFailed           MoneyState = 7 // final: no money moved or will; a new try is a new order
)

// moneyStateNames are pay_money_state_name's, in the C enum's order.
var moneyStateNames = [...]string{"unknown", "awaiting_customer", "pending", "authorized", "paid",
	"partly_refunded", "refunded", "failed"}

// String is the library's name ("paid"), or "?" for a value it does not
// name, as pay_money_state_name answers.
func (m MoneyState) String() string {
	if m < 0 || int(m) >= len(moneyStateNames) {
		return "?"
	}
	return moneyStateNames[m]
}

// known is m itself when this package names it, else MoneyUnknown.
func (m MoneyState) known() MoneyState {
	if m.String() == "?" {
		return MoneyUnknown
	}
	return m
}

// MarshalText writes the library's name.
func (m MoneyState) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads the library's name; a name this package does not know
// (a state a later library appended) is MoneyUnknown, not an error, so that
// the rest of the record still decodes.
func (m *MoneyState) UnmarshalText(b []byte) error {
	*m = MoneyUnknown
	for i, name := range moneyStateNames {
		if string(b) == name {
			*m = MoneyState(i)
		}
	}
	return nil
}

// Log levels passed to the log function (pay_log_level).
const (
	LogDebug = 10
	LogInfo  = 20
	LogWarn  = 30
	LogError = 40
)

// Payment is one logical payment to submit.
//
// Its deadline is ctx's (the smaller of it and the configured one).
type Payment struct {
	OrderID        string // the merchant's order id; the ledger's key
	Body           []byte // the exact bytes of every attempt (copied before the call)
	IdempotencyKey string // "": a fresh UUIDv4 (or the ledger's stored key)
	Path           string // "": the profile's create path
	// Headers are sent on every attempt of this payment (not on lookups,
	// which the request hook can decorate), at most 64: names HTTP tokens,
	// values printable with no CR/LF. A header payretry or the config sets
	// (Content-Type, the idempotency key's, Authorization, the config's auth
	// and extra headers, traceparent) is refused with ErrInvalid naming it,
	// and nothing is sent.
	Headers []Header
	// Traceparent is a W3C trace context ("00-<32 hex>-<16 hex>-<2 hex>"),
	// sent as the traceparent header on every attempt and written in each
	// log line of the payment; "": none. A malformed one is ErrInvalid and
	// nothing is sent.
	Traceparent string
}

// Header is one extra request header of a Payment.
type Header struct {
	Name, Value string
}

// Result is what one submission or query ended as. A declined payment is a
// Result with Outcome Failed, not an error.
type Result struct {
	Outcome           Outcome
	Delivery          Delivery
	HTTPStatus        int    // of the deciding response; 0 when none decided
	Body              []byte // of the deciding response
	OrderID           string
	IdempotencyKey    string
	ProviderPaymentID string
	ProviderStatus    string
	// MoneyState is where the money is: fulfil on MoneyPaid (or
	// MoneyAuthorized where you capture later), never on Succeeded alone.
	MoneyState  MoneyState
	Attempts    int           // how many were sent; AttemptLog says how each went
	FromLedger  bool          // read from the ledger; nothing was sent
	Queried     bool          // a lookup at the provider decided it
	Recorded    bool          // the ledger holds this outcome (else LedgerError says why not)
	LedgerError string        // why the outcome could not be recorded, when it could not
	Error       string        // why, when not plainly SUCCEEDED ("deadline", "declined: ...")
	Elapsed     time.Duration // from the call to its answer
	AttemptLog  []Attempt     // one per attempt, in order
	JSON        string        // the whole result as JSON (without the body)
	HookErr     error         // the request hook's error when its refusal ended the call, else nil
}

// Report is what Reconcile did.
type Report struct {
	Examined   int                `json:"examined"`
	Succeeded  int                `json:"SUCCEEDED"`
	Failed     int                `json:"FAILED"`
	Unknown    int                `json:"UNKNOWN"`
	InProgress int                `json:"IN_PROGRESS"`
	Errors     int                `json:"errors"`
	Payments   []json.RawMessage  `json:"payments"`
	Failures   []ReconcileFailure `json:"failures"`
	HookErrs   map[string]error   `json:"-"` // order id -> the request hook's error, for lookups it refused
	JSON       string             `json:"-"` // the report as the library wrote it
}

// ReconcileFailure is one payment Reconcile could not settle because of an error.
type ReconcileFailure struct {
	OrderID string `json:"order_id"`
	Error   string `json:"error"`
}

// Option configures NewClient.
type Option func(*options)

type options struct {
	log  func(level int, line string)
	hook RequestHook
}

// WithLogger receives every log line (one redacted JSON object per line).
// It may be called concurrently from several goroutines and C threads, and
// must not call Close. A panic in it is recovered and the line dropped.
func WithLogger(fn func(level int, line string)) Option {
	return func(o *options) { o.log = fn }
}

// Version returns the version of the loaded library, e.g. "0.1.0".
func Version() string { return C.GoString(C.pay_version()) }

// Client submits payments. It is safe for concurrent use. Close it when done.
type Client struct {
	s       *clientState
	cleanup runtime.Cleanup
}

// clientState is what the cleanup needs; it never refers to the Client.
type clientState struct {
	mu         sync.Mutex
	closed     bool
	ptr        *C.pay_client
	calls      sync.WaitGroup // C calls and started payments until answered, abandoned ones too
	logHandle  cgo.Handle     // 0 when no logger
	hook       *hookSink      // nil when no request hook
	hookHandle cgo.Handle     // 0 when no request hook
}

func (s *clientState) acquire() (*C.pay_client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.calls.Add(1)
	return s.ptr, nil
}

func (s *clientState) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.calls.Wait() // pay_client_free must not race a running call
	C.pay_client_free(s.ptr)
	s.ptr = nil
	// The library no longer calls back once pay_client_free returned.
	s.releaseHandles()
}

func (s *clientState) releaseHandles() {
	if s.logHandle != 0 {
		s.logHandle.Delete()
		s.logHandle = 0
	}
	if s.hookHandle != 0 {
		s.hookHandle.Delete()
		s.hookHandle = 0
	}
}

func cError(rc C.int, e *C.gopay_err) error {
	return &Error{Code: ErrorCode(rc), Message: C.GoString(&e.message[0])}
}

func invalid(what string) error {
	return &Error{Code: CodeInvalid, Message: what + " contains a NUL byte"}
}

// cString returns a C copy of s, or nil for "" when emptyIsNil.
func cString(s string, emptyIsNil bool) *C.char {
	if s == "" && emptyIsNil {
		return nil
	}
	return C.CString(s)
}

// NewClient creates a client from a JSON configuration (see the README's
// "Configuration"), which must name its "ledger" ("sqlite:///abs/path.db",
// "postgresql://...", or "memory:" written out). A bad configuration is an
// *Error matching ErrConfig whose message names the offending key (never a
// secret).
func NewClient(configJSON string, opts ...Option) (*Client, error) {
	if got, want := int(C.pay_version_number())/10000, int(C.PAY_VERSION_MAJOR); got != want {
		return nil, fmt.Errorf("payretry: loaded libpayretry %s has major version %d, the binding was built for %d",
			Version(), got, want)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if strings.IndexByte(configJSON, 0) >= 0 {
		return nil, invalid("config")
	}
	s := &clientState{}
	if o.log != nil {
		s.logHandle = cgo.NewHandle(&logSink{fn: o.log})
	}
	if o.hook != nil {
		s.hook = newHookSink(o.hook)
		s.hookHandle = cgo.NewHandle(s.hook)
	}
	cfg := C.CString(configJSON)
	defer C.free(unsafe.Pointer(cfg))
	var e C.gopay_err
	if rc := C.gopay_client_new(&s.ptr, cfg, C.uintptr_t(s.logHandle), C.uintptr_t(s.hookHandle), &e); rc != 0 {
		s.releaseHandles()
		return nil, cError(rc, &e)
	}
	c := &Client{s: s}
	// A leak backstop only: Close is the contract.
	c.cleanup = runtime.AddCleanup(c, func(s *clientState) { s.close() }, s)
	return c, nil
}

// Close frees the client, after waiting for calls still running (including
// those whose ctx ended). It is idempotent and always returns nil.
func (c *Client) Close() error {
	c.cleanup.Stop()
	c.s.close()
	return nil
}

// call runs fn, a blocking C call (Query, Reconcile), on a goroutine holding
// the client open, and waits for it or ctx. fn's value is dropped (after fn
// freed its C memory) when the wait is abandoned.
func call[T any](ctx context.Context, c *Client, fn func(*C.pay_client) (T, error)) (T, bool, error) {
	var zero T
	ptr, err := c.s.acquire()
	if err != nil {
		return zero, true, err
	}
	type out struct {
		v   T
		err error
	}
	ch := make(chan out, 1)
	go func() {
		defer c.s.calls.Done()
		v, err := fn(ptr)
		ch <- out{v, err}
		runtime.KeepAlive(c) // no cleanup while a call runs
	}()
	select {
	case r := <-ch:
		return r.v, true, r.err
	case <-ctx.Done():
	}
	select { // both ready: prefer the answer
	case r := <-ch:
		return r.v, true, r.err
	default:
	}
	return zero, false, nil
}

// newResult copies a C result into Go values and frees it.
func newResult(r *C.pay_result) *Result {
	defer C.pay_result_free(r)
	var n C.size_t
	body := C.pay_result_body(r, &n)
	res := &Result{
		Outcome:           Outcome(C.pay_result_outcome(r)),
		Delivery:          Delivery(C.pay_result_delivery(r)),
		HTTPStatus:        int(C.pay_result_http_status(r)),
		OrderID:           goString(C.pay_result_order_id(r)),
		IdempotencyKey:    goString(C.pay_result_idempotency_key(r)),
		ProviderPaymentID: goString(C.pay_result_provider_payment_id(r)),
		ProviderStatus:    goString(C.pay_result_provider_status(r)),
		MoneyState:        MoneyState(C.pay_result_money_state(r)).known(),
		Attempts:          int(C.pay_result_attempts(r)),
		FromLedger:        C.pay_result_from_ledger(r) == 1,
		Error:             goString(C.pay_result_error(r)),
		JSON:              goString(C.pay_result_json(r)),
	}
	if body != nil && n > 0 {
		res.Body = C.GoBytes(unsafe.Pointer(body), C.int(n))
	}
	// The JSON is the library's own, written by the same code for every
	// result. Should it ever not decode, the typed detail stays empty and
	// JSON still holds it: an error here would read as "nothing was sent"
	// for a payment that may have been charged.
	_ = res.decodeDetail()
	return res
}

func goString(p *C.char) string {
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

// takeBuf copies and disposes a pay_buf.
func takeBuf(b *C.pay_buf) string {
	defer C.pay_buf_dispose(b)
	if b.ptr == nil {
		return ""
	}
	return C.GoStringN(b.ptr, C.int(b.size))
}

// deadlineMS turns ctx's deadline into pay_submit_options.deadline_ms (0: none).
func deadlineMS(ctx context.Context) C.uint32_t {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	d := time.Until(dl)
	ms := (d + time.Millisecond - 1) / time.Millisecond
	switch {
	case ms < 1:
		ms = 1
	case ms > math.MaxUint32:
		ms = math.MaxUint32
	}
	return C.uint32_t(ms)
}

// Query asks the provider (or the ledger, when the payment is settled) what
// happened to one submitted payment, and records the answer. ErrNotFound
// when the order is not in the ledger.
func (c *Client) Query(ctx context.Context, orderID string) (*Result, error) {
	if strings.IndexByte(orderID, 0) >= 0 {
		return nil, invalid("order id")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("payretry: query of order %q not started: %w", orderID, err)
	}
	order := C.CString(orderID)
	res, done, err := call(ctx, c, func(ptr *C.pay_client) (*Result, error) {
		defer C.free(unsafe.Pointer(order))
		var r *C.pay_result
		var e C.gopay_err
		if rc := C.gopay_query(&r, ptr, order, &e); rc != 0 {
			return nil, cError(rc, &e)
		}
		return newResult(r), nil
	})
	if errors.Is(err, ErrClosed) {
		C.free(unsafe.Pointer(order))
	}
	if !done {
		return nil, &AbandonedError{Op: "query", OrderID: orderID, Err: ctx.Err()}
	}
	return c.s.attachRefusal(orderID, res, err)
}

// bodySource is the payload of Reconcile's body callback.
type bodySource struct {
	ctx    context.Context
	fn     func(orderID string) ([]byte, bool)
	mu     sync.Mutex
	panics []string
}

func (b *bodySource) recordPanic(orderID string, p any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.panics = append(b.panics, fmt.Sprintf("order %q: %v", orderID, p))
}

// Reconcile settles every UNKNOWN payment (and every IN_FLIGHT one whose
// lease expired) by asking the provider, or by a same-key re-send where that
// is the provider's only lookup. bodyFor (nil: never re-send) returns the
// very bytes first submitted for an order, or false when they are gone (the
// payment then stays UNKNOWN). bodyFor may be called from another goroutine;
// once ctx is done it is no longer asked. A panic in bodyFor is recovered,
// that payment stays UNKNOWN, and Reconcile returns the report with an error.
func (c *Client) Reconcile(ctx context.Context, bodyFor func(orderID string) ([]byte, bool)) (Report, error) {
	if err := ctx.Err(); err != nil {
		return Report{}, fmt.Errorf("payretry: reconcile not started: %w", err)
	}
	var src *bodySource
	var h cgo.Handle
	if bodyFor != nil {
		src = &bodySource{ctx: ctx, fn: bodyFor}
		h = cgo.NewHandle(src)
	}
	js, done, err := call(ctx, c, func(ptr *C.pay_client) (string, error) {
		var b C.pay_buf
		var e C.gopay_err
		rc := C.gopay_reconcile(&b, ptr, C.uintptr_t(h), &e)
		if h != 0 {
			h.Delete() // the library calls back only during pay_reconcile
		}
		if rc != 0 {
			return "", cError(rc, &e)
		}
		return takeBuf(&b), nil
	})
	if errors.Is(err, ErrClosed) && h != 0 {
		h.Delete()
	}
	if !done {
		return Report{}, &AbandonedError{Op: "reconcile", Err: ctx.Err()}
	}
	if err != nil {
		return Report{}, err
	}
	rep := Report{JSON: js}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		return rep, fmt.Errorf("payretry: decoding the reconcile report: %w", err)
	}
	rep.HookErrs = c.s.collectRefusals(&rep)
	if src != nil {
		src.mu.Lock()
		defer src.mu.Unlock()
		if len(src.panics) > 0 {
			return rep, fmt.Errorf("payretry: bodyFor panicked (those payments stay UNKNOWN): %s", strings.Join(src.panics, "; "))
		}
	}
	return rep, nil
}

// sync runs a short, non-blocking C call with the client held open.
func (c *Client) sync(fn func(*C.pay_client) (string, error)) (string, error) {
	ptr, err := c.s.acquire()
	if err != nil {
		return "", err
	}
	defer c.s.calls.Done()
	defer runtime.KeepAlive(c)
	return fn(ptr)
}

// LedgerGet returns the ledger's record of one payment: its row and every
// attempt and lookup. ErrNotFound when there is none.
func (c *Client) LedgerGet(orderID string) (*LedgerRecord, error) {
	if strings.IndexByte(orderID, 0) >= 0 {
		return nil, invalid("order id")
	}
	js, err := c.sync(func(ptr *C.pay_client) (string, error) {
		order := C.CString(orderID)
		defer C.free(unsafe.Pointer(order))
		var b C.pay_buf
		var e C.gopay_err
		if rc := C.gopay_ledger_get(&b, ptr, order, &e); rc != 0 {
			return "", cError(rc, &e)
		}
		return takeBuf(&b), nil
	})
	if err != nil {
		return nil, err
	}
	rec := &LedgerRecord{JSON: js}
	if err := json.Unmarshal([]byte(js), rec); err != nil {
		return nil, fmt.Errorf("payretry: decoding the ledger record of order %q: %w", orderID, err)
	}
	return rec, nil
}

// LedgerFilter selects the payments LedgerList returns.
type LedgerFilter struct {
	State         string    // "PENDING", "IN_FLIGHT", "SUCCEEDED", "FAILED", "UNKNOWN"; "": all
	UpdatedBefore time.Time // zero: no limit
	Limit         int       // 0: 1000
}

// LedgerList returns the ledger's payments that match f, oldest update
// first. An unknown State is an *Error matching ErrInvalid.
func (c *Client) LedgerList(f LedgerFilter) ([]LedgerPayment, error) {
	if strings.IndexByte(f.State, 0) >= 0 {
		return nil, invalid("state")
	}
	if f.Limit < 0 || uint64(f.Limit) > math.MaxUint32 {
		return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("limit %d is out of range (0 to %d)", f.Limit, uint32(math.MaxUint32))}
	}
	var before int64
	if !f.UpdatedBefore.IsZero() {
		before = f.UpdatedBefore.UnixMilli()
	}
	js, err := c.sync(func(ptr *C.pay_client) (string, error) {
		state := cString(f.State, true)
		defer C.free(unsafe.Pointer(state))
		var b C.pay_buf
		var e C.gopay_err
		if rc := C.gopay_ledger_list(&b, ptr, state, C.int64_t(before), C.uint32_t(f.Limit), &e); rc != 0 {
			return "", cError(rc, &e)
		}
		return takeBuf(&b), nil
	})
	if err != nil {
		return nil, err
	}
	var list []LedgerPayment
	if err := json.Unmarshal([]byte(js), &list); err != nil {
		return nil, fmt.Errorf("payretry: decoding the ledger list: %w", err)
	}
	return list, nil
}

// Stats returns the client's counters.
func (c *Client) Stats() (*Stats, error) {
	js, err := c.sync(func(ptr *C.pay_client) (string, error) {
		var b C.pay_buf
		var e C.gopay_err
		if rc := C.gopay_stats(&b, ptr, &e); rc != 0 {
			return "", cError(rc, &e)
		}
		return takeBuf(&b), nil
	})
	if err != nil {
		return nil, err
	}
	st := &Stats{JSON: js}
	if err := json.Unmarshal([]byte(js), st); err != nil {
		return nil, fmt.Errorf("payretry: decoding the stats: %w", err)
	}
	return st, nil
}
