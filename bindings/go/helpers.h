/* helpers.h: C glue of the Go binding (declarations only: the cgo preambles
 * of files with //export may not hold definitions). */
#ifndef PAYRETRY_GO_HELPERS_H
#define PAYRETRY_GO_HELPERS_H

#include <stdint.h>
#include <stdlib.h>
#include <payretry/payretry.h>

#if PAY_VERSION_MAJOR != 0
#error "payretry Go binding: needs libpayretry 0.x (PAY_VERSION_MAJOR == 0)"
#endif

/* The error of a failed call, copied out of pay_error_last() inside the same
 * C call (goroutines move between OS threads, the C error is per thread). */
typedef struct gopay_err {
  int code;
  char message[2048];
} gopay_err;

int gopay_client_new(pay_client **out, const char *config_json, uintptr_t log_handle, uintptr_t hook_handle,
                     gopay_err *err);
int gopay_headers_add(pay_headers *headers, const char *name, const char *value, gopay_err *err);
/* Starts one payment on the client's engine threads; the done callback hands
 * its answer to the Go value behind done_handle (a cgo.Handle). 0: started
 * (the callback runs exactly once); else nothing was started. */
int gopay_submit_async(pay_client *client, const char *order_id, const void *body, size_t body_len,
                       const char *key, const char *path, uint32_t deadline_ms, char **header_names,
                       char **header_values, size_t header_count, const char *traceparent,
                       uintptr_t done_handle, gopay_err *err);
int gopay_query(pay_result **out, pay_client *client, const char *order_id, gopay_err *err);
/* pay_submit_operation with its options spelt out (NULL body, target_id: none). */
int gopay_submit_operation(pay_result **out, pay_client *client, const char *order_id, int kind, const char *ref,
                           int64_t amount, const char *body, const char *target_id, uint32_t deadline_ms,
                           gopay_err *err);
int gopay_reconcile(pay_buf *out, pay_client *client, uintptr_t body_handle, gopay_err *err);
int gopay_ledger_get(pay_buf *out, pay_client *client, const char *order_id, gopay_err *err);
int gopay_ledger_list(pay_buf *out, pay_client *client, const char *state, int64_t updated_before_unix_ms,
                      uint32_t limit, gopay_err *err);
int gopay_metrics(pay_buf *out, const pay_client *client, gopay_err *err);
int gopay_reopen_log(pay_client *client, gopay_err *err);
int gopay_stats(pay_buf *out, const pay_client *client, gopay_err *err);
/* pay_webhook_apply over two C arrays of header names and values; the body
 * may be Go memory (read during the call only). */
int gopay_webhook_apply(pay_webhook_reply *out, pay_client *client, const char *method, const char *url,
                        char **header_names, char **header_values, size_t header_count, const void *body,
                        size_t body_len, gopay_err *err);

#endif
