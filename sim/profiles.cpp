// The provider profiles: one table entry per provider, its formatters, its request parser, its
// routes and its lookups. Sources are the tags defined in docs/providers.md ([St1], [Ck1],
// ...). Where the sources say nothing, the shape is marked "sim choice": plausible, in the
// provider's error style, and stable so client profiles can match it.
#include "profiles.hpp"

#include <cjson/cJSON.h>

#include <charconv>
#include <cmath>
#include <memory>

#include "faults.hpp"
#include "form_body.hpp"
#include "http_conn.hpp"
#include "state.hpp"

namespace payretry_sim {

namespace {

struct CJsonDeleter {
  void operator()(cJSON* p) const { cJSON_Delete(p); }
};
using CJsonPtr = std::unique_ptr<cJSON, CJsonDeleter>;

bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(0, p.size()) == p;
}

// "abc%2Fd" -> "abc/d" (path segments; '+' stays '+').
std::string percent_decode(std::string_view s) {
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// The last path segment after `prefix`, when there is exactly one non-empty segment.
bool one_segment(std::string_view path, std::string_view prefix, std::string* out) {
  if (!starts_with(path, prefix)) return false;
  std::string_view rest = path.substr(prefix.size());
  if (rest.empty() || rest.find('/') != std::string_view::npos) return false;
  *out = percent_decode(rest);
  return !out->empty();
}

// 1050 -> "10.50"
void append_major(std::string& out, int64_t minor) {
  append_int(out, static_cast<long long>(minor / 100));
  out.push_back('.');
  const int cents = static_cast<int>(minor % 100);
  out.push_back(static_cast<char>('0' + cents / 10));
  out.push_back(static_cast<char>('0' + cents % 10));
}

// ---- Stripe ([St1]-[St8]): today's behaviour, byte for byte -----------------------------------

void stripe_created(std::string& out, const Profile& self, const PaymentView& p) {
  out.append(R"({"id":")");
  append_id(out, self.payment_id, p.number);
  out.append(R"(","object":"payment","status":")");
  out.append(stripe_status(p));
  out.append(R"(","order_id":)");
  append_json_string(out, p.order_id);
  out.append(R"(,"amount":)");
  append_int(out, static_cast<long long>(p.amount));
  out.append(R"(,"currency":)");
  append_json_string(out, p.currency);
  out.push_back('}');
}

void stripe_declined(std::string& out, const Profile&, const PaymentView&) {
  out.append(R"({"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds"}})");
}

// ---- Checkout.com ([Ck1]-[Ck5]) ----------------------------------------------------------------
// Payments are 201 whether approved or declined (a decline is "approved":false,
// "status":"Declined"): both are 2xx, so both are cached. Response codes 10000 (Approved) and
// 20051 (Insufficient Funds) are Checkout.com's.

// Its status, after the PaymentStatus values of checkout-sdk-java: a payment sent to 3-D Secure
// is Pending (202, with the redirect the customer follows), `capture: false` leaves it
// Authorized, the default captures it. A failed one was Declined, or Voided if it had been held.
void checkout_object(std::string& out, const Profile& self, const PaymentView& p, bool approved) {
  out.append(R"({"id":")");
  append_id(out, self.payment_id, p.number);
  out.push_back('"');
  if (!approved) {
    out.append(R"(,"approved":false,"status":"Declined","response_code":"20051")");
  } else {
    switch (p.money) {
      case Money::awaiting_customer:
      case Money::pending:
        out.append(R"(,"status":"Pending")");
        break;
      case Money::authorized:
        out.append(R"(,"approved":true,"status":"Authorized","response_code":"10000")");
        break;
      case Money::paid:
        // After operations: Checkout.com's words for what was captured and refunded of it.
        out.append(p.refunded > 0 && p.refunded >= p.captured     ? R"(,"approved":true,"status":"Refunded","response_code":"10000")"
                   : p.refunded > 0                               ? R"(,"approved":true,"status":"Partially Refunded","response_code":"10000")"
                   : p.captured >= 0 && p.captured < p.amount     ? R"(,"approved":true,"status":"Partially Captured","response_code":"10000")"
                                                                  : R"(,"approved":true,"status":"Captured","response_code":"10000")");
        break;
      case Money::failed:
        out.append(p.was_authorized ? R"(,"approved":true,"status":"Voided","response_code":"10000")"
                                    : R"(,"approved":false,"status":"Declined","response_code":"20051")");
        break;
    }
  }
  out.append(R"(,"reference":)");
  append_json_string(out, p.order_id);
  out.append(R"(,"amount":)");
  append_int(out, static_cast<long long>(p.amount));
  out.append(R"(,"currency":)");
  append_json_string(out, p.currency);
  if (approved && (p.money == Money::awaiting_customer || p.money == Money::pending)) {
    out.append(R"(,"3ds":{"downgraded":false,"enrolled":"Y"},"_links":{"redirect":{"href":"https://3ds2-sbox.checkout.com/interceptor/)");
    append_id(out, self.payment_id, p.number);
    out.append(R"("}})");
  }
  out.push_back('}');
}
void checkout_created(std::string& out, const Profile& self, const PaymentView& p) {
  checkout_object(out, self, p, true);
}
void checkout_declined(std::string& out, const Profile& self, const PaymentView& p) {
  checkout_object(out, self, p, false);
}

// ---- PayPal ([Pp1]-[Pp5]) ----------------------------------------------------------------------

// An order ([Pp2]'s order_status). Nothing has moved while it is CREATED (no payment_source:
// the payer approves at the "approve" link) or PAYER_ACTION_REQUIRED (payment_source.paypal:
// the "payer-action" link). A COMPLETED order says where the money is in
// purchase_units[0].payments: a capture (intent CAPTURE) or an authorization (intent
// AUTHORIZE), whose status PayPal tells merchants to read before they fulfil. An order the
// payer never approved ends VOIDED.
void paypal_created(std::string& out, const Profile& self, const PaymentView& p) {
  const std::string id = format_id(self.payment_id, p.number);
  out.append(R"({"id":")").append(id);
  out.append(R"(","intent":")").append(p.manual_capture ? "AUTHORIZE" : "CAPTURE");
  const bool unpaid = p.money == Money::awaiting_customer || p.money == Money::pending ||
                      (p.money == Money::failed && !p.was_authorized);
  if (unpaid) {
    const bool approve = p.wait != Wait::payer_action_required;
    out.append(R"(","status":")");
    out.append(p.money == Money::failed ? "VOIDED" : approve ? "CREATED" : "PAYER_ACTION_REQUIRED");
    out.append(R"(","purchase_units":[{"reference_id":)");
    append_json_string(out, p.order_id);
    out.append(R"(}])");
    if (p.money != Money::failed) {
      out.append(R"(,"links":[{"href":"https://www.sandbox.paypal.com/checkoutnow?token=)").append(id);
      out.append(approve ? R"(","rel":"approve","method":"GET"}])" : R"(","rel":"payer-action","method":"GET"}])");
    }
    out.push_back('}');
    return;
  }
  std::string money;
  money.append(R"({"currency_code":)");
  std::string code(p.currency);
  for (char& c : code) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  append_json_string(money, code);
  money.append(R"(,"value":")");
  append_major(money, p.amount);
  money.append(R"("})");
  out.append(R"(","status":"COMPLETED","purchase_units":[{"reference_id":)");
  append_json_string(out, p.order_id);
  out.append(R"(,"payments":{)");
  if (p.manual_capture) {
    const char* auth = p.money == Money::authorized ? "CREATED" : p.money == Money::paid ? "CAPTURED" : "VOIDED";
    out.append(R"("authorizations":[{"id":")").append(paypal_authorization_id(p.number));
    out.append(R"(","status":")").append(auth).append(R"(","amount":)").append(money).append("}]");
    if (p.money == Money::paid) out.push_back(',');
  }
  if (p.money == Money::paid) {
    out.append(R"("captures":[{"id":")").append(paypal_capture_id(p.number));
    out.append(R"(","status":"COMPLETED","amount":)").append(money);
    out.append(R"(,"final_capture":true}])");
  }
  out.append("}}]}");
}
void paypal_declined(std::string& out, const Profile&, const PaymentView&) {
  out.append(R"({"name":"UNPROCESSABLE_ENTITY","message":"The requested action could not be performed.","details":[{"issue":"INSTRUMENT_DECLINED"}]})");
}

// ---- Square ([Sq1]-[Sq4]) ----------------------------------------------------------------------

// autocomplete false leaves a card payment APPROVED (held) until CompletePayment, or CANCELED.
std::string_view square_status(const PaymentView& p) {
  switch (p.money) {
    case Money::awaiting_customer:
    case Money::pending: return "PENDING";
    case Money::authorized: return "APPROVED";
    case Money::paid: return "COMPLETED";
    case Money::failed: return p.was_authorized ? "CANCELED" : "FAILED";
  }
  return "PENDING";
}
void square_created(std::string& out, const Profile& self, const PaymentView& p) {
  out.append(R"({"payment":{"id":")");
  append_id(out, self.payment_id, p.number);
  out.append(R"(","status":")").append(square_status(p)).append(R"("}})");
}
void square_declined(std::string& out, const Profile&, const PaymentView&) {
  out.append(R"({"errors":[{"category":"PAYMENT_METHOD_ERROR","code":"CARD_DECLINED"}]})");
}

