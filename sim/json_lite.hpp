// A strict, allocation-free JSON validator that picks the payment fields out of a request
// body. The hot path (one POST per request under wrk) cannot afford a DOM per request.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace payretry_sim {

struct PaymentFields {
  // Views into the body, or into the owned strings when the JSON string had escapes.
  std::string_view order_id;
  std::string_view currency;
  bool has_order_id = false;  // a JSON string
  bool order_id_present = false;  // present at all (any type): a refusal says "missing" or "not a string"
  bool has_currency = false;  // present at all (any type)
  bool currency_is_string = false;
  bool has_amount = false;    // a JSON number
  bool amount_present = false;  // present at all (any type)
  double amount = 0;
  std::string order_id_buf;
  std::string currency_buf;
};

// True when `body` is one valid JSON value (RFC 8259) that is an object; fills the
// top-level fields order_id, amount and currency (first occurrence wins, like cJSON).
bool scan_payment_json(std::string_view body, PaymentFields* out);

}  // namespace payretry_sim
