// Provider profiles: how the simulator looks to a client when it plays one provider. A profile
// changes identity (key header, body key field or merchant reference), replay semantics
// (stored response, current state, or an "already paid" error code), which outcomes are cached,
// error shapes and the lookup endpoints. Faults, scripts, admin truth and charges are the same
// for every profile. The facts behind each choice are in docs/providers.md; shapes the
// sources do not settle are marked "sim choice" in profiles.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "money.hpp"

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

// Why a create was refused before anything was recorded: the parameter, as the body names it,
// and what is wrong with it. Each profile writes it in its provider's error shape
// (Profile::format_refusal), so that a client sees which parameter to fix, as the provider's
// own 400 would tell it.
enum class Problem : uint8_t {
  unreadable,   // the body is not what the route reads (not JSON, a bad % escape): no parameter
  missing,      // required and absent
  empty,        // a string that must not be empty
  not_string,   // present, another JSON type
  bad_number,   // an amount not in the form its field takes: not a number, a fraction of a
                // minor unit, a decimal string with more than two places
  bad_value,    // the right type and form, a value out of range or in conflict with another
};
struct Refusal {
  Problem problem = Problem::unreadable;
  // A dotted path into a JSON body ("amount.value", "purchase_units.0.reference_id") or a form
  // field's name ("metadata[order_id]"); empty for Problem::unreadable.
  std::string param;
  // What is wrong, in English, to follow the parameter's name: "is required: the order id the
  // payment is recorded under", "must be a positive integer (minor units)".
  std::string reason;
};
// "param reason", or the reason alone: the message every shape carries.
std::string refusal_message(const Refusal& r);

// A fixed response.
struct Canned {
  int status;
  std::string_view body;
};

// How a provider writes a payment id: `prefix`, then the decimal number, zero-padded to `width`
// digits (0: not padded). One counter numbers every charge; the shape only writes it.
struct IdShape {
  std::string_view prefix;
  uint8_t width = 0;
};
// prefix + number, e.g. {"tr_"} and 7 -> "tr_7", {"ORD", 14} and 7 -> "ORD00000000000007".
void append_id(std::string& out, const IdShape& shape, uint64_t number);
std::string format_id(const IdShape& shape, uint64_t number);
// The number of an id in this shape, exactly: only what append_id writes for a number > 0
// parses (for {"tr_"} not "tr_07", "tr_+7", "tr_7x" nor "pay_7"; for {"ORD", 14} not "ORD7").
bool parse_id(const IdShape& shape, std::string_view id, uint64_t* number);

// A payment as the formatters see it.
struct PaymentView {
  uint64_t number = 0;  // the charge number, written in the profile's payment_id shape
  std::string_view order_id;
  int64_t amount = 0;  // minor units
  std::string_view currency;
  // Where its money is and what its create asked (money.hpp): the formatters write the
  // provider's word for it. The default is the payment that went through at once.
  Money money = Money::paid;
  Wait wait = Wait::none;
  bool manual_capture = false;
  bool was_authorized = false;  // it was held before: a failed one was voided, a paid one captured
  // What operations (operations.hpp) captured and refunded of it: -1, none made, the money state
  // says it all (a paid payment is captured whole). Lookups of the payment write them the
  // provider's way (Checkout.com's Partially Captured and Refunded, Stripe's amount_received).
  int64_t captured = -1;
  int64_t refunded = 0;
};
// The HTTP status of a create's answer for `v` (Checkout.com answers a payment waiting for
// 3-D Secure 202, not 201).
struct Profile;
int created_status(const Profile& p, const PaymentView& v);
// The provider's own id of a payment's capture (PayPal's captures[0].id) and authorization
// (authorizations[0].id): 17 characters, made from the payment's number, so that a lookup, a
// replay and a notification name the same one.
std::string paypal_capture_id(uint64_t number);
std::string paypal_authorization_id(uint64_t number);
// The status word Stripe gives a PaymentIntent in this state.
std::string_view stripe_status(const PaymentView& v);

