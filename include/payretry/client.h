/* payretry/client.h: a client and the submission of one payment.
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
#include "payretry/result.h"

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

/* ---- Submitting one payment ---------------------------------------------- */

typedef struct pay_submit_options {
  unsigned int version;          /* PAY_SUBMIT_OPTIONS_VERSION */
  const char *idempotency_key;   /* NULL: a fresh UUIDv4 from the CSPRNG */
  const char *path;              /* NULL: the profile's create path */
  uint32_t deadline_ms;          /* 0: the client's; else the smaller of the two */
} pay_submit_options;

#define PAY_SUBMIT_OPTIONS_VERSION 1
#define PAY_SUBMIT_OPTIONS_INIT { PAY_SUBMIT_OPTIONS_VERSION, NULL, NULL, 0 }

PAY_API int pay_submit_options_init(pay_submit_options *opts, unsigned int version);

/* Submits one logical payment: POSTs `body` (the exact bytes, identical on
 * every attempt) with one idempotency key, retrying only what can recover,
 * within the deadline, and reports the outcome in *out (the caller's; free it
 * with pay_result_free). `opts` may be NULL.
 *
 * Returns 0 with a result whatever the payment's outcome (a decline is
 * FAILED data, not an error). Returns, with *out = NULL and nothing sent:
 * PAY_EINVALID (NULL client/order/body, empty body, bad order id or path),
 * PAY_ETOOBIG (body over max_body_bytes), PAY_EKEY (caller key too long, or
 * holding CR/LF or non-printable bytes), PAY_EVERSION, PAY_EHOOK.
 * Returns PAY_EMISMATCH when the provider says this key was used with other
 * parameters (a caller bug; the message names the key), or when the order
 * was submitted before with another body or key (nothing sent); PAY_ELEDGER
 * when the ledger cannot commit before anything is sent (nothing is sent
 * without a committed record). An error code always means this call sent
 * nothing: once a request may have left, the call returns a result, and when
 * the ledger then fails that result says so (pay_result_ledger_error: the
 * provider's outcome, or UNKNOWN, not durably recorded).
 *
 * Every submission goes through the ledger named in the config: the key and
 * a fingerprint of the request are committed before the first byte is sent.
 * Submitting an order again returns its stored outcome (from_ledger), resumes
 * an UNKNOWN one with the same key and bytes only while a same-key re-send
 * cannot charge it twice (the provider replays every answer, or every earlier
 * observation was one the profile retries), or reports IN_PROGRESS while
 * another worker holds it. No byte leaves after the payment's deadline or
 * after its lease. Thread-safe. */
PAY_API int pay_submit(pay_result **out, pay_client *client, const char *order_id,
                       const void *body, size_t body_len, const pay_submit_options *opts);

/* ---- Many payments at once ---------------------------------------------- */

/* pay_submit_batch and pay_submit_async run payments on the client's engine
 * thread, started on first use: libcurl's multi interface keeps them all in
 * flight at once over a bounded pool of kept-alive connections (HTTP/2
 * multiplexed where the provider offers it; "max_connections" in the config,
 * default 256), backoffs are timers rather than sleeping threads, and the
 * ledger writes of all the payments in flight share one commit per turn of
 * the loop (group commit). Every payment follows exactly the rules of
 * pay_submit: its key and fingerprint are committed before its first byte is
 * sent, the same outcomes, the same failed calls. The request hook and the
 * log callback run on the engine thread. */

/* One payment of a batch: the inputs, then what pay_submit_batch wrote. */
typedef struct pay_batch_item {
  const char *order_id;
  const void *body;
  size_t body_len;
  const char *idempotency_key;   /* NULL: as in pay_submit_options */
  const char *path;              /* NULL: the profile's create path */
  uint32_t deadline_ms;          /* 0: the client's; else the smaller of the two */
  /* out */
  int rc;                        /* 0, or the PAY_E* code of this payment's failed call */
  pay_result *result;            /* rc == 0: the caller's, free with pay_result_free; else NULL */
  char message[256];             /* rc != 0: what went wrong, NUL-terminated; else "" */
} pay_batch_item;

typedef struct pay_batch_options {
  unsigned int version;          /* PAY_BATCH_OPTIONS_VERSION */
  size_t max_in_flight;          /* 0: every item at once; else at most this many */
} pay_batch_options;

#define PAY_BATCH_OPTIONS_VERSION 1
#define PAY_BATCH_OPTIONS_INIT { PAY_BATCH_OPTIONS_VERSION, 0 }

