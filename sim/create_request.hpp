// A create request as the provider reads it: its body parsed into the payment's fields, and
// the identity the idempotency rules key on (the key header, or what the body carries).
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

// The views point into the body or into the parser's own buffers below, so a CreateRequest
// stays where it was parsed (no copies, no moves).
struct CreateRequest {
  BodyFormat format = BodyFormat::json;
  // Without an identity every request is a new payment. Header profiles: the key header,
  // when present and not empty; the others: the body's key field or merchant reference.
  bool has_key = false;
  std::string_view key;
  // The merchant account and scope it acts in (state.hpp scope_of); empty: the default.
  std::string_view scope;
  std::string_view order_id;
  std::string_view currency = "usd";
  int64_t amount = 0;
  Flow flow;  // what the request's own fields ask of the payment (money.hpp)

  PaymentFields fields;   // the Stripe JSON fast path (allocation-free scanner)
  ProfileFields general;  // the other profiles (cJSON)
  FormPayment form;       // Stripe's form bodies

  CreateRequest() = default;
  CreateRequest(const CreateRequest&) = delete;
  CreateRequest& operator=(const CreateRequest&) = delete;
};

// Parses `body` as `prof` reads a create in `format`. `has_header_key` and `header_key` are
// the key header's (header profiles); a profile whose identity is in the body takes it from
// there instead. On anything but ok nothing is recorded and `why` says which parameter is
// wrong and how, for the profile's refusal (set_refusal).
ParseOutcome parse_create_request(const Profile& prof, BodyFormat format, bool has_header_key,
                                  std::string_view header_key, std::string_view body,
                                  CreateRequest* out, Refusal* why);

}  // namespace payretry_sim
