/* payretry/async.h: many payments at once on the client's engine thread: a
 * blocking batch, a start with a done callback, and a start with a handle to
 * poll or wait on. */
#ifndef PAYRETRY_ASYNC_H
#define PAYRETRY_ASYNC_H

#include "payretry/common.h"
#include "payretry/result.h"
#include "payretry/client.h"
#include "payretry/submit.h"

PAY_BEGIN_DECL

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

/* One payment of a batch: the inputs, then what pay_submit_batch wrote.
 *
 * Frozen for the life of the ABI (until the next major version): callers
 * pass arrays of it, so the library finds items[i] by sizeof(pay_batch_item)
 * as the caller's compiler laid them out, and a member added anywhere, a
 * version or size field included, would move every item after the first.
 * It has no version field and gains no member. A per-item input or output
 * that a later version needs arrives in a new item struct taken by a new
 * call beside pay_submit_batch, which stays as it is (docs/c-api.md,
 * "Options structs"). */
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
 * pay_submit_batch, no blocking pay_pending_wait, no pay_query, no
 * pay_reconcile (all return PAY_EINVALID there), no pay_submit (it would
 * stall every payment in flight), and no pay_client_free on its own client. Every payment in flight waits while it
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

PAY_END_DECL

#endif /* PAYRETRY_ASYNC_H */