// ---- WeChat Pay v3 ([Wx1]-[Wx7]) ---------------------------------------------------------------
// A JSAPI order (the wechatpay_v3 profile's create) answers only a prepay_id (Wx1), which the
// payer's client uses to pay; the simulator counts the payment as made at once (the user pays
// immediately). A re-entry with the same parameters gets the same prepay_id.
void wechat_prepay_id(std::string& out, std::string_view out_trade_no) {
  static const char kHex[] = "0123456789abcdef";
  out.append(R"({"prepay_id":"wx)");
  const uint64_t h = fnv1a64(out_trade_no);
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kHex[(h >> shift) & 0xf]);
  out.append(R"("})");
}
void wechat_created(std::string& out, const Profile&, const PaymentView& p) {
  wechat_prepay_id(out, p.order_id);
}
// No decline on a WeChat order creation is documented (the user pays later). The sim's decline
// uses the v2 table's balance code NOTENOUGH ("余额不足") with 400: sim choice.
void wechat_declined(std::string& out, const Profile&, const PaymentView&) {
  out.append(R"({"code":"NOTENOUGH","message":"用户账号余额不足"})");
}

// ---- Adyen ([Ad1]-[Ad4]) -----------------------------------------------------------------------

void adyen_object(std::string& out, const Profile& self, const PaymentView& p, bool authorised) {
  out.append(R"({"pspReference":")");
  append_id(out, self.payment_id, p.number);
  // The answer of /payments never says captured: a paid payment still reads Authorised (the
  // capture is a webhook, CAPTURE). A shopper sent to a redirect method reads RedirectShopper.
  if (!authorised || (p.money == Money::failed && !p.was_authorized)) {
    out.append(R"(","resultCode":"Refused","refusalReason":"Not enough balance")");
  } else if (p.money == Money::failed) {
    out.append(R"(","resultCode":"Cancelled")");
  } else if (p.money == Money::awaiting_customer || p.money == Money::pending) {
    out.append(R"(","resultCode":"RedirectShopper","action":{"type":"redirect","method":"GET","url":"https://checkoutshopper-test.adyen.com/checkoutshopper/checkoutPaymentRedirect?redirectData=)");
    append_id(out, self.payment_id, p.number);
    out.append(R"("})");
  } else {
    out.append(R"(","resultCode":"Authorised")");
  }
  out.append(R"(,"merchantReference":)");
  append_json_string(out, p.order_id);
  out.append(R"(,"amount":{"value":)");
  append_int(out, static_cast<long long>(p.amount));
  out.append(R"(,"currency":)");
  append_json_string(out, p.currency);
  out.append("}}");
}
void adyen_created(std::string& out, const Profile& self, const PaymentView& p) {
  adyen_object(out, self, p, true);
}
void adyen_declined(std::string& out, const Profile& self, const PaymentView& p) {
  adyen_object(out, self, p, false);
}

// ---- Mollie ([Mo1], [Mo2]) ---------------------------------------------------------------------

// mollie/openapi's payment-status: open until the customer pays, authorized under
// captureMode manual, expired when the customer never paid, canceled when a hold is released.
std::string_view mollie_status(const PaymentView& p) {
  switch (p.money) {
    case Money::awaiting_customer: return "open";
    case Money::pending: return "pending";
    case Money::authorized: return "authorized";
    case Money::paid: return "paid";
    case Money::failed: return p.was_authorized ? "canceled" : "expired";
  }
  return "open";
}
void mollie_created(std::string& out, const Profile& self, const PaymentView& p) {
  out.append(R"({"resource":"payment","id":")");
  append_id(out, self.payment_id, p.number);
  out.append(R"(","status":")").append(mollie_status(p));
  out.append(R"(","amount":{"value":")");
  append_major(out, p.amount);
  out.append(R"(","currency":)");
  append_json_string(out, p.currency);
  out.push_back('}');
  // After operations: what was captured and refunded of it (Mollie's amountCaptured and
  // amountRefunded, as strings of major units).
  if (p.captured >= 0) {
    for (const auto& [name, minor] : {std::pair<const char*, int64_t>{"amountCaptured", p.captured},
                                      std::pair<const char*, int64_t>{"amountRefunded", p.refunded}}) {
      out.append(R"(,")").append(name).append(R"(":{"value":")");
      append_major(out, minor);
      out.append(R"(","currency":)");
      append_json_string(out, p.currency);
      out.push_back('}');
    }
  }
  // Mollie echoes the create's metadata in every answer about the payment; the creates this
  // sim takes carry the order there (metadata.order_id), which is how a receiver that looked an
  // id-only notification up finds the order (https://docs.mollie.com/reference/get-payment).
  out.append(R"(,"metadata":{"order_id":)");
  append_json_string(out, p.order_id);
  out.push_back('}');
  // An open payment is paid at its checkout page (https://docs.mollie.com/reference/create-payment).
  if (p.money == Money::awaiting_customer) {
    out.append(R"(,"_links":{"checkout":{"href":"https://www.mollie.com/checkout/select-method/)");
    append_id(out, self.payment_id, p.number);
    out.append(R"(","type":"text/html"}})");
  }
  out.push_back('}');
}
void mollie_declined(std::string& out, const Profile&, const PaymentView&) {
  out.append(R"({"status":422,"title":"Unprocessable Entity","detail":"The card was declined.","extra":{"failureReason":"insufficient_funds"}})");
}

// ---- Alipay ([Al1]-[Al4]) ----------------------------------------------------------------------
// The gateway answers HTTP 200 and signals the outcome in the body: code 10000 success,
// 10003 waiting for the buyer, 20000 service unavailable, 40002 invalid arguments,
// 40004 business failure with a sub_code.

// A trade waiting for the buyer to confirm in the app is 10003 (poll alipay.trade.query: it says
// WAIT_BUYER_PAY); one that went through is 10000.
void alipay_created(std::string& out, const Profile& self, const PaymentView& p) {
  out.append(p.money == Money::awaiting_customer
                 ? R"({"alipay_trade_pay_response":{"code":"10003","msg":"Waiting Payment","trade_no":")"
                 : R"({"alipay_trade_pay_response":{"code":"10000","msg":"Success","trade_no":")");
  append_id(out, self.payment_id, p.number);
  out.append(R"(","out_trade_no":)");
  append_json_string(out, p.order_id);
  out.append(R"(,"total_amount":")");
  append_major(out, p.amount);
  out.append(R"("}})");
}
void alipay_declined(std::string& out, const Profile&, const PaymentView&) {
  out.append(R"({"alipay_trade_pay_response":{"code":"40004","msg":"Business Failed","sub_code":"ACQ.BUYER_BALANCE_NOT_ENOUGH","sub_msg":"买家余额不足"}})");
}
// Same parameters while the first request runs: "waiting for the buyer" (sim choice; [Al4]'s
// 10003 is the documented "not finished yet, poll alipay.trade.query").
void alipay_in_flight(std::string& out, std::string_view out_trade_no) {
  out.append(R"({"alipay_trade_pay_response":{"code":"10003","msg":"Waiting Payment","out_trade_no":)");
  append_json_string(out, out_trade_no);
  out.append("}}");
}

// ---- refused creates ---------------------------------------------------------------------------
// What each provider says about a create it cannot read: the field that names the parameter
// (Stripe's error.param, Checkout.com's error code, PayPal's details[].field, Square's
// errors[].field, WeChat Pay's detail.field, Adyen's message, Mollie's field, Alipay's sub_msg)
// and the reason, so that a client sees what to fix as the provider would tell it. The codes
// are each provider's published ones (Stripe's parameter_missing, PayPal's
// MISSING_REQUIRED_PARAMETER, Square's EXPECTED_INTEGER, ...); which one a case gets where the
// provider's reference does not say is sim choice. docs/simulator.md shows every shape.

