// The Stripe-shaped, form-encoded payment request that stripe-python and stripe-go send:
//   POST /v1/payment_intents
//   Content-Type: application/x-www-form-urlencoded
//   amount=1000&currency=usd&metadata[order_id]=o-1   (brackets usually percent-encoded)
// The order identity is metadata[order_id]; the fingerprint stays the raw body bytes, as on the
// JSON path, so the same key with other parameters is still a 422.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "profiles.hpp"

namespace payretry_sim {

struct FormPayment {
  std::string order_id;  // metadata[order_id], decoded
  std::string currency;  // decoded; empty when absent
  int64_t amount = 0;
  // What the PaymentIntent create asks of the payment (money.hpp): confirm=false leaves it for a
  // later confirmation, a 3-D Secure test payment_method for the customer to authenticate,
  // capture_method=manual held once authorized. Without any of them the simulator confirms and
  // captures at once, as it always has (Stripe itself would answer requires_payment_method
  // without confirm=true: the shortcut is the simulator's).
  Flow flow;
};

// Decodes application/x-www-form-urlencoded text: '+' is a space, %XX a byte. False on a
// malformed escape.
bool form_decode(std::string_view in, std::string* out);

// Parses the fields above (first occurrence wins). False when the body is malformed, the amount
// is not a positive integer, or metadata[order_id] is missing or empty; then `why` (when given)
// names the field and the reason. With `plain_order_id` (the /v1/payments alias, whose JSON
// form names the order "order_id") a top-level order_id field names the order too.
bool parse_form_payment(std::string_view body, FormPayment* out, bool plain_order_id = false,
                        Refusal* why = nullptr);

// Stripe's PaymentIntent object for a charge number: id "pi_<number>", latest_charge
// "ch_<number>" (the Stripe profile's payment_id and charge_id shapes). With `created` >= 0 it
// writes "created" too (Unix seconds), which Stripe's OpenAPI requires of a payment_intent.
void format_payment_intent(std::string& out, uint64_t number, std::string_view order_id,
                           int64_t amount, std::string_view currency, int64_t created = -1);
// The same for a payment in any money state: its status is stripe_status(v); nothing is
// received before it is paid, a held one has its amount capturable, one waiting for 3-D Secure
// carries the next_action the customer's browser runs. A paid one writes what the above writes.
void format_payment_intent(std::string& out, const PaymentView& v, int64_t created = -1);

}  // namespace payretry_sim