PAY_API int pay_batch_options_init(pay_batch_options *opts, unsigned int version);

/* Submits `count` payments concurrently and returns when every one has an
 * answer: each item's rc, result and message are then set, as pay_submit
 * would have set them for that payment alone. `items` is in/out (first, as
 * an out-parameter); `opts` may be NULL. Returns 0 (look at each item),
 * PAY_EINVALID (NULL items with count > 0, NULL client, or called from a done
 * callback, where it would wait for its own thread) or PAY_EVERSION, with no
 * item touched. Two items with the same order id behave as two
 * concurrent pay_submit calls: one runs, the other reports IN_PROGRESS
 * (or waits, per in_progress_wait_ms). Thread-safe. */
PAY_API int pay_submit_batch(pay_batch_item *items, size_t count, pay_client *client,
                             const pay_batch_options *opts);

/* Called once per pay_submit_async, on the engine thread: rc 0 with
 * `result` (the callback's: free it with pay_result_free), or the PAY_E* code
 * of a failed call with result NULL and `message` saying why (valid during
 * the call). It may start more payments (pay_submit_async, pay_submit_start)
 * and poll (pay_pending_wait with timeout 0). It must not wait: no
 * pay_submit_batch, no blocking pay_pending_wait (both return PAY_EINVALID
 * there), no pay_submit (it would stall every payment in flight), and no
 * pay_client_free on its own client. Every payment in flight waits while it
 * runs: keep it short. */
typedef void (*pay_done_cb)(int rc, pay_result *result, const char *message, void *payload);

/* Starts one payment and returns at once; `done` reports it. The body is
 * copied. Returns 0 when the payment was taken (then `done` is called exactly
 * once), or PAY_EINVALID / PAY_EVERSION / PAY_EKEY (an empty key) / PAY_ENOMEM
 * / PAY_ERROR (the client is being freed) with nothing started and `done`
 * never called. pay_client_free waits until every started payment has been
 * reported (each is bounded by its deadline). Thread-safe. */
PAY_API int pay_submit_async(pay_client *client, const char *order_id, const void *body, size_t body_len,
                             const pay_submit_options *opts, pay_done_cb done, void *payload);

/* A payment started with pay_submit_start, to collect by polling or waiting
 * (for an event loop that would rather not take callbacks on another thread). */
typedef struct pay_pending pay_pending;

/* Starts one payment like pay_submit_async and returns at once with a handle
 * in *out (the caller's: pay_pending_free). Returns 0, or PAY_EINVALID /
 * PAY_EVERSION with *out = NULL and nothing started. Thread-safe. */
PAY_API int pay_submit_start(pay_pending **out, pay_client *client, const char *order_id, const void *body,
                             size_t body_len, const pay_submit_options *opts);

/* Waits up to `timeout_ms` (0: only look; negative: as long as it takes) for
 * the payment's answer; from a done callback only 0 is allowed (PAY_EINVALID
 * otherwise). Returns 0 with the result in *out (the caller's), the
 * PAY_E* code of the payment's failed call (pay_error_last says why), or
 * PAY_EAGAIN when it has no answer yet (call again). Once the answer has been
 * collected, later calls return PAY_EINVALID. One thread at a time per handle. */
PAY_API int pay_pending_wait(pay_result **out, pay_pending *pending, int timeout_ms);

/* Frees the handle. A payment still running goes on to its end (it is in the
 * ledger; its answer is dropped). NULL is a no-op. */
PAY_API void pay_pending_free(pay_pending *pending);

/* ---- Counters ------------------------------------------------------------ */

/* A byte buffer the library allocated; release with pay_buf_dispose. */
typedef struct pay_buf {
  char *ptr;    /* NUL-terminated */
  size_t size;  /* excluding the NUL */
} pay_buf;

/* Frees buf->ptr and zeroes the struct. NULL and an empty buf are no-ops. */
PAY_API void pay_buf_dispose(pay_buf *buf);

/* Writes the client's counters as JSON into *out: attempts, retries by
 * reason, outcomes, budget exhaustion, prevented libcurl replays, budget
 * tokens left. Returns 0, PAY_EINVALID, PAY_ENOMEM. Thread-safe. */
PAY_API int pay_client_stats(pay_buf *out, const pay_client *client);

/* ---- Settling UNKNOWN payments ------------------------------------------ */

