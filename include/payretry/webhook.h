/* payretry/webhook.h: a provider's notification (webhook) settles the
 * payments it names. Hand payretry what your HTTP server received; send back
 * what it answers. docs/webhooks.md. Threading: see client.h. */
#ifndef PAYRETRY_WEBHOOK_H
#define PAYRETRY_WEBHOOK_H

#include "payretry/common.h"
#include "payretry/buffer.h"
#include "payretry/client.h"
#include "payretry/submit.h" /* pay_header */

PAY_BEGIN_DECL

/* What the HTTP server received, as it received it. */
typedef struct pay_webhook_request {
  unsigned int version;      /* PAY_WEBHOOK_REQUEST_VERSION */
  const char *method;        /* "POST" */
  /* The full URL the provider called, scheme and host included
   * ("https://shop.example/hooks/square"): Square signs it. NULL: "". */
  const char *url;
  const pay_header *headers; /* every header, names in any case */
  size_t header_count;
  const void *body;          /* the raw body bytes, before any parsing: every scheme signs bytes */
  size_t body_len;
} pay_webhook_request;

#define PAY_WEBHOOK_REQUEST_VERSION 1
#define PAY_WEBHOOK_REQUEST_INIT { PAY_WEBHOOK_REQUEST_VERSION, NULL, NULL, NULL, 0, NULL, 0 }

/* What to answer the provider, and what the notification did. */
typedef struct pay_webhook_reply {
  int status;            /* the HTTP status to answer with */
  pay_buf content_type;  /* its Content-Type; empty: send none */
  pay_buf body;          /* its body (Adyen's "[accepted]", Alipay's "success"); may be empty */
  /* JSON: {"verdict": "accepted" | "refused" | "retry", "why", "scheme",
   * "status", "events": [{"event_id", "type", "order_id",
   * "provider_payment_id", "provider_status", "finding": "succeeded" |
   * "failed" | "noted", "money_state": where the event says the money
   * is (pay_money_state_name; it moves the payment's only when the event is
   * provably that payment's), "effect": "settled" | "recorded" | "conflict" |
   * "duplicate" | "kept" | "ignored" | "error", "state_before",
   * "state_after", "why"}]} */
  pay_buf outcome;
} pay_webhook_reply;

/* Frees what pay_webhook_apply wrote into `reply` and zeroes it. NULL: no-op. */
PAY_API void pay_webhook_reply_dispose(pay_webhook_reply *reply);

/* Verifies the notification with the profile's scheme and the config's
 * "webhook" secrets, reads its events through the profile's webhook block,
 * and records each in the ledger once, in the same commit as the state it
 * settles: an UNKNOWN payment the provider reports succeeded or failed
 * becomes SUCCEEDED or FAILED; a settled payment never moves (a contrary
 * event is recorded and reported as a conflict); an event seen before
 * changes nothing; one for a payment being sent is kept and settles it at
 * the next pay_query or pay_reconcile. Where the profile confirms by lookup
 * (Mollie), the provider's own answer decides, never the notification.
 *
 * Returns 0 with *reply filled whatever the notification held:
 *  - accepted: verified and every event stored (or ignored: authentic but
 *    not this client's); reply->status is the provider's ack (2xx);
 *  - refused: not verified, malformed, stale or replayed; nothing changed;
 *    reply->status 400;
 *  - retry: verified, not stored (the ledger failed, a confirming lookup
 *    failed); reply->status 503, never 2xx, so the provider delivers again.
 * Returns PAY_EINVALID (NULL argument, a header with a NULL name or value),
 * PAY_EVERSION, PAY_ECONFIG (the profile reads no notifications, or the
 * config has no "webhook" block its scheme needs), with *reply zeroed.
 * Blocks on the ledger (and on a lookup where the profile confirms by one):
 * refused from a done callback. Thread-safe. */
PAY_API int pay_webhook_apply(pay_webhook_reply *reply, pay_client *client, const pay_webhook_request *request);

PAY_END_DECL

#endif /* PAYRETRY_WEBHOOK_H */
