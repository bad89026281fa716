#include "create_request.hpp"

#include <cmath>

namespace payretry_sim {

namespace {

bool parse_payment(std::string_view body, CreateRequest* p) {
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

}  // namespace

ParseOutcome parse_create_request(const Profile& prof, BodyFormat format, bool has_header_key,
                                  std::string_view header_key, std::string_view body,
                                  CreateRequest* out) {
  CreateRequest& p = *out;
  p.format = format;
  p.has_key = has_header_key;
  p.key = header_key;
  if (format != BodyFormat::json) {
    // Only the Stripe profile routes here. The identity is metadata[order_id] (or order_id at
    // the /v1/payments alias); the fingerprint is still the raw body.
    if (!parse_form_payment(body, &p.form, format == BodyFormat::form_alias)) return ParseOutcome::invalid;
    p.order_id = p.form.order_id;
    if (!p.form.currency.empty()) p.currency = p.form.currency;
    p.amount = p.form.amount;
    return ParseOutcome::ok;
  }
  if (prof.id == ProfileId::stripe) {
    return parse_payment(body, &p) ? ParseOutcome::ok : ParseOutcome::invalid;
  }
  const ParseOutcome parsed = parse_profile_payment(prof, body, &p.general);
  if (parsed != ParseOutcome::ok) return parsed;
  p.order_id = p.general.order_id;
  p.currency = p.general.currency;
  p.amount = p.general.amount;
  if (prof.identity != Identity::header) {
    p.has_key = true;
    p.key = p.general.key;
  }
  return ParseOutcome::ok;
}

}  // namespace payretry_sim
