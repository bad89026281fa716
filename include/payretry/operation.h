/* payretry/operation.h: captures, refunds and cancels of a payment this
 * client made, each sent as safely as the payment itself.
 * Threading: see client.h. */
#ifndef PAYRETRY_OPERATION_H
#define PAYRETRY_OPERATION_H

#include "payretry/common.h"
#include "payretry/result.h"
#include "payretry/client.h"

PAY_BEGIN_DECL

/* ---- Operations on a payment ---------------------------------------------- */

/* What to do to the payment. Values are only appended. */
typedef enum pay_operation {
  PAY_OPERATION_CAPTURE = 1, /* take (part of) an authorized hold */
  PAY_OPERATION_REFUND = 2,  /* give (part of) a paid payment back */
  PAY_OPERATION_CANCEL = 3   /* void a payment no money has moved for yet */
} pay_operation;

typedef struct pay_operation_options {
  unsigned int version;   /* PAY_OPERATION_OPTIONS_VERSION */
  /* Required: the caller's name for this operation, unique per payment and
   * kind ("r1", "refund-2026-12-07"): visible ASCII, no spaces, at most 255
   * bytes. The same ref again is the same operation (its stored key and
   * bytes); a new ref is a new one. */
  const char *ref;
  /* In the provider's units, as the profile's amount reader says (minor
   * units, or hundredths where the provider writes decimals). 0: the rest
   * (what is left to capture or to refund, as the ledger counts it).
   * Ignored for a cancel. */
  int64_t amount;
  /* Optional: a JSON object of further fields the provider takes (a reason,
   * metadata). Never the fields payretry writes (the amount, the payment's
   * id, the operation's key): setting one is PAY_EINVALID. NULL: none. */
  const char *body;
  /* The id the provider's path names besides the payment's, where it names
   * one (PayPal refunds a capture: its id). NULL: none. */
  const char *target_id;
  uint32_t deadline_ms;   /* 0: the client's; else the smaller of the two */
} pay_operation_options;

#define PAY_OPERATION_OPTIONS_VERSION 1
#define PAY_OPERATION_OPTIONS_INIT { PAY_OPERATION_OPTIONS_VERSION, NULL, 0, NULL, NULL, 0 }

/* Fills `opts` with defaults. Returns 0, PAY_EINVALID for NULL, PAY_EVERSION. */
PAY_API int pay_operation_options_init(pay_operation_options *opts, unsigned int version);

/* Captures, refunds or cancels the payment of `order_id` (one this client
 * submitted, in its ledger), as the provider's profile describes the
 * operation. The operation is a ledger row of its own (order id
 * "<order_id> <kind> <ref>"), its key and a fingerprint of what was asked
 * committed before the first byte, in the same transaction as the guard:
 * the payment must be SUCCEEDED and its money where the operation applies
 * (capture: authorized; refund: paid or partly refunded; cancel: nothing
 * moved yet), and the amount must fit what is left (the captures and
 * refunds of the payment that did not fail count as spent, UNKNOWN ones
 * too). Otherwise PAY_EINVALID saying why, nothing written, nothing sent.
 * Then it is sent, retried and settled as a payment is: the same key and
 * bytes on every attempt and in every later process, UNKNOWN when it may
 * have taken effect and nothing says whether. The result is the
 * operation's (its order id is the operation's row id; its money state
 * what the operation did: paid for a capture, refunded for a refund,
 * failed for a cancel); a succeeded operation moves its payment's money
 * forward (pay_ledger_get of the order shows it).
 *
 * Returns 0 with a result once anything may have been sent. Returns, with
 * *out = NULL and nothing sent: PAY_EINVALID (NULL or bad arguments, an
 * unknown kind, a provider whose profile has no such operation or one this
 * version does not send, a payment that is not settled or has no provider
 * id yet, an amount that does not fit), PAY_ENOTFOUND (no such payment),
 * PAY_EMISMATCH (the same ref asked before with other parameters, or a
 * payment of another scope), PAY_ETOOBIG, PAY_EVERSION, PAY_ELEDGER.
 * An UNKNOWN operation is settled by calling again with the same ref and
 * parameters (never with a new ref: that would be a second refund).
 * Thread-safe. */
PAY_API int pay_submit_operation(pay_result **out, pay_client *client, const char *order_id, int kind,
                                 const pay_operation_options *opts);

PAY_END_DECL

#endif /* PAYRETRY_OPERATION_H */