// "purchase_units.0.amount.value" -> "/purchase_units/0/amount/value": PayPal and WeChat Pay
// name a body field by its JSON pointer.
std::string json_pointer(std::string_view dotted) {
  std::string out;
  if (dotted.empty()) return out;
  out.push_back('/');
  for (char c : dotted) {
    if (c == '.') out.push_back('/');
    else if (c == '~') out.append("~0");
    else if (c == '/') out.append("~1");
    else out.push_back(c);
  }
  return out;
}

std::string_view last_segment(std::string_view dotted) {
  const std::size_t dot = dotted.rfind('.');
  return dot == std::string_view::npos ? dotted : dotted.substr(dot + 1);
}

bool is_missing(const Refusal& r) { return r.problem == Problem::missing || r.problem == Problem::empty; }

void stripe_refusal(std::string& out, const Profile&, const Refusal& r) {
  out.append(R"({"error":{"type":"invalid_request_error")");
  const char* code = nullptr;
  switch (r.problem) {
    case Problem::unreadable: break;  // no parameter to blame, so no parameter code
    case Problem::missing: code = "parameter_missing"; break;
    case Problem::empty: code = "parameter_invalid_empty"; break;
    case Problem::bad_number: code = "parameter_invalid_integer"; break;
    case Problem::not_string:
    case Problem::bad_value: code = "parameter_invalid"; break;
  }
  if (code) {
    out.append(R"(,"code":)");
    append_json_string(out, code);
    out.append(R"(,"param":)");
    append_json_string(out, r.param);
  }
  out.append(R"(,"message":)");
  append_json_string(out, refusal_message(r));
  out.append("}}");
}

// Checkout.com's error codes name the field and the rule ("amount_required",
// "reference_invalid"); its error bodies carry no message.
void checkout_refusal(std::string& out, const Profile&, const Refusal& r) {
  out.append(R"({"error_type":"request_invalid","error_codes":[)");
  if (r.problem == Problem::unreadable) {
    out.append(R"("request_body_invalid")");
  } else {
    std::string code(last_segment(r.param));
    code.append(is_missing(r) ? "_required" : "_invalid");
    append_json_string(out, code);
  }
  out.append("]}");
}

void paypal_refusal(std::string& out, const Profile&, const Refusal& r) {
  out.append(R"({"name":"INVALID_REQUEST","message":"Request is not well-formed, syntactically incorrect, or violates schema.","details":[{)");
  const char* issue = "MALFORMED_REQUEST_JSON";
  if (r.problem != Problem::unreadable) {
    issue = is_missing(r) ? "MISSING_REQUIRED_PARAMETER"
            : r.problem == Problem::bad_value ? "INVALID_PARAMETER_VALUE"
                                              : "INVALID_PARAMETER_SYNTAX";
    out.append(R"("field":)");
    append_json_string(out, json_pointer(r.param));
    out.append(R"(,"location":"body",)");
  }
  out.append(R"("issue":)");
  append_json_string(out, issue);
  out.append(R"(,"description":)");
  append_json_string(out, refusal_message(r));
  out.append("}]}");
}

void square_refusal(std::string& out, const Profile&, const Refusal& r) {
  const char* code = "EXPECTED_JSON_BODY";
  switch (r.problem) {
    case Problem::unreadable: break;
    case Problem::missing: code = "MISSING_REQUIRED_PARAMETER"; break;
    case Problem::empty: code = "VALUE_EMPTY"; break;
    case Problem::not_string: code = "EXPECTED_STRING"; break;
    case Problem::bad_number: code = "EXPECTED_INTEGER"; break;
    case Problem::bad_value: code = "INVALID_VALUE"; break;
  }
  out.append(R"({"errors":[{"category":"INVALID_REQUEST_ERROR","code":)");
  append_json_string(out, code);
  out.append(R"(,"detail":)");
  append_json_string(out, refusal_message(r));
  if (r.problem != Problem::unreadable) {
    out.append(R"(,"field":)");
    append_json_string(out, r.param);
  }
  out.append("}]}");
}

// WeChat Pay v3's errors carry the parameter in detail.field as a JSON pointer and the reason
// in detail.issue (its "basic rules" error format); the message is in Chinese, as WeChat's.
void wechat_refusal(std::string& out, const Profile&, const Refusal& r) {
  const std::string field = json_pointer(r.param);
  out.append(R"({"code":"PARAM_ERROR","message":)");
  append_json_string(out, r.problem == Problem::unreadable ? std::string("请求体不是合法的 JSON 对象")
                          : is_missing(r)                   ? "缺少必填参数 " + field
                                                            : "参数格式错误 " + field);
  out.append(R"(,"detail":{)");
  if (r.problem != Problem::unreadable) {
    out.append(R"("field":)");
    append_json_string(out, field);
    out.push_back(',');
  }
  out.append(R"("location":"body","issue":)");
  append_json_string(out, refusal_message(r));
  out.append("}}");
}

// Adyen names the field in the message; errorCode 100 is its "amount not provided" and 702 its
// "unexpected input" (Adyen's generic error codes). The status is Adyen's split in
// CheckoutService-v72.json's POST /payments: 422 "a request validation error" for a parameter
// it refuses, 400 "a problem reading or understanding the request" (its example: 702
// "Unexpected input") for a body that is no JSON object; errorType validation either way.
void adyen_refusal(std::string& out, const Profile& self, const Refusal& r) {
  std::string message;
  const char* code = "702";
  if (r.problem == Problem::unreadable) {
    message = "Unexpected input: " + r.reason;
  } else if (is_missing(r)) {
    if (last_segment(r.param) == "value" || r.param == "amount") code = "100";
    // Adyen's wording already says the field is required; the reason adds only why.
    std::string_view why = r.reason;
    if (starts_with(why, "is required")) why.remove_prefix(std::string_view("is required").size());
    if (starts_with(why, ": ")) why.remove_prefix(2);
    message = "Required field '" + r.param + "' is not provided";
    if (!why.empty()) message.append(": ").append(why);
  } else {
    message = "Field '" + r.param + "' " + r.reason;
  }
  out.append(R"({"status":)");
  append_int(out, refusal_status(self, r));
  out.append(R"(,"errorCode":)");
  append_json_string(out, code);
  out.append(R"(,"message":)");
  append_json_string(out, message);
  out.append(R"(,"errorType":"validation"})");
}

// Mollie's problem+json error names the parameter in "field".
void mollie_refusal(std::string& out, const Profile& self, const Refusal& r) {
  out.append(R"({"status":)");
  append_int(out, self.invalid_status);
  out.append(R"(,"title":"Unprocessable Entity","detail":)");
  append_json_string(out, refusal_message(r));
  if (r.problem != Problem::unreadable) {
    out.append(R"(,"field":)");
    append_json_string(out, r.param);
  }
  out.push_back('}');
}

// Alipay: 40002 with isv.missing-parameter or isv.invalid-parameter, the business parameter
// (as biz_content names it) in sub_msg.
void alipay_refusal(std::string& out, const Profile&, const Refusal& r) {
  std::string_view name = r.param;
  if (starts_with(name, "biz_content.")) name.remove_prefix(std::string_view("biz_content.").size());
  std::string sub_msg;
  if (r.problem == Problem::unreadable) sub_msg = "参数无效: " + r.reason;
  else if (is_missing(r)) sub_msg = "缺少必选参数 " + std::string(name) + ": " + r.reason;
  else sub_msg = "参数无效 " + std::string(name) + ": " + r.reason;
  out.append(R"({"alipay_trade_pay_response":{"code":"40002","msg":"Invalid Arguments","sub_code":)");
  append_json_string(out, is_missing(r) ? "isv.missing-parameter" : "isv.invalid-parameter");
  out.append(R"(,"sub_msg":)");
  append_json_string(out, sub_msg);
  out.append("}}");
}

// ---- the table ---------------------------------------------------------------------------------