struct Profile {
  ProfileId id;
  std::string_view name;
  // The ids it hands out and takes back in lookup paths (and the truth's "ids"): a payment's
  // (Stripe's PaymentIntent pi_, Mollie's tr_, Checkout.com's pay_, PayPal's 17-character order
  // id, Adyen's 16-character pspReference, WeChat Pay's transaction_id, Alipay's trade_no)...
  IdShape payment_id;
  // ...and its charge's where the provider tells them apart (Stripe's latest_charge ch_);
  // empty prefix elsewhere.
  IdShape charge_id;
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
  int invalid_status;   // a refused create (format_refusal writes the body)
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
  // lookup returns the same object). `self` is the profile (its id shapes).
  void (*format_created)(std::string& out, const Profile& self, const PaymentView& p);
  // The body of a decline. No charge is made; p.number is a fresh number (never a charge's)
  // for the providers that give a declined payment an id (Checkout.com, Adyen), 0 for Stripe.
  void (*format_declined)(std::string& out, const Profile& self, const PaymentView& p);
  // The body of a refused create (status refusal_status): the parameter and the reason, in the
  // field the provider names them in (Stripe's error.param, PayPal's details[].field, ...).
  void (*format_refusal)(std::string& out, const Profile& self, const Refusal& r);
  // When set, a same-body request while the first one runs is answered with this body and
  // in_flight_status (WeChat Pay re-entry, Alipay WAIT_BUYER_PAY) instead of `in_use`.
  void (*format_in_flight)(std::string& out, std::string_view order_id);
  AuthScheme auth = AuthScheme::bearer;
  // A refused create whose body is not readable at all, where the provider answers it apart
  // from a parameter it refuses (Adyen: 400 for the syntax, 422 for the validation); 0 is
  // invalid_status.
  int unreadable_status = 0;
};

const Profile& stripe_profile();
// nullptr for an unknown name.
const Profile* find_profile(std::string_view name);
std::vector<std::string> profile_names();

// The fields of a payment request for the non-Stripe profiles, parsed with cJSON (the Stripe
// profile keeps the allocation-free scanner, json_lite.hpp, in create_request.cpp: it is the
// measured hot path).
struct ProfileFields {
  std::string order_id;
  std::string currency;
  std::string key;  // Identity::body_key and Identity::reference
  int64_t amount = 0;
  // What the provider's own fields ask of the payment (money.hpp): PayPal's intent AUTHORIZE
  // and a payment_source that is not a card, Checkout.com's capture false and 3ds.enabled,
  // Adyen's paymentMethod.type other than scheme (a card), Square's autocomplete false,
  // Mollie's captureMode manual.
  Flow flow;
};
enum class ParseOutcome { ok, invalid };
// On ParseOutcome::invalid, `why` says which parameter and what is wrong with it.
ParseOutcome parse_profile_payment(const Profile& p, std::string_view body, ProfileFields* out, Refusal* why);

// create_form: Stripe's form-encoded POST /v1/payment_intents (the Stripe profile only).
// gateway: Alipay's POST /gateway.do, a create or a lookup by its method parameter (gate.cpp).
// oauth2_token: PayPal's POST /v1/oauth2/token.
// operation: a capture, refund or cancel, or a lookup of one (operations.hpp route_operation).
enum class Route { create, create_form, lookup, gateway, oauth2_token, method_not_allowed, no_route, operation };
Route route(const Profile& p, std::string_view method, std::string_view path);
// Answers a Route::lookup request (authorization already checked) in `scope`, the account and
// scope it was made in (state.hpp scope_of): payments of other scopes are not found. Alipay's
// `body` is the admitted gateway call as {"biz_content":"<JSON text>"}.
void lookup(const Profile& p, const State& state, std::string_view method, std::string_view path,
            std::string_view query, std::string_view body, std::string_view scope, Reply& out);

void set_canned(Reply& out, const Canned& c);
// The profile's answer to a refused create: invalid_status (unreadable_status for a body it
// cannot read, where set) and format_refusal's body.
void set_refusal(Reply& out, const Profile& p, const Refusal& why);
int refusal_status(const Profile& p, const Refusal& why);

// The bodies of a fresh success and of a decline in this profile's shape.
inline void format_created(const Profile& p, std::string& out, const PaymentView& v) {
  p.format_created(out, p, v);
}
inline void format_declined(const Profile& p, std::string& out, const PaymentView& v) {
  p.format_declined(out, p, v);
}

}  // namespace payretry_sim
