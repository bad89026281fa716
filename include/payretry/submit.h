/* payretry/submit.h: submitting one payment and waiting for its outcome.
 * The options here serve pay_submit_async and pay_submit_start too (async.h).
 * Threading: see client.h. */
#ifndef PAYRETRY_SUBMIT_H
#define PAYRETRY_SUBMIT_H

#include "payretry/common.h"
#include "payretry/result.h"
#include "payretry/client.h"

PAY_BEGIN_DECL

/* ---- Submitting one payment ---------------------------------------------- */

/* One extra request header of a submission. */
typedef struct pay_header {
  const char *name;
  const char *value;
} pay_header;

typedef struct pay_submit_options {
  unsigned int version;          /* PAY_SUBMIT_OPTIONS_VERSION (1 is still accepted) */
  const char *idempotency_key;   /* NULL: a fresh UUIDv4 from the CSPRNG */
  const char *path;              /* NULL: the profile's create path */
  uint32_t deadline_ms;          /* 0: the client's; else the smaller of the two */
  /* Version 2. */
  /* Extra headers on every attempt of this payment (a Stripe-Account, a
   * tenant header): they may scope the provider's store, so they are kept
   * in the payment's ledger row, and its lookups and reconcile's re-sends
   * carry them too. At most 64, each name once; names HTTP tokens, values
   * printable with no CR/LF; none may be a header payretry, its signer or
   * the config sets (Content-Type, Accept, User-Agent, the idempotency
   * key's, Authorization, Wechatpay-Serial, the config's auth and extra
   * headers, traceparent), nor look like a credential or card data (the
   * ledger holds no secret: a per-attempt signature belongs in the request
   * hook). Otherwise PAY_EINVALID naming it, nothing sent. They are part of
   * the payment's fingerprint, like the body: submitting the order again
   * without them, or with others, is PAY_EMISMATCH, nothing sent. */
  const pay_header *headers;
  size_t header_count;
  /* W3C trace context of this submission, "00-<32 hex>-<16 hex>-<2 hex>"
   * (lower case): sent as `traceparent` on every attempt and written in each
   * attempt and outcome log line. NULL: none. Malformed: PAY_EINVALID. */
  const char *traceparent;
} pay_submit_options;

#define PAY_SUBMIT_OPTIONS_VERSION 2
#define PAY_SUBMIT_OPTIONS_INIT { PAY_SUBMIT_OPTIONS_VERSION, NULL, NULL, 0, NULL, 0, NULL }

/* Fills `opts` with defaults for `version` (1 or 2; a version-1 struct is
 * the first four fields). Returns 0, PAY_EINVALID for NULL, PAY_EVERSION. */
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

PAY_END_DECL

#endif /* PAYRETRY_SUBMIT_H */