const Profile kProfiles[] = {
    // Ids: a PaymentIntent is pi_<n>, its charge (latest_charge) ch_<n>, as Stripe's.
    {ProfileId::stripe, "stripe", {"pi_"}, {"ch_"}, Identity::header, "Idempotency-Key", "",
     Replay::stored, /*cache_only_2xx=*/false, /*replay_marker=*/true, /*echo_key=*/false,
     /*transient_503=*/false, "usd", 200, 200, 0,
     {401, R"({"error":{"type":"authentication_error","code":"invalid_api_key"}})"},
     400,
     {422, R"({"error":{"type":"idempotency_error","code":"idempotency_key_reused","message":"Keys for idempotent requests can only be used with the same parameters they were first used with."}})"},
     {409, R"({"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}})"},
     {0, ""},
     {429, R"({"error":{"type":"rate_limit_error","code":"rate_limit"}})"},
     {502, R"({"error":{"type":"api_error","code":"bad_gateway"}})"},
     {503, R"({"error":{"type":"api_error","code":"service_unavailable"}})"},
     {500, R"({"error":{"type":"api_error","code":"internal_error"}})"},
     {404, R"({"error":{"type":"invalid_request_error","code":"resource_missing"}})"},
     {405, R"({"error":{"type":"invalid_request_error","code":"method_not_allowed"}})"},
     402, stripe_created, stripe_declined, stripe_refusal, nullptr},

    // Mismatch and in-flight bodies: sim choice in Checkout.com's error style (status for
    // in-flight: 409, [Ck1][Ck2]; mismatch n.d.).
    // Ids: pay_<n> (Checkout.com's payment ids start pay_ too).
    {ProfileId::checkout_com, "checkout_com", {"pay_"}, {}, Identity::header,
     "Cko-Idempotency-Key", "", Replay::stored, /*cache_only_2xx=*/true, /*replay_marker=*/false,
     false, false, "usd", 201, 201, 0,
     {401, R"({"error_type":"unauthorized","error_codes":["invalid_secret_key"]})"},
     422,
     {422, R"({"error_type":"request_invalid","error_codes":["idempotency_key_reused"]})"},
     {409, R"({"error_type":"conflict","error_codes":["request_in_progress"]})"},
     {0, ""},
     {429, R"({"error_type":"too_many_requests","error_codes":["rate_limit_exceeded"]})"},
     {502, R"({"error_type":"bad_gateway"})"},
     {503, R"({"error_type":"service_unavailable"})"},
     {500, R"({"error_type":"internal_server_error"})"},
     {404, R"({"error_type":"not_found"})"},
     {405, R"({"error_type":"method_not_allowed"})"},
     201, checkout_created, checkout_declined, checkout_refusal, nullptr},

    // PayPal: current-state replay, 201 first and 200 after [Pp1][Pp4]; in flight 409
    // PREVIOUS_REQUEST_IN_PROGRESS [Pp2]; mismatch (n.d. for v2) uses the Vault v3 issue
    // PAYPAL_REQUEST_ID_PREVIOUSLY_USED [Pp3] with 422: sim choice. Creates and lookups need an
    // OAuth2 token (oauth2.cpp); a missing, unknown or expired one gets PayPal's invalid_token.
    // Ids: an order id is 17 upper-case letters and digits: ORD and 14 digits (sim choice).
    {ProfileId::paypal, "paypal", {"ORD", 14}, {}, Identity::header, "PayPal-Request-Id", "",
     Replay::current_state, false, false, false, false, "usd", 201, 200, 0,
     {401, R"({"error":"invalid_token","error_description":"Token signature verification failed"})"},
     400,
     {422, R"({"name":"UNPROCESSABLE_ENTITY","message":"The requested action could not be performed.","details":[{"issue":"PAYPAL_REQUEST_ID_PREVIOUSLY_USED"}]})"},
     {409, R"({"name":"RESOURCE_CONFLICT","message":"The server has detected a conflict while processing this request.","details":[{"issue":"PREVIOUS_REQUEST_IN_PROGRESS"}]})"},
     {0, ""},
     {429, R"({"name":"RATE_LIMIT_REACHED","message":"Too many requests. Blocked due to rate limiting."})"},
     {502, R"({"name":"BAD_GATEWAY","message":"Bad gateway."})"},
     {503, R"({"name":"SERVICE_UNAVAILABLE","message":"Service Unavailable."})"},
     {500, R"({"name":"INTERNAL_SERVER_ERROR","message":"An internal server error has occurred."})"},
     {404, R"({"name":"RESOURCE_NOT_FOUND","message":"The specified resource does not exist.","details":[{"issue":"INVALID_RESOURCE_ID"}]})"},
     {405, R"({"name":"METHOD_NOT_SUPPORTED","message":"The server does not implement the requested HTTP method."})"},
     422, paypal_created, paypal_declined, paypal_refusal, nullptr, AuthScheme::oauth2_client_credentials},

    // Square: key in the body, required [Sq1][Sq2]; IDEMPOTENCY_KEY_REUSED [Sq2]; in flight
    // n.d.: 409 CONFLICT is a sim choice. Error codes and categories from [Sq2].
    // Ids: pay_<n> (Square's are opaque; sim choice).
    {ProfileId::square, "square", {"pay_"}, {}, Identity::body_key, "", "idempotency_key",
     Replay::stored, false, false, false, false, "usd", 200, 200, 0,
     {401, R"({"errors":[{"category":"AUTHENTICATION_ERROR","code":"UNAUTHORIZED"}]})"},
     400,
     {400, R"({"errors":[{"category":"INVALID_REQUEST_ERROR","code":"IDEMPOTENCY_KEY_REUSED"}]})"},
     {409, R"({"errors":[{"category":"INVALID_REQUEST_ERROR","code":"CONFLICT"}]})"},
     {0, ""},
     {429, R"({"errors":[{"category":"RATE_LIMIT_ERROR","code":"RATE_LIMITED"}]})"},
     {502, R"({"errors":[{"category":"API_ERROR","code":"BAD_GATEWAY"}]})"},
     {503, R"({"errors":[{"category":"API_ERROR","code":"SERVICE_UNAVAILABLE"}]})"},
     {500, R"({"errors":[{"category":"API_ERROR","code":"INTERNAL_SERVER_ERROR"}]})"},
     {404, R"({"errors":[{"category":"INVALID_REQUEST_ERROR","code":"NOT_FOUND"}]})"},
     {405, R"({"errors":[{"category":"INVALID_REQUEST_ERROR","code":"METHOD_NOT_ALLOWED"}]})"},
     400, square_created, square_declined, square_refusal, nullptr},

    // WeChat Pay v3: out_trade_no is the identity [Wx1]; re-entry with the same parameters is
    // accepted, a paid order answers ORDERPAID, other parameters OUT_TRADE_NO_USED [Wx2];
    // SYSTEM_ERROR on 5xx [Wx3]; FREQUENCY_LIMITED on 429 [Wx5][Wx6]; SIGN_ERROR on 401 (the
    // refusal's message says what failed: wechat_auth.cpp).
    // Ids: the create answers a prepay_id; a lookup's transaction_id is 28 digits, 4200 first.
    {ProfileId::wechatpay_v3, "wechatpay_v3", {"4200", 24}, {}, Identity::reference, "", "",
     Replay::error_code, false, false, false, false, "CNY", 200, 200, 200,
     {401, R"({"code":"SIGN_ERROR","message":"签名错误"})"},
     400,
     {400, R"({"code":"OUT_TRADE_NO_USED","message":"商户订单号重复"})"},
     {0, ""},
     {400, R"({"code":"ORDERPAID","message":"该订单已支付"})"},
     {429, R"({"code":"FREQUENCY_LIMITED","message":"频率超限"})"},
     {502, R"({"code":"SYSTEM_ERROR","message":"系统错误"})"},
     {503, R"({"code":"SYSTEM_ERROR","message":"系统错误"})"},
     {500, R"({"code":"SYSTEM_ERROR","message":"系统错误"})"},
     {404, R"({"code":"NOT_FOUND","message":"资源不存在"})"},
     {405, R"({"code":"NOT_FOUND","message":"资源不存在"})"},
     400, wechat_created, wechat_declined, wechat_refusal, wechat_prepay_id, AuthScheme::wechatpay_v3},

    // Adyen: idempotency-key header, echoed in the response [Ad1]; in flight 409 errorCode 704
    // with transient-error: true; 503 errorCode 703 transient [Ad1]. Mismatch n.d.: 422
    // errorCode 704 without the transient header ("do not retry"), sim choice. A refusal is a
    // 200 with resultCode Refused [Ad4].
    // Ids: a pspReference is 16 letters and digits: PSP and 13 digits (sim choice).
    {ProfileId::adyen, "adyen", {"PSP", 13}, {}, Identity::header, "idempotency-key", "",
     Replay::stored, false, false, /*echo_key=*/true, /*transient_503=*/true, "EUR", 200, 200, 0,
     {401, R"({"status":401,"errorCode":"000","message":"HTTP Status Response - Unauthorized","errorType":"security"})"},
     422,
     {422, R"({"status":422,"errorCode":"704","message":"request already processed or in progress","errorType":"validation"})"},
     {409, R"({"status":409,"errorCode":"704","message":"request already processed or in progress","errorType":"validation"})"},
     {0, ""},
     {429, R"({"status":429,"errorCode":"000","message":"Too Many Requests","errorType":"validation"})"},
     {502, R"({"status":502,"errorCode":"000","message":"Bad Gateway","errorType":"internal"})"},
     {503, R"({"status":503,"errorCode":"703","message":"Service unavailable, try again later","errorType":"internal"})"},
     {500, R"({"status":500,"errorCode":"000","message":"An unknown error occurred","errorType":"internal"})"},
     {404, R"({"status":404,"errorCode":"000","message":"Not Found","errorType":"validation"})"},
     {405, R"({"status":405,"errorCode":"000","message":"Method Not Allowed","errorType":"validation"})"},
     200, adyen_created, adyen_declined, adyen_refusal, nullptr, AuthScheme::bearer, /*unreadable_status=*/400},

    // Mollie: stored replay with Idempotent-Replayed, 409 in flight, 400 on other parameters
    // [Mo1]; problem+json-style bodies.
    // Ids: tr_<n>, as Mollie's payment ids (mollie-api-python refuses any other in payments.get).
    {ProfileId::mollie, "mollie", {"tr_"}, {}, Identity::header, "Idempotency-Key", "",
     Replay::stored, false, /*replay_marker=*/true, false, false, "EUR", 201, 201, 0,
     {401, R"({"status":401,"title":"Unauthorized Request","detail":"Missing authentication, or failed to authenticate"})"},
     422,
     {400, R"({"status":400,"title":"Bad Request","detail":"The idempotency key was already used for a request with other parameters"})"},
     {409, R"({"status":409,"title":"Conflict","detail":"A request with this idempotency key is already being processed"})"},
     {0, ""},
     {429, R"({"status":429,"title":"Too Many Requests","detail":"You have made too many requests"})"},
     {502, R"({"status":502,"title":"Bad Gateway","detail":"Bad gateway"})"},
     {503, R"({"status":503,"title":"Service Unavailable","detail":"Service unavailable"})"},
     {500, R"({"status":500,"title":"Internal Server Error","detail":"An internal server error occurred"})"},
     {404, R"({"status":404,"title":"Not Found","detail":"No payment exists with this id"})"},
     {405, R"({"status":405,"title":"Method Not Allowed","detail":"The method is not allowed"})"},
     422, mollie_created, mollie_declined, mollie_refusal, nullptr},

    // Alipay: biz_content.out_trade_no is the identity [Al1]; ACQ.TRADE_HAS_SUCCESS after
    // success, ACQ.CONTEXT_INCONSISTENT on other parameters, 20000/ACQ.SYSTEM_ERROR on
    // failures ("query at once") [Al2][Al3]; HTTP 200 throughout. The 429 keeps HTTP 429 and
    // Retry-After (rate limiting is n.d. for Alipay: sim choice) with a gateway error_response.
    // The gateway's form and signature refusals are alipay_gateway.cpp's; `unauthorized` is
    // never sent (no bearer in this mode).
    // Ids: trade_no, 28 digits (2024 and 24 digits).
    {ProfileId::alipay, "alipay", {"2024", 24}, {}, Identity::reference, "", "", Replay::error_code,
     false, false, false, false, "CNY", 200, 200, 200,
     {200, R"({"error_response":{"code":"40002","msg":"Invalid Arguments","sub_code":"isv.invalid-signature","sub_msg":"验签出错"}})"},
     200,
     {200, R"({"alipay_trade_pay_response":{"code":"40004","msg":"Business Failed","sub_code":"ACQ.CONTEXT_INCONSISTENT","sub_msg":"交易信息被篡改"}})"},
     {0, ""},
     {200, R"({"alipay_trade_pay_response":{"code":"40004","msg":"Business Failed","sub_code":"ACQ.TRADE_HAS_SUCCESS","sub_msg":"交易已被支付"}})"},
     {429, R"({"error_response":{"code":"20000","msg":"Service Currently Unavailable","sub_code":"isp.call-limited","sub_msg":"调用频率超限"}})"},
     {200, R"({"alipay_trade_pay_response":{"code":"20000","msg":"Service Currently Unavailable","sub_code":"ACQ.SYSTEM_ERROR","sub_msg":"系统异常"}})"},
     {200, R"({"alipay_trade_pay_response":{"code":"20000","msg":"Service Currently Unavailable","sub_code":"ACQ.SYSTEM_ERROR","sub_msg":"系统异常"}})"},
     {200, R"({"alipay_trade_pay_response":{"code":"20000","msg":"Service Currently Unavailable","sub_code":"ACQ.SYSTEM_ERROR","sub_msg":"系统异常"}})"},
     {404, R"({"error_response":{"code":"40004","msg":"Business Failed","sub_code":"isv.invalid-path"}})"},
     {405, R"({"error_response":{"code":"40004","msg":"Business Failed","sub_code":"isv.invalid-method"}})"},
     200, alipay_created, alipay_declined, alipay_refusal, alipay_in_flight, AuthScheme::alipay_rsa2},
};

