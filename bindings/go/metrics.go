package payretry

/*
#include "helpers.h"
*/
import "C"

// Metrics returns the client's counters in the Prometheus text exposition
// format (version 0.0.4: # HELP and # TYPE lines, names prefixed payretry_),
// ready to serve at a /metrics endpoint (see the payretryhttp package).
func (c *Client) Metrics() (string, error) {
	return c.sync(func(ptr *C.pay_client) (string, error) {
		var b C.pay_buf
		var e C.gopay_err
		if rc := C.gopay_metrics(&b, ptr, &e); rc != 0 {
			return "", cError(rc, &e)
		}
		return takeBuf(&b), nil
	})
}

// ReopenLog reopens the configuration's log file ("log": {"path": ...}), for
// log rotation: call it after the file was moved away (e.g. on SIGHUP).
func (c *Client) ReopenLog() error {
	_, err := c.sync(func(ptr *C.pay_client) (string, error) {
		var e C.gopay_err
		if rc := C.gopay_reopen_log(ptr, &e); rc != 0 {
			return "", cError(rc, &e)
		}
		return "", nil
	})
	return err
}
