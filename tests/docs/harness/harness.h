/* The names the C and C++ fragments of README.md and the docs/ pages use without
 * declaring them, so that run_snippets.py can compile each fragment as the
 * body of a main() and run it against payretry-sim. Every name a fragment
 * leaves to its reader (the application's own "fulfil the order", "the body
 * of that order", the client made earlier) is here, and nothing else: a
 * fragment that needs a new name fails to compile until it is added.
 *
 * The driver passes what depends on the run in the environment:
 *   DOCS_CONFIG      the config of `client` (the simulator's address and key,
 *                    a ledger in the run's own folder)
 *   DOCS_BODY        `body`: a payment body for order-1042, or a signed
 *                    notification (clause "webhook ORDER")
 *   DOCS_SIG_HEADER  `sig_header`: that notification's Stripe-Signature
 * Each body names its order in metadata.order_id, as the stripe profile
 * requires; docs_body_of() writes the same bytes the driver does. */
#ifndef PAYRETRY_DOCS_HARNESS_H
#define PAYRETRY_DOCS_HARNESS_H

#include <payretry/payretry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <payretry/payretry.hpp>
#endif

/* Unused in most fragments; never a warning. */
#define DOCS_UNUSED __attribute__((unused))

/* How many outcomes the application callbacks saw that the documents do not
 * promise (a decline, an UNKNOWN, a failed call): main() exits 1 if any. */
static int docs_unexpected DOCS_UNUSED;

static void docs_note(const char *what, const char *detail) {
  printf("docs-harness: %s %s\n", what, detail ? detail : "(null)");
  fflush(stdout);
}

/* The body of an order, as the driver writes it (FIXTURE_BODY there). */
static char docs_bodies[4][128];
static const char *docs_body_of(int slot, const char *order_id) {
  snprintf(docs_bodies[slot], sizeof docs_bodies[slot],
           "{\"amount\":1000,\"currency\":\"eur\",\"metadata\":{\"order_id\":\"%s\"}}", order_id);
  return docs_bodies[slot];
}

/* ---- The application's side of the fragments ----------------------------- */

static void fulfil(const char *provider_payment_id) DOCS_UNUSED;
static void fulfil(const char *provider_payment_id) { docs_note("fulfil", provider_payment_id); }
static void show_error(const char *error) DOCS_UNUSED;
static void show_error(const char *error) {
  docs_note("show_error", error);
  ++docs_unexpected;
}
static void settle_later(const char *idempotency_key) DOCS_UNUSED;
static void settle_later(const char *idempotency_key) {
  docs_note("settle_later", idempotency_key);
  ++docs_unexpected;
}

/* A result the fragment hands over (a batch item's). */
static void handle(pay_result *r) DOCS_UNUSED;
static void handle(pay_result *r) {
  docs_note("handle", pay_result_json(r));
  if (pay_result_outcome(r) != PAY_OUTCOME_SUCCEEDED) ++docs_unexpected;
}

/* pay_submit_async's callback: main() waits for it in pay_client_free. */
static void on_done(int rc, pay_result *result, const char *message, void *payload) DOCS_UNUSED;
static void on_done(int rc, pay_result *result, const char *message, void *payload) {
  (void)payload;
  if (rc != PAY_OK) {
    docs_note("on_done failed:", message);
    ++docs_unexpected;
    return;
  }
  handle(result);
  pay_result_free(result);
}
static void *ctx DOCS_UNUSED = NULL;

/* pay_reconcile's body_for: the very bytes first submitted. */
static int my_body_lookup(pay_body *out, const char *order_id, void *payload) DOCS_UNUSED;
static int my_body_lookup(pay_body *out, const char *order_id, void *payload) {
  (void)payload;
  const char *b = docs_body_of(3, order_id);
  return pay_body_set(out, b, strlen(b));
}

/* ---- What the fragments take as given -------------------------------------- */

static pay_client *client DOCS_UNUSED;   /* made from DOCS_CONFIG before the fragment */
static const char *body DOCS_UNUSED;     /* DOCS_BODY */
static size_t len DOCS_UNUSED, body_len DOCS_UNUSED;
static const char *sig_header DOCS_UNUSED;
static const char *stored_key_for_this_order DOCS_UNUSED = "docs-key-order-1042";
/* A batch: three more orders, each with its body. */
static const char *orders[3] DOCS_UNUSED = {"order-1043", "order-1044", "order-1045"};
static const char *bodies[3] DOCS_UNUSED;

static const char *docs_env(const char *name) {
  const char *v = getenv(name);
  if (!v) {
    fprintf(stderr, "docs-harness: %s is not set (run through tests/docs/run_snippets.py)\n", name);
    exit(2);
  }
  return v;
}

static void docs_setup(void) {
  const char *config = docs_env("DOCS_CONFIG");
  if (pay_client_new(&client, config, NULL) != PAY_OK) {
    fprintf(stderr, "docs-harness: the harness's client: %s\n", pay_error_last()->message);
    exit(2);
  }
  body = docs_env("DOCS_BODY");
  len = body_len = strlen(body);
  sig_header = getenv("DOCS_SIG_HEADER") ? getenv("DOCS_SIG_HEADER") : "";
  for (int i = 0; i < 3; ++i) bodies[i] = docs_body_of(i, orders[i]);
}

/* Waits for every payment the fragment started (pay_client_free does), then
 * says whether the callbacks saw only what the documents promise. */
static int docs_finish(void) {
  pay_client_free(client);
  client = NULL;
  return docs_unexpected ? 1 : 0;
}

#ifdef __cplusplus
/* The C++ fragments' versions of the same names. */
static const std::string config_json DOCS_UNUSED = docs_env("DOCS_CONFIG");
static void fulfil(std::string_view id) DOCS_UNUSED;
static void fulfil(std::string_view id) { fulfil(std::string(id).c_str()); }
static void settle_later(std::string_view key) DOCS_UNUSED;
static void settle_later(std::string_view key) { settle_later(std::string(key).c_str()); }
static std::optional<std::string> body_of(std::string_view order) DOCS_UNUSED;
static std::optional<std::string> body_of(std::string_view order) { return std::string(docs_body_of(3, std::string(order).c_str())); }
#endif

#endif