// Where the non-Stripe profiles find the payment fields. Each list is tried in order; every
// profile also accepts the plain {"order_id","amount"(minor units),"currency"} shape.
struct BodyPaths {
  const char* const* order;     // Identity::header / body_key: the first string found
  const char* reference;        // Identity::reference: the identity (order_id must equal it)
  const char* const* minor;     // integer amount in minor units
  const char* const* major;     // decimal amount in major units ("10.00" or 10.5)
  const char* const* currency;  // first string found
  // The provider's own names for the order and the amount, which a refusal of a body that
  // carries neither form names (the plain order_id and amount are the sim's shorthand).
  const char* order_param;
  const char* amount_param;
};

constexpr const char* kNone[] = {nullptr};
constexpr const char* kOrderPlain[] = {"order_id", nullptr};
constexpr const char* kAmountPlain[] = {"amount", nullptr};
constexpr const char* kCurrencyPlain[] = {"currency", nullptr};

constexpr const char* kCkoOrder[] = {"order_id", "reference", nullptr};
constexpr const char* kPpOrder[] = {"order_id", "purchase_units.0.reference_id", nullptr};
constexpr const char* kPpMajor[] = {"purchase_units.0.amount.value", nullptr};
constexpr const char* kPpCurrency[] = {"currency", "purchase_units.0.amount.currency_code", nullptr};
constexpr const char* kSqOrder[] = {"order_id", "reference_id", nullptr};
constexpr const char* kSqMinor[] = {"amount", "amount_money.amount", nullptr};
constexpr const char* kSqCurrency[] = {"currency", "amount_money.currency", nullptr};
constexpr const char* kWxMinor[] = {"amount.total", "amount", nullptr};
constexpr const char* kWxCurrency[] = {"amount.currency", "currency", nullptr};
constexpr const char* kAdOrder[] = {"order_id", "reference", nullptr};
constexpr const char* kAdMinor[] = {"amount.value", "amount", nullptr};
constexpr const char* kAdCurrency[] = {"amount.currency", "currency", nullptr};
constexpr const char* kMoOrder[] = {"order_id", "metadata.order_id", nullptr};
constexpr const char* kMoMajor[] = {"amount.value", nullptr};
constexpr const char* kMoCurrency[] = {"currency", "amount.currency", nullptr};
constexpr const char* kAlMajor[] = {"biz_content.total_amount", nullptr};

const BodyPaths& body_paths(ProfileId id) {
  static const BodyPaths kStripe{kOrderPlain, nullptr, kAmountPlain, kNone, kCurrencyPlain, "order_id", "amount"};
  static const BodyPaths kCko{kCkoOrder, nullptr, kAmountPlain, kNone, kCurrencyPlain, "reference", "amount"};
  static const BodyPaths kPp{kPpOrder,           nullptr, kAmountPlain, kPpMajor, kPpCurrency,
                             "purchase_units.0.reference_id", "purchase_units.0.amount.value"};
  static const BodyPaths kSq{kSqOrder, nullptr, kSqMinor, kNone, kSqCurrency, "reference_id", "amount_money.amount"};
  static const BodyPaths kWx{kNone, "out_trade_no", kWxMinor, kNone, kWxCurrency, "out_trade_no", "amount.total"};
  static const BodyPaths kAd{kAdOrder, nullptr, kAdMinor, kNone, kAdCurrency, "reference", "amount.value"};
  static const BodyPaths kMo{kMoOrder, nullptr, kAmountPlain, kMoMajor, kMoCurrency, "metadata.order_id", "amount.value"};
  static const BodyPaths kAl{kNone,         "biz_content.out_trade_no", kAmountPlain, kAlMajor, kCurrencyPlain,
                             "biz_content.out_trade_no", "biz_content.total_amount"};
  switch (id) {
    case ProfileId::stripe: return kStripe;
    case ProfileId::checkout_com: return kCko;
    case ProfileId::paypal: return kPp;
    case ProfileId::square: return kSq;
    case ProfileId::wechatpay_v3: return kWx;
    case ProfileId::adyen: return kAd;
    case ProfileId::mollie: return kMo;
    case ProfileId::alipay: return kAl;
  }
  return kStripe;
}

