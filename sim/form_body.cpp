#include "form_body.hpp"

#include <charconv>

#include "http_conn.hpp"
#include "profiles.hpp"

namespace payretry_sim {

bool form_decode(std::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const char c = in[i];
    if (c == '+') {
      out->push_back(' ');
    } else if (c == '%') {
      if (i + 2 >= in.size()) return false;
      const int hi = hexval(in[i + 1]);
      const int lo = hexval(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out->push_back(c);
    }
  }
  return true;
}

bool parse_form_payment(std::string_view body, FormPayment* out, bool plain_order_id, Refusal* why) {
  const std::string order_name = plain_order_id ? "order_id" : "metadata[order_id]";
  auto refuse = [&](Problem problem, std::string param, std::string reason) {
    if (why) *why = Refusal{problem, std::move(param), std::move(reason)};
    return false;
  };
  bool have_amount = false, have_order = false, have_currency = false, confirm_false = false;
  std::string payment_method;
  std::string name, value;
  while (!body.empty()) {
    const std::size_t amp = body.find('&');
    const std::string_view pair = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view{} : body.substr(amp + 1);
    if (pair.empty()) continue;
    const std::size_t eq = pair.find('=');
    if (!form_decode(pair.substr(0, eq), &name) ||
        !form_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), &value)) {
      return refuse(Problem::unreadable, "", "the form body has a % not followed by two hex digits");
    }
    if (name == "amount" && !have_amount) {
      int64_t v = 0;
      const auto r = std::from_chars(value.data(), value.data() + value.size(), v);
      if (r.ec != std::errc() || r.ptr != value.data() + value.size()) {
        return refuse(Problem::bad_number, "amount", "must be a positive whole number of minor units");
      }
      if (v <= 0) return refuse(Problem::bad_value, "amount", "must be a positive whole number of minor units");
      out->amount = v;
      have_amount = true;
    } else if (name == "currency" && !have_currency) {
      out->currency = value;
      have_currency = true;
    } else if (name == "confirm") {
      // Stripe's booleans are the words true and false.
      if (value == "false") confirm_false = true;
    } else if (name == "payment_method") {
      payment_method = value;
    } else if (name == "capture_method") {
      if (value == "manual") out->flow.manual_capture = true;
    } else if ((name == "metadata[order_id]" || (plain_order_id && name == "order_id")) && !have_order) {
      if (value.empty()) {
        return refuse(Problem::empty, name, "must not be empty: the simulator records the payment under it");
      }
      if (value.find('\0') != std::string::npos) return refuse(Problem::bad_value, name, "must not contain a NUL character");
      out->order_id = value;
      have_order = true;
    }
  }
  if (!have_amount) return refuse(Problem::missing, "amount", "is required: what to charge, in minor units");
  // Stripe's test payment methods that need 3-D Secure (docs.stripe.com/testing#regulatory-cards).
  const bool three_ds = payment_method == "pm_card_threeDSecure2Required" ||
                        payment_method == "pm_card_threeDSecureRequired" ||
                        payment_method == "pm_card_authenticationRequired";
  if (confirm_false) {
    out->flow.wait = payment_method.empty() ? Wait::requires_payment_method : Wait::requires_confirmation;
  } else if (three_ds) {
    out->flow.wait = Wait::requires_action;
  }
  out->flow.asked = confirm_false || three_ds || out->flow.manual_capture;
  // The simulator keys its truth on the order; Stripe itself would take a PaymentIntent
  // without one, so the message says whose rule this is.
  if (!have_order) {
    return refuse(Problem::missing, order_name,
                  "is required by payretry-sim: the order id it records the payment under (Stripe itself "
                  "would accept the PaymentIntent without it)");
  }
  return true;
}

void format_payment_intent(std::string& out, uint64_t number, std::string_view order_id,
                           int64_t amount, std::string_view currency, int64_t created) {
  format_payment_intent(out, PaymentView{number, order_id, amount, currency}, created);
}

void format_payment_intent(std::string& out, const PaymentView& v, int64_t created) {
  const Profile& stripe = stripe_profile();
  out.append(R"({"id":")");
  append_id(out, stripe.payment_id, v.number);
  out.append(R"(","object":"payment_intent","amount":)");
  append_int(out, static_cast<long long>(v.amount));
  if (v.money == Money::authorized) {
    out.append(R"(,"amount_capturable":)");
    append_int(out, static_cast<long long>(v.amount));
  }
  out.append(R"(,"amount_received":)");
  // A partial capture (operations.hpp) received only what it took.
  append_int(out, static_cast<long long>(v.money != Money::paid ? 0 : v.captured >= 0 ? v.captured : v.amount));
  if (v.manual_capture) out.append(R"(,"capture_method":"manual")");
  if (created >= 0) {
    out.append(R"(,"created":)");
    append_int(out, static_cast<long long>(created));
  }
  out.append(R"(,"currency":)");
  append_json_string(out, v.currency);
  // A charge exists once the customer's card was charged or held; a waiting intent has none.
  if (v.money == Money::paid || v.money == Money::authorized || v.was_authorized) {
    out.append(R"(,"latest_charge":")");
    append_id(out, stripe.charge_id, v.number);
    out.push_back('"');
  } else {
    out.append(R"(,"latest_charge":null)");
  }
  out.append(R"(,"livemode":false,"metadata":{"order_id":)");
  append_json_string(out, v.order_id);
  out.push_back('}');
  if (v.money == Money::awaiting_customer && v.wait == Wait::requires_action) {
    out.append(R"(,"next_action":{"type":"use_stripe_sdk","use_stripe_sdk":{"type":"three_d_secure_redirect"}})");
  }
  out.append(R"(,"status":")").append(stripe_status(v)).append(R"("})");
}

}  // namespace payretry_sim
