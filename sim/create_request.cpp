#include "create_request.hpp"

#include <cmath>

namespace payretry_sim {

namespace {

constexpr const char* kOrderReason = "the order id the payment is recorded under";
constexpr const char* kAmountReason = "must be a positive whole number of minor units, at most 9007199254740991";

bool refuse(Refusal* why, Problem problem, std::string param, std::string reason) {
  *why = Refusal{problem, std::move(param), std::move(reason)};
  return false;
}

// The Stripe profile's JSON body at /v1/payments: {"order_id", "amount" (minor units),
// "currency"?}, read by the allocation-free scanner (the measured hot path). A refusal is
// worked out only once the body is known to be refused.
bool parse_payment(std::string_view body, CreateRequest* p, Refusal* why) {
  PaymentFields& f = p->fields;
  if (!scan_payment_json(body, &f)) return refuse(why, Problem::unreadable, "", "the body is not a JSON object");
  if (!f.has_order_id) {
    return f.order_id_present ? refuse(why, Problem::not_string, "order_id", std::string("must be a string: ") + kOrderReason)
                              : refuse(why, Problem::missing, "order_id", std::string("is required: ") + kOrderReason);
  }
  if (f.order_id.empty()) return refuse(why, Problem::empty, "order_id", std::string("must not be empty: ") + kOrderReason);
  // An embedded NUL would make the order id differ between this view and C-string users.
  if (f.order_id.find('\0') != std::string_view::npos) {
    return refuse(why, Problem::bad_value, "order_id", "must not contain a NUL character");
  }
  if (!f.has_amount) {
    return f.amount_present ? refuse(why, Problem::bad_number, "amount", kAmountReason)
                            : refuse(why, Problem::missing, "amount", "is required: what to charge, in minor units");
  }
  const double v = f.amount;
  if (std::floor(v) != v) return refuse(why, Problem::bad_number, "amount", kAmountReason);
  if (!(v > 0 && v <= 9007199254740991.0)) return refuse(why, Problem::bad_value, "amount", kAmountReason);
  if (f.has_currency) {
    if (!f.currency_is_string) return refuse(why, Problem::not_string, "currency", "must be a string such as \"eur\"");
    p->currency = f.currency;
  }
  p->order_id = f.order_id;
  p->amount = static_cast<int64_t>(v);
  return true;
}

}  // namespace

ParseOutcome parse_create_request(const Profile& prof, BodyFormat format, bool has_header_key,
                                  std::string_view header_key, std::string_view body,
                                  CreateRequest* out, Refusal* why) {
  CreateRequest& p = *out;
  p.format = format;
  p.has_key = has_header_key;
  p.key = header_key;
  if (format != BodyFormat::json) {
    // Only the Stripe profile routes here. The identity is metadata[order_id] (or order_id at
    // the /v1/payments alias); the fingerprint is still the raw body.
    if (!parse_form_payment(body, &p.form, format == BodyFormat::form_alias, why)) return ParseOutcome::invalid;
    p.order_id = p.form.order_id;
    if (!p.form.currency.empty()) p.currency = p.form.currency;
    p.amount = p.form.amount;
    p.flow = p.form.flow;
    return ParseOutcome::ok;
  }
  if (prof.id == ProfileId::stripe) {
    return parse_payment(body, &p, why) ? ParseOutcome::ok : ParseOutcome::invalid;
  }
  const ParseOutcome parsed = parse_profile_payment(prof, body, &p.general, why);
  if (parsed != ParseOutcome::ok) return parsed;
  p.order_id = p.general.order_id;
  p.currency = p.general.currency;
  p.amount = p.general.amount;
  p.flow = p.general.flow;
  if (prof.identity != Identity::header) {
    p.has_key = true;
    p.key = p.general.key;
  }
  return ParseOutcome::ok;
}

}  // namespace payretry_sim