// A dotted path; numeric segments index arrays.
const cJSON* at_path(const cJSON* root, std::string_view path) {
  const cJSON* cur = root;
  while (cur && !path.empty()) {
    const std::size_t dot = path.find('.');
    const std::string seg(path.substr(0, dot));
    if (cJSON_IsArray(cur)) {
      int idx = 0;
      auto r = std::from_chars(seg.data(), seg.data() + seg.size(), idx);
      if (r.ec != std::errc() || r.ptr != seg.data() + seg.size()) return nullptr;
      cur = cJSON_GetArrayItem(cur, idx);
    } else if (cJSON_IsObject(cur)) {
      cur = cJSON_GetObjectItemCaseSensitive(cur, seg.c_str());
    } else {
      return nullptr;
    }
    if (dot == std::string_view::npos) break;
    path.remove_prefix(dot + 1);
  }
  return cur;
}

bool nonempty_string(const cJSON* v) {
  return cJSON_IsString(v) && v->valuestring && v->valuestring[0] != '\0';
}

constexpr double kMaxSafe = 9007199254740991.0;

// "10", "10.5", "10.50" -> minor units. Returns false on anything else.
bool parse_decimal(std::string_view s, int64_t* minor) {
  std::size_t dot = s.find('.');
  std::string_view whole = s.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
  if (whole.empty() || whole.size() > 13) return false;
  if (dot != std::string_view::npos && (frac.empty() || frac.size() > 2)) return false;
  int64_t w = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return false;
    w = w * 10 + (c - '0');
  }
  int64_t f = 0;
  for (char c : frac) {
    if (c < '0' || c > '9') return false;
    f = f * 10 + (c - '0');
  }
  if (frac.size() == 1) f *= 10;
  *minor = w * 100 + f;
  return true;
}

}  // namespace

void set_canned(Reply& out, const Canned& c) {
  out.status = c.status;
  out.body.assign(c.body);
}

std::string refusal_message(const Refusal& r) {
  return r.param.empty() ? r.reason : r.param + " " + r.reason;
}

int refusal_status(const Profile& p, const Refusal& why) {
  return why.problem == Problem::unreadable && p.unreadable_status ? p.unreadable_status : p.invalid_status;
}

void set_refusal(Reply& out, const Profile& p, const Refusal& why) {
  out.status = refusal_status(p, why);
  out.body.clear();
  p.format_refusal(out.body, p, why);
}

void append_id(std::string& out, const IdShape& shape, uint64_t number) {
  out.append(shape.prefix);
  char digits[24];
  const auto r = std::to_chars(digits, digits + sizeof digits, number);
  const std::size_t n = static_cast<std::size_t>(r.ptr - digits);
  if (n < shape.width) out.append(shape.width - n, '0');
  out.append(digits, n);
}

std::string format_id(const IdShape& shape, uint64_t number) {
  std::string s;
  append_id(s, shape, number);
  return s;
}

bool parse_id(const IdShape& shape, std::string_view id, uint64_t* number) {
  if (!starts_with(id, shape.prefix)) return false;
  const std::string_view digits = id.substr(shape.prefix.size());
  // Exactly `width` digits when padded (more only for a number that outgrew it, never with a
  // leading zero); unpadded, no leading zero. from_chars takes no sign and no space.
  if (digits.empty() || digits.size() < shape.width) return false;
  if (digits.size() > 1 && digits.size() > shape.width && digits[0] == '0') return false;
  uint64_t n = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size() || n == 0) return false;
  *number = n;
  return true;
}

const Profile& stripe_profile() { return kProfiles[0]; }

