/* payretry/ledger.h: reading what the ledger holds about payments, as JSON,
 * and forgetting old settled ones. Nothing here sends a request. */
#ifndef PAYRETRY_LEDGER_H
#define PAYRETRY_LEDGER_H

#include "payretry/common.h"
#include "payretry/buffer.h"
#include "payretry/client.h"

PAY_BEGIN_DECL

/* ---- Reading the ledger -------------------------------------------------- */

/* Writes one payment as JSON into *out: {"payment": {order_id,
 * idempotency_key, state, delivery, detail, provider_payment_id,
 * provider_status, http_status, attempts, created_at, key_expires_at,
 * lease_owner, lease_until, updated_at}, "attempts": [...]}, and for a
 * payment (not an operation's own row "<order> <kind> <ref>") its captures,
 * refunds and cancels as "operations": [{the same members}, ...]. Times are
 * Unix milliseconds. Returns 0, PAY_EINVALID, PAY_ENOTFOUND, PAY_ELEDGER,
 * PAY_ENOMEM. Thread-safe. */
PAY_API int pay_ledger_get(pay_buf *out, pay_client *client, const char *order_id);

/* Writes a JSON array of payments (the "payment" objects above), oldest
 * update first: those in `state` ("PENDING", "IN_FLIGHT", "SUCCEEDED",
 * "FAILED", "UNKNOWN"; NULL for all) last updated before
 * `updated_before_unix_ms` (0: no limit), at most `limit` (0: 1000).
 * Returns 0, PAY_EINVALID (unknown state), PAY_ELEDGER, PAY_ENOMEM. */
PAY_API int pay_ledger_list(pay_buf *out, pay_client *client, const char *state,
                            int64_t updated_before_unix_ms, uint32_t limit);

/* ---- Forgetting settled payments ---------------------------------------- */

/* Deletes every SUCCEEDED and FAILED payment last updated before
 * `updated_before_unix_ms` (> 0), with its attempts, in one transaction, and
 * writes how many into *pruned (when not NULL). Never an UNKNOWN, PENDING or
 * IN_FLIGHT payment: those still need settling. An order pruned and then
 * submitted again is a NEW payment under a new key: prune only payments no
 * one will submit again. Returns 0, PAY_EINVALID, PAY_ELEDGER. Thread-safe. */
PAY_API int pay_ledger_prune(pay_client *client, int64_t updated_before_unix_ms, uint64_t *pruned);

PAY_END_DECL

#endif /* PAYRETRY_LEDGER_H */
