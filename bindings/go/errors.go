package payretry

import (
	"errors"
	"fmt"
)

// ErrorCode is a PAY_E* code of the C API (errors.h): why a call failed.
// A declined or undetermined payment is not an error; it is a Result.
type ErrorCode int

// The codes of errors.h. They are never renumbered.
const (
	CodeInternal ErrorCode = -1  // PAY_ERROR
	CodeInvalid  ErrorCode = -2  // PAY_EINVALID
	CodeNoMem    ErrorCode = -3  // PAY_ENOMEM
	CodeConfig   ErrorCode = -4  // PAY_ECONFIG
	CodeMismatch ErrorCode = -5  // PAY_EMISMATCH
	CodeTooBig   ErrorCode = -6  // PAY_ETOOBIG
	CodeKey      ErrorCode = -7  // PAY_EKEY
	CodeVersion  ErrorCode = -8  // PAY_EVERSION
	CodeHook     ErrorCode = -9  // PAY_EHOOK
	CodeIO       ErrorCode = -10 // PAY_EIO
	CodeLedger   ErrorCode = -11 // PAY_ELEDGER
	CodeNotFound ErrorCode = -12 // PAY_ENOTFOUND
	CodeAgain    ErrorCode = -13 // PAY_EAGAIN (pay_pending_wait: no answer yet)
)

var codeNames = map[ErrorCode]string{
	CodeInternal: "PAY_ERROR", CodeInvalid: "PAY_EINVALID", CodeNoMem: "PAY_ENOMEM",
	CodeConfig: "PAY_ECONFIG", CodeMismatch: "PAY_EMISMATCH", CodeTooBig: "PAY_ETOOBIG",
	CodeKey: "PAY_EKEY", CodeVersion: "PAY_EVERSION", CodeHook: "PAY_EHOOK", CodeIO: "PAY_EIO",
	CodeLedger: "PAY_ELEDGER", CodeNotFound: "PAY_ENOTFOUND", CodeAgain: "PAY_EAGAIN",
}

// String returns the C name of the code, e.g. "PAY_EMISMATCH".
func (c ErrorCode) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("PAY_E(%d)", int(c))
}

// Error is a failed call of the C library: its code and the detail
// pay_error_last() gave on the thread that made the call (never a secret).
type Error struct {
	Code    ErrorCode
	Message string
	Err     error // the Go cause, when there is one (the request hook's error behind CodeHook)
}

func (e *Error) Error() string {
	msg := "payretry: " + e.Code.String()
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the Go cause, so that errors.Is and errors.As see the
// request hook's own error through an ErrHook.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, payretry.ErrMismatch) matches any mismatch, whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t != nil && e != nil && t.Code == e.Code
}

// Sentinels for errors.Is; compare by code only.
var (
	ErrInternal = &Error{Code: CodeInternal}
	ErrInvalid  = &Error{Code: CodeInvalid}
	ErrNoMem    = &Error{Code: CodeNoMem}
	ErrConfig   = &Error{Code: CodeConfig}
	ErrMismatch = &Error{Code: CodeMismatch}
	ErrTooBig   = &Error{Code: CodeTooBig}
	ErrKey      = &Error{Code: CodeKey}
	ErrVersion  = &Error{Code: CodeVersion}
	ErrHook     = &Error{Code: CodeHook}
	ErrIO       = &Error{Code: CodeIO}
	ErrLedger   = &Error{Code: CodeLedger}
	ErrNotFound = &Error{Code: CodeNotFound}
)

// ErrClosed is returned by calls on a Client after Close.
var ErrClosed = errors.New("payretry: client is closed")

// AbandonedError is returned when ctx ended before the C call did. Only the
// wait was abandoned: the call runs on in the background and its outcome is
// recorded in the ledger (a later Submit of OrderID returns or resumes it,
// Query reads it). errors.Is(err, context.Canceled) and
// errors.Is(err, context.DeadlineExceeded) see through it.
type AbandonedError struct {
	Op      string // "submit", "query", "reconcile", "webhook", "capture", "refund", "cancel"
	OrderID string // empty for reconcile and webhook
	Err     error  // ctx.Err()
}

func (e *AbandonedError) Error() string {
	if e.OrderID == "" {
		return fmt.Sprintf("payretry: %s: stopped waiting (%v); the call continues in the background", e.Op, e.Err)
	}
	return fmt.Sprintf("payretry: %s of order %q: stopped waiting (%v); the payment is recorded and continues in the background",
		e.Op, e.OrderID, e.Err)
}

func (e *AbandonedError) Unwrap() error { return e.Err }