/* Asks the provider what happened to one payment, through the profile's
 * lookup (by merchant reference, or by the provider's id when one is known),
 * with its own bounded retry, and records the answer in the ledger. A
 * settled payment comes back from the ledger without any HTTP. "Not found"
 * proves "no payment" only after not_found_grace_ms since the last attempt;
 * the payment is then UNKNOWN/not_sent, safe to re-send with its key.
 * Where the provider offers no lookup (or only a same-key re-send), the
 * result is UNKNOWN with the reason, and pay_reconcile with a body settles
 * it. Returns 0 with *out, PAY_EINVALID, PAY_ENOTFOUND (no such order in the
 * ledger), PAY_ELEDGER. Thread-safe. */
PAY_API int pay_query(pay_result **out, pay_client *client, const char *order_id);

/* The body of one order, handed to payretry by a reconcile callback. */
typedef struct pay_body pay_body;

/* Copies `len` bytes as the order's body. Only valid inside the callback.
 * Returns 0, PAY_EINVALID. */
PAY_API int pay_body_set(pay_body *body, const void *data, size_t len);

/* Called by pay_reconcile when settling an order needs a same-key re-send
 * (the provider has no such payment, or offers no other lookup). Call
 * pay_body_set and return 0 to re-send; return non-zero when the
 * application no longer has the body (the payment stays UNKNOWN). The body
 * must be the very bytes first submitted: its fingerprint is checked. */
typedef int (*pay_body_cb)(pay_body *out, const char *order_id, void *payload);

typedef struct pay_reconcile_options {
  unsigned int version;       /* PAY_RECONCILE_OPTIONS_VERSION */
  pay_body_cb body_for;       /* NULL: never re-send */
  void *body_payload;
  uint32_t limit;             /* 0: 1000 payments per call */
  int64_t older_than_ms;      /* 0: any age; else only those untouched this long */
} pay_reconcile_options;

#define PAY_RECONCILE_OPTIONS_VERSION 1
#define PAY_RECONCILE_OPTIONS_INIT { PAY_RECONCILE_OPTIONS_VERSION, NULL, NULL, 0, 0 }

PAY_API int pay_reconcile_options_init(pay_reconcile_options *opts, unsigned int version);

/* Settles every UNKNOWN payment, and every IN_FLIGHT one whose lease
 * expired, through pay_query or a same-key re-send, and writes a JSON report
 * into *out: {"examined", "SUCCEEDED", "FAILED", "UNKNOWN", "IN_PROGRESS",
 * "errors", "payments": [result objects], "failures": [{order_id, error}]}.
 * Several reconcilers may run at once: each payment is settled under a
 * lease. `opts` may be NULL. Returns 0, PAY_EINVALID, PAY_EVERSION,
 * PAY_ELEDGER, PAY_ENOMEM. */
PAY_API int pay_reconcile(pay_buf *out, pay_client *client, const pay_reconcile_options *opts);

/* ---- Reading the ledger -------------------------------------------------- */

/* Writes one payment as JSON into *out: {"payment": {order_id,
 * idempotency_key, state, delivery, detail, provider_payment_id,
 * provider_status, http_status, attempts, created_at, key_expires_at,
 * lease_owner, lease_until, updated_at}, "attempts": [...]}. Times are Unix
 * milliseconds. Returns 0, PAY_EINVALID, PAY_ENOTFOUND, PAY_ELEDGER,
 * PAY_ENOMEM. Thread-safe. */
PAY_API int pay_ledger_get(pay_buf *out, pay_client *client, const char *order_id);

/* Writes a JSON array of payments (the "payment" objects above), oldest
 * update first: those in `state` ("PENDING", "IN_FLIGHT", "SUCCEEDED",
 * "FAILED", "UNKNOWN"; NULL for all) last updated before
 * `updated_before_unix_ms` (0: no limit), at most `limit` (0: 1000).
 * Returns 0, PAY_EINVALID (unknown state), PAY_ELEDGER, PAY_ENOMEM. */
PAY_API int pay_ledger_list(pay_buf *out, pay_client *client, const char *state,
                            int64_t updated_before_unix_ms, uint32_t limit);

/* ---- Version ------------------------------------------------------------- */

/* The library's version string ("0.1.0") and number (PAY_VERSION_NUMBER of
 * the built library); compare with the header's to catch a mismatch. */
PAY_API const char *pay_version(void);
PAY_API int pay_version_number(void);

PAY_END_DECL

#endif /* PAYRETRY_CLIENT_H */
