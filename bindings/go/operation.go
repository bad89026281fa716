package payretry

// Captures, refunds and cancels of a payment already submitted
// (pay_submit_operation, operation.h): a blocking C call, run like Query.

/*
#include "helpers.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// OperationKind is what an Operation does to a payment (pay_operation).
type OperationKind int

// The kinds; the values are the C enum's.
const (
	Capture OperationKind = C.PAY_OPERATION_CAPTURE // take (part of) an authorized hold
	Refund  OperationKind = C.PAY_OPERATION_REFUND  // give (part of) a paid payment back
	Cancel  OperationKind = C.PAY_OPERATION_CANCEL  // void a payment no money has moved for yet
)

// String is the kind's name in the operation's ledger row id ("refund").
func (k OperationKind) String() string {
	switch k {
	case Capture:
		return "capture"
	case Refund:
		return "refund"
	case Cancel:
		return "cancel"
	}
	return fmt.Sprintf("OperationKind(%d)", int(k))
}

// Operation is one capture, refund or cancel of the payment of OrderID.
type Operation struct {
	OrderID string // the payment's order, as submitted
	Kind    OperationKind
	// Ref is required: your name for this operation, unique per payment and
	// kind ("r1"; visible ASCII, no spaces). The same Ref again is the same
	// operation (its stored key and bytes, or ErrMismatch if asked
	// otherwise): an Unknown operation is settled by submitting it again
	// with the same Ref, never a new one (that would be a second refund).
	Ref string
	// Amount in the provider's units, as the payment's was; 0: all that is
	// left, as the ledger counts it. Ignored for a Cancel.
	Amount int64
	// Body is an optional JSON object of further fields the provider takes
	// (a reason, metadata); never the fields payretry writes (the amount, the
	// payment's id, the key). Empty: none.
	Body string
	// TargetID is the second id the provider's path names, where it names
	// one (PayPal refunds a capture: its id). Empty: none.
	TargetID string
}

// SubmitOperation captures, refunds or cancels a payment this client's
// ledger holds, as safely as the payment itself: the operation is a ledger
// row of its own ("<order> <kind> <ref>", the Result's OrderID), its key and
// what was asked committed before the first byte, then sent, retried and
// settled as a payment is; ctx's deadline shortens the configured one. The
// Result is the operation's (MoneyPaid for a capture, MoneyRefunded for a
// refund, MoneyFailed for a cancel, or MoneyUnknown where the provider tells
// it later); the payment's money moves forward with it (LedgerGet).
//
// Errors, with nothing sent: ErrInvalid for an operation the payment does not
// allow (not settled, its money not where the operation applies, an amount
// beyond what is left: every capture and refund that did not fail counts as
// spent, Unknown ones too) or a provider whose profile does not send it;
// ErrNotFound for an order not in the ledger; ErrMismatch for a Ref asked
// before with other parameters. When ctx ends first the call returns an
// *AbandonedError and the operation goes on, recorded, in the background.
func (c *Client) SubmitOperation(ctx context.Context, op Operation) (*Result, error) {
	for _, f := range []struct{ what, s string }{
		{"order id", op.OrderID}, {"ref", op.Ref}, {"body", op.Body}, {"target id", op.TargetID},
	} {
		if strings.IndexByte(f.s, 0) >= 0 {
			return nil, invalid(f.what)
		}
	}
	if op.Amount < 0 {
		return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("amount %d is negative; 0 asks for the rest", op.Amount)}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("payretry: %s of order %q not started: %w", op.Kind, op.OrderID, err)
	}
	rowID := op.OrderID + " " + op.Kind.String() + " " + op.Ref
	order, ref := C.CString(op.OrderID), C.CString(op.Ref)
	body, target := cString(op.Body, true), cString(op.TargetID, true)
	free := func() {
		for _, m := range []*C.char{order, ref, body, target} {
			C.free(unsafe.Pointer(m))
		}
	}
	deadline := deadlineMS(ctx)
	res, done, err := call(ctx, c, func(ptr *C.pay_client) (*Result, error) {
		defer free()
		var r *C.pay_result
		var e C.gopay_err
		if rc := C.gopay_submit_operation(&r, ptr, order, C.int(op.Kind), ref, C.int64_t(op.Amount), body, target,
			deadline, &e); rc != 0 {
			return nil, cError(rc, &e)
		}
		return newResult(r), nil
	})
	if errors.Is(err, ErrClosed) {
		free()
	}
	if !done {
		return nil, &AbandonedError{Op: op.Kind.String(), OrderID: op.OrderID, Err: ctx.Err()}
	}
	// A request hook's refusal is recorded under the attempts' order id: the operation's row.
	return c.s.attachRefusal(rowID, res, err)
}
