// How one provider speaks: the single description of a modelled provider.
// The provider model (provider_model.cpp) reads nothing else, so that a
// schedule can run against a built-in provider (the table in wire.cpp, from
// the documents the built-in profiles cite) or against a random one drawn
// from the profile schema (random_wire.cpp), whose profile is then written
// from the wire and loaded with the library's own parse_profile().
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "profile.hpp"

namespace payretry::dst {

// Where a payment's money is, in the steps the provider names with its own
// words (docs/providers.md "Where the money is"): paid at once, waiting for
// its customer, or held; later its customer pays or abandons it, and a held
// one is captured or voided. A refused create is `declined`.
enum class Phase { paid, waits, held, captured, abandoned, voided, declined };
inline constexpr int kPhases = 7;
const char* phase_name(Phase p);
// What the phase means for the money, as the provider's truth: nothing
// moved yet (waits), held, captured, or never will (failed).
enum class Money { nothing, held, captured, failed };
Money money_of(Phase p);

// One answer as the provider renders it. The body is a template: {id} the
// provider's payment id, {ref} the merchant reference the request carried,
// {status} a lookup's status word (a create's, where its word varies), and
// {extra} members that say more about the money (PayPal's purchase units).
struct AnswerShape {
  int status = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct Wire {
  // For logs and replay lines: the built-in's name, or "random".
  std::string name;
  ReplayKind replay = ReplayKind::all_answers;

  // Where the key travels: a header, a member of the body (written by the
  // client when absent), or the merchant reference itself, which the
  // provider never forgets.
  enum class Identity { header, body_key, reference } identity = Identity::header;
  std::string key_header = "Idempotency-Key";
  std::string key_path;  // body_key / reference: the dotted path in the body

  // Where every body carries the order id (the simulation's ground truth
  // for "which order was charged"; the provider's own metadata).
  std::string order_path = "order_id";

  // Members every caller's body also holds (dotted path, JSON text; {amount}
  // is the order's amount): Alipay's biz_content.total_amount.
  std::vector<std::pair<std::string, std::string>> body_extras;

  // Creates must be form-encoded (Stripe v1): any other body is refused
  // with a 400 before the idempotency layer, as Stripe does.
  bool form_bodies = false;
  // Alipay's gateway form: top-level members are form fields, biz_content
  // a JSON string; creates and lookups alike. Anything else is refused.
  bool gateway_form = false;

  // Requests must be signed: by the scheme of a built-in signer (checked
  // for real when the schedule builds the library's authenticator, else
  // the request hook's stand-in signature), or not at all.
  enum class Signs { none, wechatpay, alipay } signs = Signs::none;

  // How long a key is remembered after its first request (0: forever);
  // the simulation may shorten it (a config's key_retention_ms).
  int64_t retention_ms = 0;

  // success_only: may an error answer the provider did not store be lost on
  // the way back (so that the client sees only a timeout)? Documented for
  // Checkout.com and Square; providers whose replay is undocumented
  // ("replay": "none") are assumed to store what processing produced, an
  // error that is not stored being one the client sees.
  bool hidden_uncached_errors = true;
  // A refused payment leaves a record a lookup finds (false: WeChat Pay
  // creates no order for a refused one).
  bool decline_leaves_record = true;
  // An error answer after processing names the payment (at its id path).
  bool error_carries_id = false;
  // The header a replayed answer carries ("" none).
  std::string replay_marker;
  // Stripe marks 409 and 429 with Stripe-Should-Retry (St4).
  bool should_retry_header = false;

  // The provider's payment ids: this prefix and a counter.
  std::string id_prefix = "pi_";

  // Which store a request reaches: one per account (the credential it
  // carries: a fixed key, or the account an OAuth2 token was issued to), per
  // value of each of these headers (a tenant header of the client's config,
  // a payment's own X-Account), and per account a create path names
  // (account_path_prefix + name + "/..."). A key, a reference and a payment
  // exist in their store only: another store's lookup does not find them,
  // and the same key sent there is a new payment. Charges are counted per
  // order across all stores.
  std::vector<std::string> store_headers = {"X-Tenant", "X-Account", "Stripe-Account"};
  std::string account_path_prefix = "/acct/";

  // OAuth2 client credentials: tokens come from this path (under the base
  // URL), with an expiry; every other request must carry a live one, or is
  // refused with a 401 before anything is processed ("": a fixed credential).
  std::string token_path;
  // A gateway in front may refuse the credential after the payment was
  // processed (a token that expired or was revoked on the way): 401 after
  // the charge. False: the provider documents that a 401 processed nothing
  // (the profile may then say auth.unauthorized_not_processed).
  bool unauthorized_after_processing = true;

  // Answers to a create.
  AnswerShape success, decline, decline_alt, error, in_progress, mismatch, already_paid, unsigned_request;

  // The lookup. by_reference searches the payments whose request carried
  // `search_path` (the merchant reference) with the value asked for; a
  // payment whose request did not carry it is never found that way.
  enum class Lookup { none, replay, by_reference, by_id } lookup = Lookup::none;
  std::string lookup_method = "GET";
  // Where lookups go: the path prefix before the id or reference, or
  // (gateway_form) the gateway method of the query.
  std::string lookup_path;
  std::string lookup_gateway_method;
  // A POST lookup carries what it searches for in its body, here (dotted);
  // empty: at the end of the path, up to its query.
  std::string lookup_body_path;
  std::string search_path;
  // How callers fill search_path in the bodies they hand over: always (it
  // is the identity, or the profile requires it), half of them (the client
  // writes it when the profile names it as reference_path), or sometimes
  // absent and sometimes another value of theirs (a reference the profile
  // does not know the lookup searches by).
  enum class CallerReference { none, always, half, unreliable } caller_reference = CallerReference::none;
  AnswerShape found, not_found;
  std::string word_charged, word_declined;
  // While a payment is still processing, lookups show it under this word
  // ("" the payment is not visible yet).
  std::string word_processing;

  // The provider's words for each phase: in a create's answer ({status} of
  // `success`), in a lookup's ({status} of `found`), and more members of
  // both ({extra}). A phase whose create and lookup words are both empty
  // is one this provider never draws (a lookup then says word_charged or
  // word_declined): random wires know only paid and declined.
  struct MoneyWords {
    std::string create, lookup, extra;
  };
  std::array<MoneyWords, kPhases> money;
  // A payment that asks nothing of its customer (Adyen's Authorised is a
  // hold; a WeChat Pay prepay_id waits for its payer), and where a waiting
  // payment goes when its customer pays (Adyen: authorised, not captured).
  Phase at_once = Phase::paid;
  Phase customer_pays = Phase::paid;
  bool has_phase(Phase p) const {
    const MoneyWords& m = money[static_cast<size_t>(p)];
    return !m.create.empty() || !m.lookup.empty();
  }
  // A lookup's word for a payment in phase `p`.
  const std::string& lookup_word(Phase p) const;

  // Refunds of a payment (issue 47), where the model speaks them: a POST
  // under the payment's key rules that moves none of the payment's money
  // but makes a refund of its own, which the provider decides at once or
  // later (Stripe's pending refund, Checkout.com's 202 "accepted" listed
  // among the payment's actions once processed), approved or declined.
  struct Refunds {
    enum class Style {
      none,
      // Stripe: POST /v1/refunds (payment_intent in the body) answers the
      // refund object; GET /v1/refunds/{id} reads it again.
      object,
      // Checkout.com: POST /payments/{id}/refunds answers 202 with the
      // action's id only; GET /payments/{id}/actions lists the payment's
      // actions, newest first, a refund once it is processed.
      actions
    } style = Style::none;
    std::string path;           // object: the POST path; actions: the prefix before the payment's id
    std::string path_suffix;    // actions: after the payment's id ("/refunds")
    std::string payment_field;  // object: the body member naming the payment
    std::string id_prefix;      // the refunds' (actions') ids
    std::string lookup_path;    // object: the prefix before the refund's id; actions: the suffix after the payment's id
    std::string reference_field;  // actions: the body member each listed action shows as its reference ("" none)
    // A payment's lookup word once refunds moved part or all of its money
    // ("" the word does not change: a Stripe PaymentIntent stays succeeded).
    std::string word_partly_refunded, word_refunded;
  } refunds;
  bool speaks_refunds() const { return refunds.style != Refunds::Style::none; }
  // Whether a request is a refund's lookup.
  bool is_refund_lookup(const std::string& method, const std::string& path) const;

  // Which requests are lookups (a refund's lookup too).
  bool is_lookup(const std::string& method, const std::string& path_and_query) const;
};

// The built-in profile `profile`'s provider. `undocumented` is the behaviour
// chosen for a provider whose replay the profile marks "none" (generic,
// adyen): any documented behaviour.
Wire wire_for(const std::string& profile, ReplayKind undocumented);

// Fills an answer template.
std::string fill_answer(const std::string& tmpl, const std::string& id, const std::string& ref,
                        const std::string& status, const std::string& extra = "");

}  // namespace payretry::dst