const Profile* find_profile(std::string_view name) {
  for (const Profile& p : kProfiles) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::vector<std::string> profile_names() {
  std::vector<std::string> v;
  for (const Profile& p : kProfiles) v.emplace_back(p.name);
  return v;
}

namespace {

// Fills `why` and answers invalid: every refusal of parse_profile_payment goes out here.
ParseOutcome refuse(Refusal* why, Problem problem, std::string param, std::string reason) {
  if (why) *why = Refusal{problem, std::move(param), std::move(reason)};
  return ParseOutcome::invalid;
}

// What is wrong with `v` where a non-empty string belongs (nullptr: absent).
Problem string_problem(const cJSON* v) {
  if (!v) return Problem::missing;
  return cJSON_IsString(v) ? Problem::empty : Problem::not_string;
}

const char* string_reason(Problem p) {
  switch (p) {
    case Problem::missing: return "is required";
    case Problem::empty: return "must not be empty";
    default: return "must be a string";
  }
}

constexpr const char* kMinorReason = "must be a positive whole number of minor units, at most 9007199254740991";
constexpr const char* kMajorReason = "must be a positive decimal with at most two places, such as \"10.00\"";

// The request fields by which each provider's own test mode asks for a payment that is not
// paid at once. Fields of another type than the provider's are left to mean nothing here.
void read_flow(const Profile& prof, const cJSON* root, Flow* flow) {
  switch (prof.id) {
    case ProfileId::paypal: {
      const cJSON* intent = at_path(root, "intent");
      flow->manual_capture = cJSON_IsString(intent) && std::string_view(intent->valuestring) == "AUTHORIZE";
      // A card pays at once (the sim takes every card); a wallet (payment_source.paypal, venmo,
      // ...) sends the payer to PayPal first: PAYER_ACTION_REQUIRED.
      const cJSON* source = at_path(root, "payment_source");
      if (cJSON_IsObject(source) && !cJSON_GetObjectItemCaseSensitive(source, "card") && source->child) {
        flow->wait = Wait::payer_action_required;
      }
      break;
    }
    case ProfileId::checkout_com:
      flow->manual_capture = cJSON_IsFalse(at_path(root, "capture"));
      if (cJSON_IsTrue(at_path(root, "3ds.enabled"))) flow->wait = Wait::customer;
      break;
    case ProfileId::adyen: {
      // "scheme" is Adyen's card type; iDEAL, PayPal, Klarna and the other redirect methods
      // answer RedirectShopper.
      const cJSON* type = at_path(root, "paymentMethod.type");
      if (nonempty_string(type) && std::string_view(type->valuestring) != "scheme") flow->wait = Wait::customer;
      break;
    }
    case ProfileId::square:
      flow->manual_capture = cJSON_IsFalse(at_path(root, "autocomplete"));
      break;
    case ProfileId::mollie: {
      const cJSON* mode = at_path(root, "captureMode");
      flow->manual_capture = cJSON_IsString(mode) && std::string_view(mode->valuestring) == "manual";
      break;
    }
    case ProfileId::stripe:
    case ProfileId::wechatpay_v3:
    case ProfileId::alipay:
      break;
  }
  flow->asked = flow->wait != Wait::none || flow->manual_capture;
}

}  // namespace

std::string_view stripe_status(const PaymentView& v) {
  switch (v.money) {
    case Money::awaiting_customer:
      return v.wait == Wait::requires_confirmation ? "requires_confirmation"
             : v.wait == Wait::requires_action    ? "requires_action"
                                                  : "requires_payment_method";
    case Money::pending: return "processing";
    case Money::authorized: return "requires_capture";
    case Money::paid: return "succeeded";
    case Money::failed: return "canceled";
  }
  return "requires_payment_method";
}

int created_status(const Profile& p, const PaymentView& v) {
  // Checkout.com: 202 Accepted for a payment that needs the customer's 3-D Secure.
  if (p.id == ProfileId::checkout_com && (v.money == Money::awaiting_customer || v.money == Money::pending)) {
    return 202;
  }
  return p.created_status;
}

std::string paypal_capture_id(uint64_t number) { return format_id({"CAP", 14}, number); }
std::string paypal_authorization_id(uint64_t number) { return format_id({"AUT", 14}, number); }

ParseOutcome parse_profile_payment(const Profile& prof, std::string_view body, ProfileFields* out, Refusal* why) {
  CJsonPtr root(cJSON_ParseWithLength(body.data(), body.size()));
  if (!root || !cJSON_IsObject(root.get())) {
    return refuse(why, Problem::unreadable, "", "the body is not a JSON object");
  }
  // Alipay's biz_content is JSON text (the gateway form's field, see gate.cpp): read it in place.
  if (prof.id == ProfileId::alipay) {
    cJSON* biz = cJSON_GetObjectItemCaseSensitive(root.get(), "biz_content");
    cJSON* inner = cJSON_IsString(biz) && biz->valuestring ? cJSON_Parse(biz->valuestring) : nullptr;
    if (!inner || !cJSON_IsObject(inner)) {
      cJSON_Delete(inner);
      return refuse(why, Problem::bad_value, "biz_content", "must be the JSON text of an object");
    }
    cJSON_ReplaceItemInObjectCaseSensitive(root.get(), "biz_content", inner);
  }
  const BodyPaths& paths = body_paths(prof.id);

  if (prof.identity == Identity::body_key) {
    const cJSON* k = at_path(root.get(), prof.key_field);
    if (!nonempty_string(k)) {
      const Problem p = string_problem(k);
      return refuse(why, p, std::string(prof.key_field),
                    std::string(string_reason(p)) + ": the idempotency key travels in the body here");
    }
    out->key = k->valuestring;
  }
  if (prof.identity == Identity::reference) {
    const cJSON* ref = at_path(root.get(), paths.reference);
    if (!nonempty_string(ref)) {
      const Problem p = string_problem(ref);
      return refuse(why, p, paths.reference,
                    std::string(string_reason(p)) + ": the merchant's order number is the payment's identity");
    }
    out->order_id = ref->valuestring;
    // The reference is the order: a different order_id beside it would split the truth.
    const cJSON* oid = cJSON_GetObjectItemCaseSensitive(root.get(), "order_id");
    if (oid && (!cJSON_IsString(oid) || out->order_id != oid->valuestring)) {
      return refuse(why, Problem::bad_value, "order_id",
                    std::string("must name the same order as ") + paths.reference + ", the payment's identity");
    }
    out->key = out->order_id;
  } else {
    bool found = false;
    // The first of the order's fields that is present but unusable, else the provider's own.
    const char* blamed = nullptr;
    Problem problem = Problem::missing;
    for (const char* const* p = paths.order; *p && !found; ++p) {
      const cJSON* v = at_path(root.get(), *p);
      if (nonempty_string(v)) {
        out->order_id = v->valuestring;
        found = true;
      } else if (v && !blamed) {
        blamed = *p;
        problem = string_problem(v);
      }
    }
    if (!found) {
      return refuse(why, problem, blamed ? blamed : paths.order_param,
                    std::string(string_reason(problem)) + ": the order id the payment is recorded under");
    }
  }

  bool have_amount = false;
  // An amount field holding a string, boolean or null (an object may hold the other shape's
  // fields: WeChat Pay's amount.total under "amount").
  const char* wrong_type = nullptr;
  bool wrong_type_major = false;
  for (const char* const* p = paths.minor; *p && !have_amount; ++p) {
    const cJSON* v = at_path(root.get(), *p);
    if (!cJSON_IsNumber(v)) {
      if (v && !cJSON_IsObject(v) && !cJSON_IsArray(v) && !wrong_type) wrong_type = *p;
      continue;
    }
    const double d = v->valuedouble;
    if (std::floor(d) != d) return refuse(why, Problem::bad_number, *p, kMinorReason);
    if (!(d > 0 && d <= kMaxSafe)) return refuse(why, Problem::bad_value, *p, kMinorReason);
    out->amount = static_cast<int64_t>(d);
    have_amount = true;
  }
  for (const char* const* p = paths.major; *p && !have_amount; ++p) {
    const cJSON* v = at_path(root.get(), *p);
    int64_t minor = 0;
    if (cJSON_IsString(v) && v->valuestring) {
      if (!parse_decimal(v->valuestring, &minor)) return refuse(why, Problem::bad_number, *p, kMajorReason);
    } else if (cJSON_IsNumber(v)) {
      const double cents = v->valuedouble * 100;
      if (std::fabs(cents - std::round(cents)) > 1e-6) return refuse(why, Problem::bad_number, *p, kMajorReason);
      if (!(cents > 0 && cents <= kMaxSafe)) return refuse(why, Problem::bad_value, *p, kMajorReason);
      minor = static_cast<int64_t>(std::round(cents));
    } else {
      if (v && !cJSON_IsObject(v) && !cJSON_IsArray(v) && !wrong_type) {
        wrong_type = *p;
        wrong_type_major = true;
      }
      continue;
    }
    if (minor <= 0) return refuse(why, Problem::bad_value, *p, kMajorReason);
    out->amount = minor;
    have_amount = true;
  }
  if (!have_amount) {
    const bool major = *paths.major != nullptr && std::string_view(paths.amount_param) == *paths.major;
    if (wrong_type) return refuse(why, Problem::bad_number, wrong_type, wrong_type_major ? kMajorReason : kMinorReason);
    return refuse(why, Problem::missing, paths.amount_param,
                  major ? "is required: what to charge, as a decimal such as \"10.00\""
                        : "is required: what to charge, in minor units");
  }

  read_flow(prof, root.get(), &out->flow);

  out->currency.assign(prof.default_currency);
  for (const char* const* p = paths.currency; *p; ++p) {
    const cJSON* v = at_path(root.get(), *p);
    if (nonempty_string(v)) {
      out->currency = v->valuestring;
      break;
    }
  }
  return ParseOutcome::ok;
}

namespace {

// /v71/payments and the like: Adyen's Checkout API is versioned, there is no bare /payments.
bool adyen_payments_path(std::string_view path) {
  if (!starts_with(path, "/v")) return false;
  std::size_t i = 2;
  while (i < path.size() && path[i] >= '0' && path[i] <= '9') ++i;
  return i > 2 && path.substr(i) == "/payments";
}

bool wechat_create_path(std::string_view path) {
  constexpr std::string_view kPrefix = "/v3/pay/transactions/";
  if (!starts_with(path, kPrefix)) return false;
  std::string_view rest = path.substr(kPrefix.size());
  return !rest.empty() && rest.find('/') == std::string_view::npos;
}

}  // namespace

Route route(const Profile& p, std::string_view method, std::string_view path) {
  const bool post = method == "POST";
  const bool get = method == "GET";
  // The Stripe profile keeps its exact routes: POST /v1/payments, GET /v1/payments[/{id}].
  if (p.id == ProfileId::stripe) {
    if (post && path == "/v1/payments") return Route::create;
    // What stripe-python and stripe-go call: the form-encoded PaymentIntent create.
    if (post && path == "/v1/payment_intents") return Route::create_form;
    if (get && starts_with(path, "/v1/payment_intents/")) return Route::lookup;
    if (path == "/v1/payment_intents" || starts_with(path, "/v1/payment_intents/")) {
      return Route::method_not_allowed;
    }
    const bool ours = path == "/v1/payments" || starts_with(path, "/v1/payments/");
    if (get && ours) return Route::lookup;
    return ours ? Route::method_not_allowed : Route::no_route;
  }
  // Alipay has one URL, the gateway; what a call does is its method parameter.
  if (p.id == ProfileId::alipay) {
    if (path != "/gateway.do") return Route::no_route;
    return post ? Route::gateway : Route::method_not_allowed;
  }
  if (p.id == ProfileId::paypal && path == "/v1/oauth2/token") {
    return post ? Route::oauth2_token : Route::method_not_allowed;
  }
  // Every other profile also takes POST /v1/payments as an alias of its create path.
  if (path == "/v1/payments") return post ? Route::create : Route::method_not_allowed;
  bool create_path = false;
  bool lookup_path = false;
  switch (p.id) {
    case ProfileId::stripe:
      break;
    case ProfileId::checkout_com:
      create_path = path == "/payments";
      lookup_path = path == "/payments" || starts_with(path, "/payments/");
      break;
    case ProfileId::paypal:
      create_path = path == "/v2/checkout/orders";
      lookup_path = starts_with(path, "/v2/checkout/orders/");
      break;
    case ProfileId::square:
      create_path = path == "/v2/payments";
      lookup_path = starts_with(path, "/v2/payments/");
      break;
    case ProfileId::wechatpay_v3:
      lookup_path = starts_with(path, "/v3/pay/transactions/out-trade-no/");
      create_path = !lookup_path && wechat_create_path(path);
      break;
    case ProfileId::adyen:
      create_path = adyen_payments_path(path);
      break;
    case ProfileId::mollie:
      create_path = path == "/v2/payments";
      lookup_path = starts_with(path, "/v2/payments/");
      break;
    case ProfileId::alipay:  // routed above
      break;
  }
  if (create_path && post) return Route::create;
  if (lookup_path && get) return Route::lookup;
  return create_path || lookup_path ? Route::method_not_allowed : Route::no_route;
}

namespace {

void lookup_stripe(const Profile& p, const State& state, std::string_view path, std::string_view query,
                   std::string_view scope, Reply& out) {
  std::string pi;
  if (one_segment(path, "/v1/payment_intents/", &pi)) {
    uint64_t number = 0;
    State::PaymentCopy c;
    if (parse_id(p.payment_id, pi, &number) && state.payment_by_number(number, scope, &c)) {
      out.status = 200;
      format_payment_intent(out.body, state.with_operations(c));
    } else {
      set_canned(out, p.no_route);
    }
    return;
  }
  if (path == "/v1/payments") {
    std::string order;
    if (query_param(query, "order_id", &order) && !order.empty()) {
      state.list_payments(order, scope, out);
    } else {
      out.status = 400;
      out.body.assign(
          R"({"error":{"type":"invalid_request_error","code":"parameter_missing","param":"order_id"}})");
    }
  } else {
    state.get_payment(path.substr(std::string_view("/v1/payments/").size()), scope, out);
  }
}

// GET /{prefix}{id}: the payment object or the profile's 404.
void lookup_by_id(const Profile& p, const State& state, std::string_view path, std::string_view prefix,
                  std::string_view scope, Reply& out) {
  std::string id;
  uint64_t number = 0;
  State::PaymentCopy c;
  if (one_segment(path, prefix, &id) && parse_id(p.payment_id, id, &number) &&
      state.payment_by_number(number, scope, &c)) {
    out.status = 200;
    format_created(p, out.body, state.with_operations(c));
    return;
  }
  set_canned(out, p.no_route);
}

void lookup_checkout(const Profile& p, const State& state, std::string_view path,
                     std::string_view query, std::string_view scope, Reply& out) {
  if (path != "/payments") {
    lookup_by_id(p, state, path, "/payments/", scope, out);
    return;
  }
  std::string ref;
  if (!query_param(query, "reference", &ref) || ref.empty()) {
    out.status = 422;
    out.body.assign(R"({"error_type":"request_invalid","error_codes":["reference_required"]})");
    return;
  }
  const auto payments = state.payments_for(ref, scope);
  out.status = 200;
  out.body.assign(R"({"limit":10,"skip":0,"total_count":)");
  append_int(out.body, payments.size());
  out.body.append(R"(,"data":[)");
  for (std::size_t i = 0; i < payments.size(); ++i) {
    if (i) out.body.push_back(',');
    format_created(p, out.body, state.with_operations(payments[i]));
  }
  out.body.append("]}");
}

void lookup_wechat(const Profile& p, const State& state, std::string_view path, std::string_view query,
                   std::string_view scope, Reply& out) {
  std::string no;
  if (!one_segment(path, "/v3/pay/transactions/out-trade-no/", &no)) {
    out.status = 400;
    out.body.assign(R"({"code":"PARAM_ERROR","message":"参数错误"})");
    return;
  }
  const auto payments = state.payments_for(no, scope);
  out.status = 200;
  out.body.assign(R"({"out_trade_no":)");
  append_json_string(out.body, no);
  // The trade's merchant, as WeChat's answers name it [Wx4]: the one the lookup asked as.
  std::string mchid;
  if (query_param(query, "mchid", &mchid) && !mchid.empty()) {
    out.body.append(R"(,"mchid":)");
    append_json_string(out.body, mchid);
  }
  if (!payments.empty()) {
    // NOTPAY until the payer pays the prepay_id; CLOSED when it never was (TradeStateEnum of
    // wechatpay-java). Only a paid trade has a transaction_id.
    const Money m = payments.front().money;
    if (m != Money::paid) {
      out.body.append(m == Money::failed ? R"(,"trade_state":"CLOSED","trade_state_desc":"订单已关闭"})"
                                         : R"(,"trade_state":"NOTPAY","trade_state_desc":"订单未支付"})");
      return;
    }
    out.body.append(R"(,"transaction_id":")");
    append_id(out.body, p.payment_id, payments.front().number);
    out.body.append(R"(","trade_state":"SUCCESS","amount":{"total":)");
    append_int(out.body, static_cast<long long>(payments.front().amount));
    out.body.append(R"(,"currency":)");
    append_json_string(out.body, payments.front().currency);
    out.body.append("}}");
    return;
  }
  switch (state.phase(no, scope)) {
    case State::Phase::in_progress:
      out.body.append(R"(,"trade_state":"NOTPAY"})");
      return;
    case State::Phase::done_not_charged:  // declined
      out.body.append(R"(,"trade_state":"PAYERROR"})");
      return;
    case State::Phase::none:
    case State::Phase::done_charged:  // not after a reset: charges and keys go together
      break;
  }
  out.status = 404;
  out.body.assign(R"({"code":"ORDER_NOT_EXIST","message":"订单不存在"})");
}

// alipay.trade.query, admitted by the gateway: biz_content.out_trade_no names the trade.
void lookup_alipay(const Profile& p, const State& state, std::string_view body, std::string_view scope,
                   Reply& out) {
  out.status = 200;
  std::string no;
  {
    CJsonPtr root(cJSON_ParseWithLength(body.data(), body.size()));
    const cJSON* biz = root ? cJSON_GetObjectItemCaseSensitive(root.get(), "biz_content") : nullptr;
    CJsonPtr inner(cJSON_IsString(biz) && biz->valuestring ? cJSON_Parse(biz->valuestring) : nullptr);
    const cJSON* v = inner ? cJSON_GetObjectItemCaseSensitive(inner.get(), "out_trade_no") : nullptr;
    if (nonempty_string(v)) no = v->valuestring;
  }
  if (no.empty()) {
    out.body.assign(
        R"({"alipay_trade_query_response":{"code":"40002","msg":"Invalid Arguments","sub_code":"isv.missing-parameter","sub_msg":"缺少必选参数"}})");
    return;
  }
  const auto payments = state.payments_for(no, scope);
  const char* trade_status = nullptr;
  if (!payments.empty()) {
    const Money m = payments.front().money;
    trade_status = m == Money::paid ? "TRADE_SUCCESS" : m == Money::failed ? "TRADE_CLOSED" : "WAIT_BUYER_PAY";
  } else {
    switch (state.phase(no, scope)) {
      case State::Phase::in_progress: trade_status = "WAIT_BUYER_PAY"; break;
      case State::Phase::done_not_charged: trade_status = "TRADE_CLOSED"; break;
      default: break;
    }
  }
  if (!trade_status) {
    out.body.assign(
        R"({"alipay_trade_query_response":{"code":"40004","msg":"Business Failed","sub_code":"ACQ.TRADE_NOT_EXIST","sub_msg":"交易不存在"}})");
    return;
  }
  out.body.assign(R"({"alipay_trade_query_response":{"code":"10000","msg":"Success",)");
  if (!payments.empty()) {
    out.body.append(R"("trade_no":")");
    append_id(out.body, p.payment_id, payments.front().number);
    out.body.append(R"(",)");
  }
  out.body.append(R"("out_trade_no":)");
  append_json_string(out.body, no);
  out.body.append(R"(,"trade_status":")");
  out.body.append(trade_status);
  out.body.push_back('"');
  if (!payments.empty()) {
    out.body.append(R"(,"total_amount":")");
    append_major(out.body, payments.front().amount);
    out.body.push_back('"');
  }
  out.body.append("}}");
}

}  // namespace

void lookup(const Profile& p, const State& state, std::string_view method, std::string_view path,
            std::string_view query, std::string_view body, std::string_view scope, Reply& out) {
  (void)method;
  out.clear();
  switch (p.id) {
    case ProfileId::stripe: lookup_stripe(p, state, path, query, scope, out); return;
    case ProfileId::checkout_com: lookup_checkout(p, state, path, query, scope, out); return;
    case ProfileId::paypal: lookup_by_id(p, state, path, "/v2/checkout/orders/", scope, out); return;
    case ProfileId::square: lookup_by_id(p, state, path, "/v2/payments/", scope, out); return;
    case ProfileId::mollie: lookup_by_id(p, state, path, "/v2/payments/", scope, out); return;
    case ProfileId::wechatpay_v3: lookup_wechat(p, state, path, query, scope, out); return;
    case ProfileId::alipay: lookup_alipay(p, state, body, scope, out); return;
    case ProfileId::adyen: break;  // no synchronous lookup [Ad3]
  }
  set_canned(out, p.no_route);
}

}  // namespace payretry_sim
