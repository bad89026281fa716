#include "create_request.hpp"

#include <cmath>

namespace payretry_sim {

bool parse_payment(std::string_view body, ParsedPayment* p) {
  PaymentFields& f = p->fields;
  if (!scan_payment_json(body, &f)) return false;
  if (!f.has_order_id || f.order_id.empty() || !f.has_amount) return false;
  // An embedded NUL would make the order id differ between this view and C-string users.
  if (f.order_id.find('\0') != std::string_view::npos) return false;
  const double v = f.amount;
  if (!(v > 0 && v <= 9007199254740991.0) || std::floor(v) != v) return false;
  if (f.has_currency) {
    if (!f.currency_is_string) return false;
    p->currency = f.currency;
  }
  p->order_id = f.order_id;
  p->amount = static_cast<int64_t>(v);
  return true;
}

}  // namespace payretry_sim
