/* payretry/client.h: a client, its options (log callback, request hook) and
 * its counters. Submitting is in submit.h, async.h and settle.h.
 *
 * Threading: a pay_client may be shared by any number of threads; pay_submit
 * may run concurrently on one client. Callbacks (log, request hook) run on the
 * thread that called pay_submit, may run concurrently with each other, and
 * must not free their own client. Options structs are plain caller-owned data,
 * read only during the call they are passed to.
 */
#ifndef PAYRETRY_CLIENT_H
#define PAYRETRY_CLIENT_H

#include "payretry/common.h"
#include "payretry/buffer.h"

PAY_BEGIN_DECL

typedef struct pay_client pay_client;

/* ---- Log callback ------------------------------------------------------- */

typedef enum pay_log_level {
  PAY_LOG_DEBUG = 10,
  PAY_LOG_INFO = 20,
  PAY_LOG_WARN = 30,
  PAY_LOG_ERROR = 40
} pay_log_level;

/* Receives one JSON object per line (see the README: one per attempt and one per
 * outcome, plus warnings), already redacted. `line` is valid only during the
 * call. `payload` is the caller's, untouched after pay_client_free returns. */
typedef void (*pay_log_cb)(int level, const char *line, void *payload);

/* ---- Per-attempt request hook -------------------------------------------- */

/* What is about to be sent. Valid only during the hook. Fields may be
 * appended in later versions; never reordered. The hook runs for every
 * attempt of a payment and for every status lookup (pay_query,
 * pay_reconcile), so that a provider which signs its requests gets signed
 * lookups too. */
typedef struct pay_attempt_info {
  const char *method;           /* "POST" for a payment; "GET" or "POST" for a lookup */
  const char *url;              /* full URL */
  const char *path;             /* path part, e.g. "/v1/payments" */
  const char *order_id;
  const char *idempotency_key;
  const void *body;             /* the exact bytes of every attempt */
  size_t body_len;
  unsigned int attempt;         /* 1-based */
  int64_t unix_time_ms;         /* wall clock at this attempt, for signatures */
} pay_attempt_info;

/* Opaque list of extra headers for one attempt. */
typedef struct pay_headers pay_headers;

/* Adds a header to this attempt (e.g. a signature). Names must be HTTP
 * tokens, values printable with no CR/LF; at most 64 headers of 8 KiB.
 * Returns 0, or PAY_EINVALID (nothing added). Only valid inside the hook. */
PAY_API int pay_headers_add(pay_headers *headers, const char *name, const char *value);

/* Called before every attempt and every lookup. Return 0 to send; any other
 * value stops the submission: pay_submit then returns PAY_EHOOK if nothing
 * had been sent yet, or an UNKNOWN result if an earlier attempt may have
 * been processed. A lookup it stops leaves the payment as it was. */
typedef int (*pay_request_hook)(pay_headers *headers, const pay_attempt_info *info,
                                void *payload);

/* ---- Client -------------------------------------------------------------- */

/* What JSON cannot carry. Zero/NULL means default for every field. */
typedef struct pay_client_options {
  unsigned int version;           /* PAY_CLIENT_OPTIONS_VERSION */
  pay_log_cb log_cb;              /* NULL: no callback (the config's log file still works) */
  void *log_payload;
  pay_request_hook request_hook;  /* NULL: no hook */
  void *hook_payload;
} pay_client_options;

#define PAY_CLIENT_OPTIONS_VERSION 1
#define PAY_CLIENT_OPTIONS_INIT { PAY_CLIENT_OPTIONS_VERSION, NULL, NULL, NULL, NULL }

/* Fills `opts` with defaults for `version`. Returns 0, PAY_EINVALID for NULL,
 * PAY_EVERSION for a version this library does not know. */
PAY_API int pay_client_options_init(pay_client_options *opts, unsigned int version);

/* Creates a client from a JSON configuration (the README's "Configuration") and optional
 * options (NULL = none). On success *out is the caller's; free it with
 * pay_client_free. Returns 0, PAY_EINVALID (NULL argument), PAY_ECONFIG
 * (the message names the offending key, never a secret), PAY_EVERSION,
 * PAY_EIO (log file cannot be opened), PAY_ENOMEM. On error *out is NULL. */
PAY_API int pay_client_new(pay_client **out, const char *config_json,
                           const pay_client_options *opts);

/* Frees the client. The caller must ensure no other call on it is still
 * running; payments started with pay_submit_async or pay_submit_start are
 * waited for and reported first (each is bounded by its deadline, plus
 * in_progress_wait_ms when it waits on another worker). Results it made stay
 * valid. Never call it from a done callback of the same client. NULL is a
 * no-op. */
PAY_API void pay_client_free(pay_client *client);

/* ---- Counters ------------------------------------------------------------ */

/* Writes the client's counters as JSON into *out: attempts, retries by
 * reason, outcomes, budget exhaustion, prevented libcurl replays, budget
 * tokens left. Returns 0, PAY_EINVALID, PAY_ENOMEM. Thread-safe. */
PAY_API int pay_client_stats(pay_buf *out, const pay_client *client);

/* Writes the client's metrics into *out as Prometheus text (exposition
 * format 0.0.4, not OpenMetrics; names prefixed payretry_): payment runs by outcome and
 * delivery, submissions answered from the ledger, lookups' settlements,
 * attempts by verdict and reason, retries by reason, the retry budget, the
 * payments in flight, connections opened, and latency histograms of
 * attempts, payments and ledger commits. A payment counts once per run; a
 * ledger read or a lookup never counts as a payment. Serve it on a
 * /metrics endpoint as is. Returns 0, PAY_EINVALID, PAY_ENOMEM. Thread-safe. */
PAY_API int pay_client_metrics(pay_buf *out, const pay_client *client);

/* Reopens the config's log file by its path, for log rotation (call it on
 * SIGHUP, say, after the file was moved away). Lines go on to the old file
 * until the new one is open. 0 also when the config names no log file.
 * Returns 0, PAY_EINVALID, PAY_EIO (cannot be opened: the old file stays in
 * use). Thread-safe. */
PAY_API int pay_client_reopen_log(pay_client *client);

PAY_END_DECL

#endif /* PAYRETRY_CLIENT_H */
