/* helpers.c: C glue of the Go binding: every call copies its error detail
 * before returning, and the trampolines turn void* payloads into the
 * cgo.Handle values the exported Go callbacks expect. */
#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "_cgo_export.h"

static int gopay_fail(int rc, gopay_err *err) {
  if (rc < 0 && err) {
    const pay_error *e = pay_error_last();
    err->code = rc;
    snprintf(err->message, sizeof err->message, "%s", e && e->message ? e->message : pay_strerror(rc));
  }
  return rc;
}

static void gopay_log_tramp(int level, const char *line, void *payload) {
  payretryGoLog(level, (char *)line, (uintptr_t)payload);
}

static int gopay_body_tramp(pay_body *out, const char *order_id, void *payload) {
  return payretryGoBody(out, (char *)order_id, (uintptr_t)payload);
}

static void gopay_done_tramp(int rc, pay_result *result, const char *message, void *payload) {
  payretryGoDone(rc, result, (char *)message, (uintptr_t)payload);
}

static int gopay_hook_tramp(pay_headers *headers, const pay_attempt_info *info, void *payload) {
  return payretryGoHook(headers, (pay_attempt_info *)info, (uintptr_t)payload);
}

int gopay_client_new(pay_client **out, const char *config_json, uintptr_t log_handle, uintptr_t hook_handle,
                     gopay_err *err) {
  pay_client_options o;
  int rc = pay_client_options_init(&o, PAY_CLIENT_OPTIONS_VERSION);
  if (rc == 0 && log_handle != 0) {
    o.log_cb = gopay_log_tramp;
    o.log_payload = (void *)log_handle;
  }
  if (rc == 0 && hook_handle != 0) {
    o.request_hook = gopay_hook_tramp;
    o.hook_payload = (void *)hook_handle;
  }
  if (rc == 0) rc = pay_client_new(out, config_json, &o);
  return gopay_fail(rc, err);
}

int gopay_headers_add(pay_headers *headers, const char *name, const char *value, gopay_err *err) {
  return gopay_fail(pay_headers_add(headers, name, value), err);
}

int gopay_submit_async(pay_client *client, const char *order_id, const void *body, size_t body_len,
                       const char *key, const char *path, uint32_t deadline_ms, char **header_names,
                       char **header_values, size_t header_count, const char *traceparent,
                       uintptr_t done_handle, gopay_err *err) {
  /* The options are read during the call only: the headers live until it returns. */
  pay_header *headers = NULL;
  if (header_count > 0) {
    headers = calloc(header_count, sizeof *headers);
    if (!headers) {
      err->code = PAY_ENOMEM;
      snprintf(err->message, sizeof err->message, "%s", pay_strerror(PAY_ENOMEM));
      return PAY_ENOMEM;
    }
    for (size_t i = 0; i < header_count; ++i) {
      headers[i].name = header_names[i];
      headers[i].value = header_values[i];
    }
  }
  pay_submit_options o;
  int rc = pay_submit_options_init(&o, PAY_SUBMIT_OPTIONS_VERSION);
  if (rc == 0) {
    o.idempotency_key = key;
    o.path = path;
    o.deadline_ms = deadline_ms;
    o.headers = headers;
    o.header_count = header_count;
    o.traceparent = traceparent;
    rc = pay_submit_async(client, order_id, body, body_len, &o, gopay_done_tramp, (void *)done_handle);
  }
  free(headers);
  return gopay_fail(rc, err);
}

int gopay_query(pay_result **out, pay_client *client, const char *order_id, gopay_err *err) {
  return gopay_fail(pay_query(out, client, order_id), err);
}

int gopay_submit_operation(pay_result **out, pay_client *client, const char *order_id, int kind, const char *ref,
                           int64_t amount, const char *body, const char *target_id, uint32_t deadline_ms,
                           gopay_err *err) {
  pay_operation_options o;
  int rc = pay_operation_options_init(&o, PAY_OPERATION_OPTIONS_VERSION);
  if (rc == 0) {
    o.ref = ref;
    o.amount = amount;
    o.body = body;
    o.target_id = target_id;
    o.deadline_ms = deadline_ms;
    rc = pay_submit_operation(out, client, order_id, kind, &o);
  }
  return gopay_fail(rc, err);
}

int gopay_reconcile(pay_buf *out, pay_client *client, uintptr_t body_handle, gopay_err *err) {
  pay_reconcile_options o;
  int rc = pay_reconcile_options_init(&o, PAY_RECONCILE_OPTIONS_VERSION);
  if (rc == 0 && body_handle != 0) {
    o.body_for = gopay_body_tramp;
    o.body_payload = (void *)body_handle;
  }
  if (rc == 0) rc = pay_reconcile(out, client, &o);
  return gopay_fail(rc, err);
}

int gopay_ledger_get(pay_buf *out, pay_client *client, const char *order_id, gopay_err *err) {
  return gopay_fail(pay_ledger_get(out, client, order_id), err);
}

int gopay_ledger_list(pay_buf *out, pay_client *client, const char *state, int64_t updated_before_unix_ms,
                      uint32_t limit, gopay_err *err) {
  return gopay_fail(pay_ledger_list(out, client, state, updated_before_unix_ms, limit), err);
}

int gopay_metrics(pay_buf *out, const pay_client *client, gopay_err *err) {
  return gopay_fail(pay_client_metrics(out, client), err);
}

int gopay_reopen_log(pay_client *client, gopay_err *err) {
  return gopay_fail(pay_client_reopen_log(client), err);
}

int gopay_stats(pay_buf *out, const pay_client *client, gopay_err *err) {
  return gopay_fail(pay_client_stats(out, client), err);
}

int gopay_webhook_apply(pay_webhook_reply *out, pay_client *client, const char *method, const char *url,
                        char **header_names, char **header_values, size_t header_count, const void *body,
                        size_t body_len, gopay_err *err) {
  pay_header *headers = NULL;
  if (header_count > 0) {
    headers = calloc(header_count, sizeof *headers);
    if (!headers) {
      err->code = PAY_ENOMEM;
      snprintf(err->message, sizeof err->message, "%s", pay_strerror(PAY_ENOMEM));
      return PAY_ENOMEM;
    }
    for (size_t i = 0; i < header_count; ++i) {
      headers[i].name = header_names[i];
      headers[i].value = header_values[i];
    }
  }
  pay_webhook_request r = PAY_WEBHOOK_REQUEST_INIT;
  r.method = method;
  r.url = url;
  r.headers = headers;
  r.header_count = header_count;
  r.body = body;
  r.body_len = body_len;
  int rc = pay_webhook_apply(out, client, &r);
  free(headers);
  return gopay_fail(rc, err);
}
