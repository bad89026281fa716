package payretry

// The exported callbacks the C trampolines in helpers.c call. A file with
// //export may hold only declarations in its preamble.

/*
#include "helpers.h"
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// logSink is the payload of the log callback.
type logSink struct {
	fn func(level int, line string)
}

//export payretryGoLog
func payretryGoLog(level C.int, line *C.char, payload C.uintptr_t) {
	defer func() { _ = recover() }() // a panic must never unwind into C; the line is dropped
	sink := cgo.Handle(payload).Value().(*logSink)
	sink.fn(int(level), C.GoString(line))
}

//export payretryGoBody
func payretryGoBody(out *C.pay_body, orderID *C.char, payload C.uintptr_t) (rc C.int) {
	order := C.GoString(orderID)
	var src *bodySource
	defer func() {
		if p := recover(); p != nil {
			if src != nil {
				src.recordPanic(order, p)
			}
			rc = 1 // no body: the payment stays UNKNOWN
		}
	}()
	src = cgo.Handle(payload).Value().(*bodySource)
	if src.ctx.Err() != nil {
		return 1
	}
	b, ok := src.fn(order)
	if !ok || len(b) == 0 {
		return 1
	}
	if C.pay_body_set(out, unsafe.Pointer(&b[0]), C.size_t(len(b))) != 0 {
		return 1
	}
	return 0
}

//export payretryGoDone
func payretryGoDone(rc C.int, result *C.pay_result, message *C.char, payload C.uintptr_t) {
	// Called exactly once per started payment, on an engine thread; nothing
	// here can panic short of a broken handle, which would be a binding bug.
	h := cgo.Handle(payload)
	pending := h.Value().(*pendingSubmit)
	h.Delete()
	pending.deliver(asyncAnswer{rc: rc, result: result, message: goString(message)})
}

//export payretryGoHook
func payretryGoHook(headers *C.pay_headers, info *C.pay_attempt_info, payload C.uintptr_t) C.int {
	return cgo.Handle(payload).Value().(*hookSink).run(headers, info)
}
