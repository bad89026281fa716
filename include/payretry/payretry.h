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

#include "payretry/common.h"
#include "payretry/version.h"
#include "payretry/errors.h"
#include "payretry/result.h"
#include "payretry/client.h"

#endif /* PAYRETRY_H */
