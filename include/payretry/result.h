/* payretry/result.h: what one payment submission ended as.
 *
 * Threading: a pay_result is immutable once returned; any thread may read it,
 * and several threads may read it at once. It does not refer to its client:
 * it stays valid after pay_client_free() until pay_result_free().
 * Every `const char *` returned here is borrowed from the result and stays
 * valid until pay_result_free() of that result.
 */
#ifndef PAYRETRY_RESULT_H
#define PAYRETRY_RESULT_H

#include "payretry/common.h"

PAY_BEGIN_DECL

typedef struct pay_result pay_result;

/* What the caller may conclude about the payment (the README's "Outcomes"). */
typedef enum pay_outcome {
  PAY_OUTCOME_SUCCEEDED = 1,   /* took effect at the provider; fulfil on the money state (pay_result_money_state), not on this */
  PAY_OUTCOME_FAILED = 2,      /* definitive: the provider will not charge for it */
  PAY_OUTCOME_UNKNOWN = 3,     /* may have been processed: never re-create, query later */
  PAY_OUTCOME_IN_PROGRESS = 4  /* another worker holds this order right now */
} pay_outcome;

/* How far the request got, summed over every attempt. */
typedef enum pay_delivery {
  PAY_DELIVERY_NOT_SENT = 1,         /* no attempt can have been processed by the provider */
  PAY_DELIVERY_MAYBE_PROCESSED = 2,  /* some attempt may have been processed; no answer proves what */
  PAY_DELIVERY_DELIVERED = 3         /* the provider answered definitively */
} pay_delivery;

/* Where the money is (docs/providers.md "Where the money is"), beside
 * whether the request took effect: a SUCCEEDED create of a PayPal order, a
 * Stripe PaymentIntent requiring 3-D Secure or a WeChat Pay prepay_id has
 * moved no money. Fulfil on PAY_MONEY_PAID (or PAY_MONEY_AUTHORIZED where
 * you capture later yourself), never on PAY_OUTCOME_SUCCEEDED alone. Mapped
 * per profile from the provider's own words (pay_result_provider_status
 * keeps the word); it only moves forward. Values are only appended. */
typedef enum pay_money_state {
  PAY_MONEY_UNKNOWN = 0,            /* no word read yet, or one the profile does not map: wait, query */
  PAY_MONEY_AWAITING_CUSTOMER = 1,  /* nothing moved; the customer (or your confirm) is next: do not ship */
  PAY_MONEY_PENDING = 2,            /* the provider, a bank or the method is deciding: do not ship */
  PAY_MONEY_AUTHORIZED = 3,         /* held, not captured: capture, then fulfil */
  PAY_MONEY_PAID = 4,               /* captured: fulfil */
  PAY_MONEY_PARTLY_REFUNDED = 5,    /* paid, and part of it went back */
  PAY_MONEY_REFUNDED = 6,           /* paid, and all of it went back */
  PAY_MONEY_FAILED = 7              /* final: no money moved or will; a new try is a new order */
} pay_money_state;

/* The outcome (a pay_outcome), or PAY_EINVALID when `r` is NULL. */
PAY_API int pay_result_outcome(const pay_result *r);

/* The delivery class (a pay_delivery), or PAY_EINVALID when `r` is NULL. */
PAY_API int pay_result_delivery(const pay_result *r);

/* HTTP status of the response that decided the outcome; 0 when no response
 * decided it (a transport failure, or no attempt made). 0 for NULL. */
PAY_API int pay_result_http_status(const pay_result *r);

/* The body of that response (not NUL-terminated in general: use *len).
 * Returns "" with *len = 0 when there was none, NULL for a NULL `r`.
 * `len` may be NULL. */
PAY_API const char *pay_result_body(const pay_result *r, size_t *len);

/* The order id, and the idempotency key used on every attempt. NULL for NULL. */
PAY_API const char *pay_result_order_id(const pay_result *r);
PAY_API const char *pay_result_idempotency_key(const pay_result *r);

/* The provider's payment id and its own status word (e.g. "succeeded",
 * "requires_action"), read from the deciding response; NULL when absent. */
PAY_API const char *pay_result_provider_payment_id(const pay_result *r);
PAY_API const char *pay_result_provider_status(const pay_result *r);

/* Where the money is (a pay_money_state), or PAY_EINVALID when `r` is NULL. */
PAY_API int pay_result_money_state(const pay_result *r);

/* 1 when the outcome was read from the ledger (the order was submitted
 * before and is settled, expired or held elsewhere) and nothing was sent;
 * 0 otherwise, and for NULL. */
PAY_API int pay_result_from_ledger(const pay_result *r);

/* Number of HTTP attempts made (sent or tried). 0 for NULL. */
PAY_API int pay_result_attempts(const pay_result *r);

/* Why the outcome is what it is when it is not plainly SUCCEEDED, e.g.
 * "attempts_exhausted", "deadline", "retry_budget_exhausted",
 * "retry_after_beyond_deadline", "declined: card_declined". NULL when none.
 * Never holds secrets or card data. */
PAY_API const char *pay_result_error(const pay_result *r);

/* NULL when the ledger holds this result. Otherwise why the ledger could
 * not record it: a request was (maybe) sent, so the call still answers with
 * this result (the provider's outcome, or UNKNOWN), but a restart will not
 * find it there; the payment stays IN_FLIGHT or UNKNOWN in the ledger and is
 * resumed or reconciled once its lease ends. Treat it as you would the same
 * outcome, and never submit the order again as a new payment. Redacted.
 * NULL for NULL. */
PAY_API const char *pay_result_ledger_error(const pay_result *r);

/* The whole result as one JSON object (outcome, delivery, key, provider ids,
 * http status, error, "recorded" and "ledger_error", and every attempt with
 * its timing, status, verdict and delay): the stable view for bindings and
 * logs. Does not include the body. Written on the first call (results
 * nobody reads as JSON cost no rendering), then the same text every call;
 * safe from several threads at once like every other accessor.
 * NULL for NULL, and NULL with pay_error_last() set (PAY_ENOMEM) when the
 * text could not be allocated; the result itself is whole either way. */
PAY_API const char *pay_result_json(const pay_result *r);

/* Frees the result. NULL is a no-op. */
PAY_API void pay_result_free(pay_result *r);

/* Static names: "SUCCEEDED", ...; "not_sent", ...; "?" for unknown values. */
PAY_API const char *pay_outcome_name(int outcome);
PAY_API const char *pay_delivery_name(int delivery);
/* "unknown", "awaiting_customer", "pending", "authorized", "paid",
 * "partly_refunded", "refunded", "failed"; "?" for other values. */
PAY_API const char *pay_money_state_name(int state);

PAY_END_DECL

#endif /* PAYRETRY_RESULT_H */
