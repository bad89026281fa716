// Provider profiles: how the simulator looks to a client when it plays one provider. A profile
// changes identity (key header, body key field or merchant reference), replay semantics
// (stored response, current state, or an "already paid" error code), which outcomes are cached,
// error shapes and the lookup endpoints. Faults, scripts, admin truth and charges are the same
// for every profile. The facts behind each choice are in shared/research/providers.md; shapes
// the research could not settle are marked "sim choice" in profiles.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace payretry_sim {

class State;
struct Reply;

enum class ProfileId : uint8_t {
  stripe,
  checkout_com,
  paypal,
  square,
  wechatpay_v3,
  adyen,
  mollie,
  alipay,
};

// Where the request's identity comes from.
enum class Identity : uint8_t {
  header,     // an idempotency key header (optional: without it every request is new)
  body_key,   // a body field holding the key (Square's idempotency_key; required)
  reference,  // the merchant reference is the identity (WeChat Pay / Alipay out_trade_no)
};

// What a request with a finished identity gets.
enum class Replay : uint8_t {
  stored,         // the stored status and body
  current_state,  // success: the payment as it is now, with replayed_status (PayPal)
  error_code,     // success: the `already_paid` error (WeChat ORDERPAID, Alipay TRADE_HAS_SUCCESS)
};

// What a create or lookup must carry (gate.cpp), after the design's profile `auth` schemes.
enum class AuthScheme : uint8_t {
  bearer,                     // `Authorization: Bearer K` when --api-key K is set (State::authorized)
  oauth2_client_credentials,  // a live token from POST /v1/oauth2/token (PayPal)
  wechatpay_v3,               // WECHATPAY2-SHA256-RSA2048 signed requests and answers
  alipay_rsa2,                // the gateway's signed form and signed answers
};

// A fixed response.
struct Canned {
  int status;
  std::string_view body;
};

// A payment as the formatters see it.
struct PaymentView {
  uint64_t number = 0;  // the charge number: ids are "pay_<number>"
  std::string_view order_id;
  int64_t amount = 0;  // minor units
  std::string_view currency;
};

struct Profile {
  ProfileId id;
  std::string_view name;
  Identity identity;
  std::string_view key_header;  // Identity::header: the default key header
  std::string_view key_field;   // Identity::body_key: the body field
  Replay replay;
  bool cache_only_2xx;  // a request that ends in 4xx/5xx (500 fault included) stores nothing
  bool replay_marker;   // stored replays carry "Idempotent-Replayed: true"
  bool echo_key;        // responses to keyed requests echo "idempotency-key: <key>" (Adyen)
  bool transient_503;   // 503 and in-flight conflicts carry "transient-error: true" (Adyen)
  std::string_view default_currency;
  int created_status;   // a fresh success
  int replayed_status;  // a current-state replay of a success
  int in_flight_status; // with format_in_flight: the status of a same-body re-entry
  Canned unauthorized;  // the bearer modes' refusal; OAuth2's too; WeChat Pay takes its status
  Canned invalid;
  Canned missing_key;  // Identity::body_key without the field
  Canned mismatch;     // same identity, other body
  Canned in_use;       // same identity while the first request runs (unless format_in_flight)
  Canned already_paid; // Replay::error_code
  Canned rate_limit;   // 429 (Retry-After is added)
  Canned bad_gateway;  // 502 fault
  Canned unavailable;  // 503 fault
  Canned internal;     // 500 fault
  Canned no_route;     // unknown path
  Canned method_not_allowed;
  int decline_status;
  // The body of a fresh success (also current-state replays and lookups by id where the
  // lookup returns the same object).
  void (*format_created)(std::string& out, const PaymentView& p);
  // The body of a decline. No charge is made; p.number is a fresh number (never a charge's)
  // for the providers that give a declined payment an id (Checkout.com, Adyen), 0 for Stripe.
  void (*format_declined)(std::string& out, const PaymentView& p);
  // When set, a same-body request while the first one runs is answered with this body and
  // in_flight_status (WeChat Pay re-entry, Alipay WAIT_BUYER_PAY) instead of `in_use`.
  void (*format_in_flight)(std::string& out, std::string_view order_id);
  AuthScheme auth = AuthScheme::bearer;
};

const Profile& stripe_profile();
// nullptr for an unknown name.
const Profile* find_profile(std::string_view name);
std::vector<std::string> profile_names();

// The fields of a payment request for the non-Stripe profiles, parsed with cJSON (the Stripe
// profile keeps the allocation-free scanner in state.cpp: it is the measured hot path).
struct ProfileFields {
  std::string order_id;
  std::string currency;
  std::string key;  // Identity::body_key and Identity::reference
  int64_t amount = 0;
};
enum class ParseOutcome { ok, invalid, missing_key };
ParseOutcome parse_profile_payment(const Profile& p, std::string_view body, ProfileFields* out);

// create_form: Stripe's form-encoded POST /v1/payment_intents (the Stripe profile only).
// gateway: Alipay's POST /gateway.do, a create or a lookup by its method parameter (gate.cpp).
// oauth2_token: PayPal's POST /v1/oauth2/token.
enum class Route { create, create_form, lookup, gateway, oauth2_token, method_not_allowed, no_route };
Route route(const Profile& p, std::string_view method, std::string_view path);
// Answers a Route::lookup request (authorization already checked). Alipay's `body` is the
// admitted gateway call as {"biz_content":"<JSON text>"}.
void lookup(const Profile& p, const State& state, std::string_view method, std::string_view path,
            std::string_view query, std::string_view body, Reply& out);

void set_canned(Reply& out, const Canned& c);

}  // namespace payretry_sim
