// A create request as the provider reads it: its body parsed into the payment's fields.
#pragma once

#include <cstdint>
#include <string_view>

#include "form_body.hpp"
#include "json_lite.hpp"
#include "profiles.hpp"

namespace payretry_sim {

// How a create request carries its fields: JSON (/v1/payments and the other profiles),
// Stripe's form encoding at /v1/payment_intents (what Stripe's SDKs send: answered with a
// PaymentIntent), or form fields at the /v1/payments alias (answered like its JSON form).
enum class BodyFormat : uint8_t { json, form, form_alias };

struct ParsedPayment {
  PaymentFields fields;   // views into the body (or its own buffers): the Stripe fast path
  ProfileFields general;  // the other profiles
  FormPayment form;       // Stripe's form-encoded /v1/payment_intents
  std::string_view order_id;
  std::string_view currency = "usd";
  int64_t amount = 0;
};

bool parse_payment(std::string_view body, ParsedPayment* p);

}  // namespace payretry_sim
