/* payretry.h: the public C API of payretry (C99).
 *
 * payretry makes payment-provider REST POSTs safe to retry: one stable
 * idempotency key per payment, byte-identical attempts, per-attempt timeouts
 * and a total deadline, retries only for what can recover, and UNKNOWN
 * (never FAILED) when the payment may have been processed.
 *
 * Conventions: every function returns 0 or a negative PAY_E* code unless it
 * says otherwise; out-parameters come first; whatever comes back through
 * `**out` belongs to the caller and has a *_free; every *_free(NULL) is a
 * no-op; pay_error_last() explains the last failure on this thread.
 */
#ifndef PAYRETRY_H
#define PAYRETRY_H

#include "payretry/common.h"   /* PAY_API, extern "C" guards */
#include "payretry/version.h"  /* PAY_VERSION*, pay_version() */
#include "payretry/errors.h"   /* PAY_E* codes, pay_error_last() */
#include "payretry/result.h"   /* pay_result: what a payment ended as */
#include "payretry/buffer.h"   /* pay_buf: JSON text the library wrote */
#include "payretry/client.h"   /* pay_client, its options, log callback, request hook, stats */
#include "payretry/submit.h"   /* pay_submit and its options */
#include "payretry/async.h"    /* pay_submit_batch, pay_submit_async, pay_submit_start, pay_pending */
#include "payretry/settle.h"   /* pay_query, pay_reconcile and its options */
#include "payretry/operation.h" /* pay_submit_operation: captures, refunds, cancels */
#include "payretry/ledger.h"   /* pay_ledger_get, pay_ledger_list */
#include "payretry/webhook.h"  /* pay_webhook_apply: provider notifications */

#endif /* PAYRETRY_H */
