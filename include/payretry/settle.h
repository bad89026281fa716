/* payretry/settle.h: settling payments whose outcome is UNKNOWN: asking the
 * provider about one (pay_query), or all of them (pay_reconcile). */
#ifndef PAYRETRY_SETTLE_H
#define PAYRETRY_SETTLE_H

#include "payretry/common.h"
#include "payretry/result.h"
#include "payretry/buffer.h"
#include "payretry/client.h"

PAY_BEGIN_DECL

/* ---- Settling UNKNOWN payments ------------------------------------------ */

/* Asks the provider what happened to one payment, through the profile's
 * lookup (by merchant reference, or by the provider's id when one is known),
 * with its own bounded retry, and records the answer in the ledger. A
 * settled payment keeps its outcome: it comes back from the ledger without
 * any HTTP, unless its money may still move (unknown, awaiting_customer,
 * pending, authorized) and its row names the provider's payment; then the
 * provider is asked where the money is and the answer moves the money
 * state forward only. "Not found"
 * proves "no payment" only after not_found_grace_ms since the last attempt;
 * the payment is then UNKNOWN/not_sent, safe to re-send with its key.
 * Where the provider offers no lookup (or only a same-key re-send), the
 * result is UNKNOWN with the reason, and pay_reconcile with a body settles
 * it. The lookup carries the payment's own submission headers. A payment
 * made by a client of another scope (another merchant account on a shared
 * ledger: docs/design.md "Merchant accounts on one ledger") is not this
 * client's to ask about: PAY_EMISMATCH, nothing sent. Returns 0 with *out,
 * PAY_EINVALID, PAY_ENOTFOUND (no such order in the ledger), PAY_EMISMATCH,
 * PAY_ELEDGER. Thread-safe. */
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

/* Settles every UNKNOWN payment of this client's scope, and every IN_FLIGHT
 * one whose lease expired, through pay_query or a same-key re-send (with
 * the payment's own submission headers), and writes a JSON report
 * into *out: {"examined", "SUCCEEDED", "FAILED", "UNKNOWN", "IN_PROGRESS",
 * "errors", "payments": [result objects], "failures": [{order_id, error}]}.
 * Several reconcilers may run at once: each payment is settled under a
 * lease. `opts` may be NULL. Returns 0, PAY_EINVALID, PAY_EVERSION,
 * PAY_ELEDGER, PAY_ENOMEM. */
PAY_API int pay_reconcile(pay_buf *out, pay_client *client, const pay_reconcile_options *opts);

PAY_END_DECL

#endif /* PAYRETRY_SETTLE_H */
