// Each provider's operations as it documents them: the endpoints (route_operation), the request
// fields (parse_operation), the answers and the error codes (format_*), and how it keeps an
// operation's key (op_rules). Sources are cited per provider; "sim choice" marks a shape or code
// the sources do not settle, kept in the provider's own error style.
#include "operations.hpp"

#include <cjson/cJSON.h>

#include <charconv>
#include <cmath>
#include <ctime>
#include <memory>

#include "form_body.hpp"
#include "http_conn.hpp"
#include "state.hpp"

namespace payretry_sim {

namespace {

struct CJsonDeleter {
  void operator()(cJSON* p) const { cJSON_Delete(p); }
};
using CJsonPtr = std::unique_ptr<cJSON, CJsonDeleter>;

// The path's segments after the leading '/', percent-decoded ("%2F" stays inside its segment).
std::vector<std::string> segments(std::string_view path) {
  std::vector<std::string> out;
  if (path.empty() || path[0] != '/') return out;
  path.remove_prefix(1);
  while (true) {
    const std::size_t slash = path.find('/');
    std::string decoded;
    const std::string_view raw = path.substr(0, slash);
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '%' && i + 2 < raw.size() && hexval(raw[i + 1]) >= 0 && hexval(raw[i + 2]) >= 0) {
        decoded.push_back(static_cast<char>(hexval(raw[i + 1]) * 16 + hexval(raw[i + 2])));
        i += 2;
      } else {
        decoded.push_back(raw[i]);
      }
    }
    out.push_back(std::move(decoded));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

// "v71" and the like: Adyen's Checkout API is versioned.
bool adyen_version(const std::string& s) {
  if (s.size() < 2 || s[0] != 'v') return false;
  for (std::size_t i = 1; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// 1050 -> "10.50"
std::string major(int64_t minor) {
  std::string out = std::to_string(minor / 100) + ".";
  const int cents = static_cast<int>(minor % 100);
  out.push_back(static_cast<char>('0' + cents / 10));
  out.push_back(static_cast<char>('0' + cents % 10));
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return out;
}

std::string json(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

// "10", "10.5", "10.50" -> minor units.
bool parse_decimal(std::string_view s, int64_t* minor) {
  const std::size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
  if (whole.empty() || whole.size() > 13) return false;
  if (dot != std::string_view::npos && (frac.empty() || frac.size() > 2)) return false;
  int64_t w = 0, f = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return false;
    w = w * 10 + (c - '0');
  }
  for (char c : frac) {
    if (c < '0' || c > '9') return false;
    f = f * 10 + (c - '0');
  }
  if (frac.size() == 1) f *= 10;
  *minor = w * 100 + f;
  return true;
}

const cJSON* at(const cJSON* root, std::string_view dotted) {
  const cJSON* cur = root;
  while (cur && !dotted.empty()) {
    const std::size_t dot = dotted.find('.');
    cur = cJSON_IsObject(cur) ? cJSON_GetObjectItemCaseSensitive(cur, std::string(dotted.substr(0, dot)).c_str()) : nullptr;
    if (dot == std::string_view::npos) break;
    dotted.remove_prefix(dot + 1);
  }
  return cur;
}

// Checkout.com's maxLength for an action's reference (nas_spec CaptureRequest, RefundRequest,
// VoidRequest). JSON Schema's maxLength counts characters, not bytes.
constexpr std::size_t kCheckoutReferenceMax = 50;

std::size_t utf8_chars(std::string_view s) {
  std::size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // not a continuation byte
  return n;
}

bool text(const cJSON* root, std::string_view path, std::string* out) {
  const cJSON* v = at(root, path);
  if (!cJSON_IsString(v) || !v->valuestring || !*v->valuestring) return false;
  *out = v->valuestring;
  return true;
}

// A positive whole number of minor units.
bool minor_units(const cJSON* root, std::string_view path, int64_t* out) {
  const cJSON* v = at(root, path);
  if (!cJSON_IsNumber(v) || std::floor(v->valuedouble) != v->valuedouble || v->valuedouble <= 0 ||
      v->valuedouble > 9007199254740991.0) {
    return false;
  }
  *out = static_cast<int64_t>(v->valuedouble);
  return true;
}

bool major_units(const cJSON* root, std::string_view path, int64_t* out) {
  std::string s;
  return text(root, path, &s) && parse_decimal(s, out) && *out > 0;
}

// ---- each provider's refusals of a request it cannot read ---------------------------------------
// The same field names and codes as its create refusals (profiles.cpp), so that a client's error
// handling reads both alike.

void refuse(const Profile& p, Problem problem, std::string param, std::string reason, Reply& out) {
  set_refusal(out, p, Refusal{problem, std::move(param), std::move(reason)});
}

std::string iso_utc(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string iso_beijing(int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000 + 8 * 3600);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S+08:00", &tm);
  return buf;
}

}  // namespace

std::string_view op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::capture: return "capture";
    case OpKind::refund: return "refund";
    case OpKind::cancel: return "cancel";
  }
  return "refund";
}

// ---- how each provider keeps an operation's key ------------------------------------------------
// Stripe: the stored answer, Idempotent-Replayed, keys pruned after 24 h (docs.stripe.com
//   /api/idempotent_requests); one capture per PaymentIntent, the rest released
//   (/api/payment_intents/capture: amount_to_capture).
// Adyen: the stored answer, the key kept at least 7 days (docs.adyen.com
//   /development-resources/api-idempotency); 201 "received", the outcome only by notification
//   (CheckoutService-v72.json, Webhooks-v1.json). Multiple partial captures: an account setting
//   at Adyen; the simulator's account has it on (sim choice).
// PayPal: "the latest status of the previous request", Payments v2 keys kept 45 days
//   (developer.paypal.com/api/rest/reference/idempotency/); final_capture false by default
//   leaves the authorization open (payments_payment_v2.json).
// Square: the first answer again; retention not published, kept for good here (n.d.);
//   CompletePayment takes the whole amount.
// Checkout.com: only 2xx answers are cached, 24 h (checkout.com/docs/payments/manage-payments
//   /idempotency); capture_type NonFinal leaves the rest capturable (capture-a-payment).
// Mollie: the stored answer with Idempotent-Replayed, for 1 hour (mollie/api-documentation
//   api-idempotency.rst, "change to a 1-hour window"); one capture (sim choice).
// WeChat Pay: out_refund_no is the merchant's own number, kept for good ([WX1]: retry a failed
//   refund with the same number).
// Alipay: out_request_no per trade: the same number refunds once, a repeat answers
//   fund_change N ([AL1][AL2], community copies).
const OpRules& op_rules(const Profile& p) {
  static const OpRules kStripe{OpReplay::stored, false, true, 24 * 3600, false, false};
  static const OpRules kAdyen{OpReplay::stored, false, false, 7 * 24 * 3600, true, true};
  static const OpRules kPaypal{OpReplay::current_state, false, false, 45 * 24 * 3600, true, false};
  static const OpRules kSquare{OpReplay::stored, false, false, 0, false, false};
  static const OpRules kCheckout{OpReplay::stored, true, false, 24 * 3600, true, false};
  static const OpRules kMollie{OpReplay::stored, false, true, 3600, false, false};
  static const OpRules kWechat{OpReplay::business_key, false, false, 0, false, false};
  static const OpRules kAlipay{OpReplay::business_key, false, false, 0, false, false};
  switch (p.id) {
    case ProfileId::stripe: return kStripe;
    case ProfileId::adyen: return kAdyen;
    case ProfileId::paypal: return kPaypal;
    case ProfileId::square: return kSquare;
    case ProfileId::checkout_com: return kCheckout;
    case ProfileId::mollie: return kMollie;
    case ProfileId::wechatpay_v3: return kWechat;
    case ProfileId::alipay: return kAlipay;
  }
  return kStripe;
}

// ---- the endpoints -----------------------------------------------------------------------------

bool route_operation(const Profile& p, std::string_view method, std::string_view path, OpTarget* out) {
  const bool post = method == "POST";
  const bool get = method == "GET";
  const std::vector<std::string> s = segments(path);
  const std::size_t n = s.size();
  auto set = [&](OpKind k, bool lookup, OpTarget::Names names, std::string id, std::string sub = {}) {
    out->kind = k;
    out->lookup = lookup;
    out->names = names;
    out->id = std::move(id);
    out->sub = std::move(sub);
    return true;
  };
  using N = OpTarget::Names;
  switch (p.id) {
    case ProfileId::stripe:
      // /v1/payment_intents/{id}/capture|cancel, /v1/refunds, /v1/refunds/{id}
      if (post && n == 4 && s[0] == "v1" && s[1] == "payment_intents" && !s[2].empty()) {
        if (s[3] == "capture") return set(OpKind::capture, false, N::payment, s[2]);
        if (s[3] == "cancel") return set(OpKind::cancel, false, N::payment, s[2]);
      }
      if (post && n == 2 && s[0] == "v1" && s[1] == "refunds") return set(OpKind::refund, false, N::payment, "");
      if (get && n == 3 && s[0] == "v1" && s[1] == "refunds" && !s[2].empty()) return set(OpKind::refund, true, N::refund, s[2]);
      return false;
    case ProfileId::adyen:
      // /v{N}/payments/{paymentPspReference}/captures|refunds|cancels
      if (post && n == 4 && adyen_version(s[0]) && s[1] == "payments" && !s[2].empty()) {
        if (s[3] == "captures") return set(OpKind::capture, false, N::payment, s[2]);
        if (s[3] == "refunds") return set(OpKind::refund, false, N::payment, s[2]);
        if (s[3] == "cancels") return set(OpKind::cancel, false, N::payment, s[2]);
      }
      return false;
    case ProfileId::paypal:
      if (post && n == 5 && s[0] == "v2" && s[1] == "checkout" && s[2] == "orders" && s[4] == "capture") {
        return set(OpKind::capture, false, N::order, s[3]);
      }
      if (n >= 4 && s[0] == "v2" && s[1] == "payments") {
        if (post && n == 5 && s[2] == "authorizations" && s[4] == "capture") return set(OpKind::capture, false, N::authorization, s[3]);
        if (post && n == 5 && s[2] == "authorizations" && s[4] == "void") return set(OpKind::cancel, false, N::authorization, s[3]);
        if (post && n == 5 && s[2] == "captures" && s[4] == "refund") return set(OpKind::refund, false, N::capture, s[3]);
        if (get && n == 4 && s[2] == "captures") return set(OpKind::capture, true, N::capture, s[3]);
        if (get && n == 4 && s[2] == "refunds") return set(OpKind::refund, true, N::refund, s[3]);
        if (get && n == 4 && s[2] == "authorizations") return set(OpKind::cancel, true, N::authorization, s[3]);
      }
      return false;
    case ProfileId::square:
      if (post && n == 4 && s[0] == "v2" && s[1] == "payments" && !s[2].empty()) {
        if (s[3] == "complete") return set(OpKind::capture, false, N::payment, s[2]);
        if (s[3] == "cancel") return set(OpKind::cancel, false, N::payment, s[2]);
      }
      if (post && n == 2 && s[0] == "v2" && s[1] == "refunds") return set(OpKind::refund, false, N::payment, "");
      if (get && n == 3 && s[0] == "v2" && s[1] == "refunds" && !s[2].empty()) return set(OpKind::refund, true, N::refund, s[2]);
      return false;
    case ProfileId::checkout_com:
      if (n == 3 && s[0] == "payments" && !s[1].empty()) {
        if (post && s[2] == "captures") return set(OpKind::capture, false, N::payment, s[1]);
        if (post && s[2] == "refunds") return set(OpKind::refund, false, N::payment, s[1]);
        if (post && s[2] == "voids") return set(OpKind::cancel, false, N::payment, s[1]);
        if (get && s[2] == "actions") return set(OpKind::capture, true, N::actions, s[1]);
      }
      return false;
    case ProfileId::mollie:
      if (n >= 3 && s[0] == "v2" && s[1] == "payments" && !s[2].empty()) {
        // DELETE cancels a payment still open; release-authorization lets go of a held one
        // (mollie/openapi specs.yaml cancel-payment and release-authorization, as Mollie's
        // generated SDKs document them).
        if (method == "DELETE" && n == 3) return set(OpKind::cancel, false, N::payment, s[2]);
        if (post && n == 4 && s[3] == "release-authorization") return set(OpKind::cancel, false, N::authorization, s[2]);
        if (post && n == 4 && s[3] == "refunds") return set(OpKind::refund, false, N::payment, s[2]);
        if (post && n == 4 && s[3] == "captures") return set(OpKind::capture, false, N::payment, s[2]);
        if (get && n == 5 && s[3] == "refunds") return set(OpKind::refund, true, N::refund, s[2], s[4]);
        if (get && n == 5 && s[3] == "captures") return set(OpKind::capture, true, N::capture, s[2], s[4]);
      }
      return false;
    case ProfileId::wechatpay_v3:
      if (n >= 4 && s[0] == "v3" && s[1] == "refund" && s[2] == "domestic" && s[3] == "refunds") {
        if (post && n == 4) return set(OpKind::refund, false, N::payment, "");
        if (get && n == 5 && !s[4].empty()) return set(OpKind::refund, true, N::refund, s[4]);
      }
      if (post && n == 6 && s[0] == "v3" && s[1] == "pay" && s[2] == "transactions" && s[3] == "out-trade-no" &&
          !s[4].empty() && s[5] == "close") {
        return set(OpKind::cancel, false, N::payment, s[4]);
      }
      return false;
    case ProfileId::alipay:
      return false;  // gateway methods: gateway_operation
  }
  return false;
}

bool gateway_operation(std::string_view method, OpTarget* out) {
  out->id.clear();
  out->sub.clear();
  out->names = OpTarget::Names::payment;
  out->lookup = false;
  if (method == "alipay.trade.refund") out->kind = OpKind::refund;
  else if (method == "alipay.trade.fastpay.refund.query") {
    out->kind = OpKind::refund;
    out->lookup = true;
    out->names = OpTarget::Names::refund;
  } else if (method == "alipay.trade.cancel" || method == "alipay.trade.close") out->kind = OpKind::cancel;
  else return false;
  out->method.assign(method);
  return true;
}

bool is_gateway_operation(std::string_view method) {
  OpTarget t;
  return gateway_operation(method, &t);
}

std::string gateway_member(std::string_view method) {
  std::string m(method);
  for (char& c : m)
    if (c == '.') c = '_';
  return m + "_response";
}

// ---- ids ---------------------------------------------------------------------------------------
// One counter numbers payments and operations, so no two ids share a number. Shapes: Stripe
// re_ (a Refund); Adyen 16 characters (the sim's MOD and 13 digits: a modification's own
// pspReference); PayPal 17 upper-case characters (CAP/REF and 14 digits, as the sim's order ids);
// Square's refund ids are opaque (sim: rf_); Checkout.com act_ (its action ids start so);
// Mollie re_ and cpt_ (its refund and capture ids); WeChat Pay's refund_id digits (50 and 27
// digits, sim shape).
namespace {
IdShape op_shape(const Profile& p, OpKind kind) {
  switch (p.id) {
    case ProfileId::stripe: return {"re_"};
    case ProfileId::adyen: return {"MOD", 13};
    case ProfileId::paypal: return kind == OpKind::capture ? IdShape{"CAP", 14} : IdShape{"REF", 14};
    case ProfileId::square: return {"rf_"};
    case ProfileId::checkout_com: return {"act_"};
    case ProfileId::mollie: return kind == OpKind::capture ? IdShape{"cpt_"} : IdShape{"re_"};
    case ProfileId::wechatpay_v3: return {"50", 27};
    case ProfileId::alipay: return {"2024", 24};
  }
  return {"op_"};
}
}  // namespace

std::string operation_id(const Profile& p, OpKind kind, uint64_t number) {
  return format_id(op_shape(p, kind), number);
}

std::string operation_truth_id(const Profile& p, const OperationRecord& r, uint64_t payment) {
  // Where the provider gives an operation no object of its own (Stripe's capture and cancel
  // answer the PaymentIntent, Square's and Mollie's the payment, PayPal's void the
  // authorization, WeChat Pay's and Alipay's close the trade), the payment's id.
  bool own = true;
  switch (p.id) {
    case ProfileId::stripe:
    case ProfileId::square:
    case ProfileId::mollie: own = r.kind == OpKind::refund || (p.id == ProfileId::mollie && r.kind == OpKind::capture); break;
    case ProfileId::paypal:
      if (r.kind == OpKind::cancel) return paypal_authorization_id(payment);
      break;
    case ProfileId::wechatpay_v3:
    case ProfileId::alipay: own = false; break;
    case ProfileId::adyen:
    case ProfileId::checkout_com: break;
  }
  // WeChat Pay's refunds have a refund_id; Alipay's refunds are named by out_request_no only.
  if (p.id == ProfileId::wechatpay_v3 && r.kind == OpKind::refund) own = true;
  return own ? operation_id(p, r.kind, r.number) : format_id(p.payment_id, payment);
}

bool parse_operation_id(const Profile& p, OpKind kind, std::string_view id, uint64_t* number) {
  return parse_id(op_shape(p, kind), id, number);
}

// ---- the requests ------------------------------------------------------------------------------

bool parse_operation(const Profile& p, const OpTarget& t, std::string_view body, bool has_header_key,
                     std::string_view header_key, OpRequest* out, Reply& refusal) {
  out->target = t;
  out->id = t.id;
  out->fingerprint.assign(body);
  // Header profiles: the key header, when present (PayPal's void too: its reference page and
  // official SDKs send PayPal-Request-Id there, though the 2024 spec did not list it); Square's
  // complete and cancel have no idempotency_key field.
  if (p.identity == Identity::header && has_header_key) {
    out->has_key = true;
    out->key.assign(header_key);
  }
  if (t.lookup && p.id != ProfileId::alipay) return true;

  if (p.id == ProfileId::stripe) {
    // Form fields, as Stripe's API and SDKs send them ([ST1][ST3]).
    std::string v;
    if (t.kind == OpKind::capture && query_param(body, "amount_to_capture", &v)) {
      int64_t a = 0;
      if (!parse_decimal(v, &a) || v.find('.') != std::string::npos || a <= 0) {
        refuse(p, Problem::bad_number, "amount_to_capture", "must be a positive integer (minor units)", refusal);
        return false;
      }
      out->has_amount = true;
      out->amount = a / 100;
    }
    if (t.kind == OpKind::refund) {
      if (!query_param(body, "payment_intent", &out->id) || out->id.empty()) {
        refuse(p, Problem::missing, "payment_intent", "is required: the PaymentIntent to refund (the simulator takes no charge= here)", refusal);
        return false;
      }
      if (query_param(body, "amount", &v)) {
        int64_t a = 0;
        if (!parse_decimal(v, &a) || v.find('.') != std::string::npos || a <= 0) {
          refuse(p, Problem::bad_number, "amount", "must be a positive integer (minor units)", refusal);
          return false;
        }
        out->has_amount = true;
        out->amount = a / 100;
      }
    }
    return true;
  }

  if (p.id == ProfileId::alipay) {
    // The gateway's body: {"biz_content":"<JSON text>"} (gate.cpp).
    CJsonPtr outer(cJSON_ParseWithLength(body.data(), body.size()));
    const cJSON* biz = outer ? cJSON_GetObjectItemCaseSensitive(outer.get(), "biz_content") : nullptr;
    CJsonPtr root(cJSON_IsString(biz) && biz->valuestring ? cJSON_Parse(biz->valuestring) : nullptr);
    if (!root || !cJSON_IsObject(root.get())) {
      refuse(p, Problem::bad_value, "biz_content", "must be the JSON text of an object", refusal);
      return false;
    }
    out->fingerprint.assign(biz->valuestring);
    if (!text(root.get(), "out_trade_no", &out->id)) {
      refuse(p, Problem::missing, "biz_content.out_trade_no", "is required: the trade the call is about", refusal);
      return false;
    }
    std::string no;
    if (t.kind == OpKind::refund) {
      // out_request_no names a refund of the trade; without it the trade's own number does, and
      // only a full refund is taken ([AL2], community copy; [AL3] for the query's default).
      out->has_key = true;
      out->key = text(root.get(), "out_request_no", &no) ? no : out->id;
      out->request_no = !no.empty();
      if (!t.lookup) {
        if (!major_units(root.get(), "refund_amount", &out->amount)) {
          refuse(p, Problem::missing, "biz_content.refund_amount", "is required: the amount to refund, such as \"10.00\"", refusal);
          return false;
        }
        out->has_amount = true;
      }
    }
    return true;
  }

  CJsonPtr root(body.empty() ? cJSON_CreateObject() : cJSON_ParseWithLength(body.data(), body.size()));
  if (!root || !cJSON_IsObject(root.get())) {
    refuse(p, Problem::unreadable, "", "the body is not a JSON object", refusal);
    return false;
  }
  const cJSON* r = root.get();
  switch (p.id) {
    case ProfileId::adyen:
      // merchantAccount is required of all three, amount of captures and refunds
      // (CheckoutService-v72.json @aa014f0 PaymentCaptureRequest, PaymentRefundRequest,
      // PaymentCancelRequest); `reference` is the merchant's own for the modification.
      if (!text(r, "merchantAccount", &out->currency)) {
        refuse(p, at(r, "merchantAccount") ? Problem::not_string : Problem::missing, "merchantAccount",
               "is required: the merchant account the payment was made under", refusal);
        return false;
      }
      out->currency.clear();
      text(r, "reference", &out->reference);
      if (t.kind != OpKind::cancel) {
        if (!minor_units(r, "amount.value", &out->amount)) {
          refuse(p, at(r, "amount.value") ? Problem::bad_number : Problem::missing, "amount.value",
                 "is required: the amount in minor units", refusal);
          return false;
        }
        out->has_amount = true;
        text(r, "amount.currency", &out->currency);
      }
      return true;
    case ProfileId::paypal: {
      // amount optional: without it the whole rest (payments_payment_v2.json); final_capture
      // defaults to false.
      if (at(r, "amount.value")) {
        if (!major_units(r, "amount.value", &out->amount)) {
          refuse(p, Problem::bad_number, "amount.value", "must be a positive decimal with at most two places", refusal);
          return false;
        }
        out->has_amount = true;
        text(r, "amount.currency_code", &out->currency);
      }
      out->final_capture = cJSON_IsTrue(at(r, "final_capture"));
      return true;
    }
    case ProfileId::square:
      if (t.kind != OpKind::refund) return true;
      // RefundPayment: idempotency_key, amount_money and payment_id are required ([SQ1] api.json).
      if (!text(r, "idempotency_key", &out->key)) {
        refuse(p, Problem::missing, "idempotency_key", "is required: the idempotency key travels in the body here", refusal);
        return false;
      }
      out->has_key = true;
      if (!text(r, "payment_id", &out->id)) {
        refuse(p, Problem::missing, "payment_id", "is required: the payment to refund", refusal);
        return false;
      }
      if (!minor_units(r, "amount_money.amount", &out->amount)) {
        refuse(p, at(r, "amount_money.amount") ? Problem::bad_number : Problem::missing, "amount_money.amount",
               "is required: the amount to refund in minor units", refusal);
        return false;
      }
      out->has_amount = true;
      text(r, "amount_money.currency", &out->currency);
      return true;
    case ProfileId::checkout_com: {
      // amount optional (the rest); capture_type NonFinal keeps the authorization open ([CK2]).
      if (at(r, "amount")) {
        if (!minor_units(r, "amount", &out->amount)) {
          refuse(p, Problem::bad_number, "amount", "must be a positive whole number of minor units", refusal);
          return false;
        }
        out->has_amount = true;
      }
      std::string type;
      if (text(r, "capture_type", &type)) out->final_capture = type != "NonFinal";
      // reference: "A reference you can later use to identify this capture/refund/void request",
      // at most 50 characters (nas_spec CaptureRequest, RefundRequest, VoidRequest); the
      // action carries it in GET /payments/{id}/actions. Longer is refused as Checkout.com
      // refuses a field out of its rules: 422 request_invalid, reference_invalid.
      if (const cJSON* ref = at(r, "reference")) {
        if (!cJSON_IsString(ref)) {
          refuse(p, Problem::not_string, "reference", "must be a string", refusal);
          return false;
        }
        out->reference.assign(ref->valuestring);
        if (utf8_chars(out->reference) > kCheckoutReferenceMax) {
          refuse(p, Problem::bad_value, "reference", "must be at most 50 characters", refusal);
          return false;
        }
      }
      return true;
    }
    case ProfileId::mollie:
      if (t.kind == OpKind::cancel) return true;
      // A refund needs its amount (mollie/openapi specs.yaml create-refund); a capture's is
      // optional (the whole amount).
      if (at(r, "amount.value") || t.kind == OpKind::refund) {
        if (!major_units(r, "amount.value", &out->amount)) {
          refuse(p, at(r, "amount.value") ? Problem::bad_number : Problem::missing, "amount.value",
                 "is required: the amount as a decimal such as \"10.00\"", refusal);
          return false;
        }
        out->has_amount = true;
        text(r, "amount.currency", &out->currency);
      }
      return true;
    case ProfileId::wechatpay_v3:
      if (t.kind == OpKind::cancel) return true;  // close: the path names the trade
      // out_refund_no, out_trade_no (or transaction_id), amount.refund and amount.total
      // ([WX1]).
      if (!text(r, "out_refund_no", &out->key)) {
        refuse(p, Problem::missing, "out_refund_no", "is required: the merchant's refund number is the refund's identity", refusal);
        return false;
      }
      out->has_key = true;
      if (!text(r, "out_trade_no", &out->id)) {
        refuse(p, Problem::missing, "out_trade_no", "is required: the trade to refund", refusal);
        return false;
      }
      if (!minor_units(r, "amount.refund", &out->amount)) {
        refuse(p, at(r, "amount.refund") ? Problem::bad_number : Problem::missing, "amount.refund",
               "is required: the amount to refund in fen", refusal);
        return false;
      }
      out->has_amount = true;
      if (!minor_units(r, "amount.total", &out->total)) {
        refuse(p, at(r, "amount.total") ? Problem::bad_number : Problem::missing, "amount.total",
               "is required: the trade's total in fen", refusal);
        return false;
      }
      text(r, "amount.currency", &out->currency);
      return true;
    case ProfileId::stripe:
    case ProfileId::alipay:
      break;
  }
  return true;
}

// ---- the answers -------------------------------------------------------------------------------

namespace {

// What is left to refund of a PayPal capture (`capture` 0: the payment's own capture).
int64_t paypal_capture_left(const OpView& v, uint64_t capture, int64_t captured_amount) {
  int64_t refunded = 0;
  for (const OperationRecord& r : v.ops->ops)
    if (r.kind == OpKind::refund && r.moved && r.parent == capture) refunded += r.amount;
  return captured_amount - refunded;
}

void stripe_intent(const OpView& v, std::string& out) {
  const PaymentView& p = v.payment;
  out.append(R"({"id":)").append(json(format_id(v.profile->payment_id, p.number)));
  out.append(R"(,"object":"payment_intent","amount":)").append(std::to_string(p.amount));
  const int64_t capturable = p.money == Money::authorized ? p.amount - v.ops->captured : 0;
  out.append(R"(,"amount_capturable":)").append(std::to_string(capturable));
  out.append(R"(,"amount_received":)").append(std::to_string(v.ops->captured));
  out.append(R"(,"currency":)").append(json(p.currency));
  out.append(R"(,"latest_charge":)");
  out.append(v.ops->captured ? json(format_id(v.profile->charge_id, p.number)) : "null");
  // livemode is required of a payment_intent in Stripe's spec3.json, as on the create's answer.
  out.append(R"(,"livemode":false,"metadata":{"order_id":)").append(json(p.order_id)).append("}");
  out.append(R"(,"status":)").append(json(stripe_status(p)));
  if (p.money == Money::failed) out.append(R"(,"cancellation_reason":"requested_by_customer")");
  out.push_back('}');
}

void paypal_money(std::string& out, int64_t minor, std::string_view currency) {
  out.append(R"({"currency_code":)").append(json(upper(currency))).append(R"(,"value":")").append(major(minor)).append("\"}");
}

void square_payment(const OpView& v, std::string& out) {
  const PaymentView& p = v.payment;
  const char* status = p.money == Money::paid      ? "COMPLETED"
                       : p.money == Money::authorized ? "APPROVED"
                       : p.money == Money::failed     ? (p.was_authorized ? "CANCELED" : "FAILED")
                                                      : "PENDING";
  out.append(R"({"payment":{"id":)").append(json(format_id(v.profile->payment_id, p.number)));
  out.append(R"(,"status":")").append(status).append(R"(","amount_money":{"amount":)").append(std::to_string(p.amount));
  out.append(R"(,"currency":)").append(json(upper(p.currency))).append("}");
  out.append(R"(,"refunded_money":{"amount":)").append(std::to_string(v.ops->refunded));
  out.append(R"(,"currency":)").append(json(upper(p.currency))).append("}");
  out.append(R"(,"reference_id":)").append(json(p.order_id)).append("}}");
}

std::string mollie_payment_status(const PaymentView& p) {
  switch (p.money) {
    case Money::awaiting_customer: return "open";
    case Money::pending: return "pending";
    case Money::authorized: return "authorized";
    case Money::paid: return "paid";
    case Money::failed: return "canceled";
  }
  return "open";
}

}  // namespace

// https://docs.stripe.com/api/refunds/object (required there: id, object, amount, created,
// currency; spec3.json "refund"). failure_reason is one of the values the spec lists.
void format_stripe_refund(const Profile& p, uint64_t number, uint64_t payment, int64_t amount,
                          std::string_view currency, int64_t created_s, std::string_view status, std::string& out) {
  out.append(R"({"id":)").append(json(operation_id(p, OpKind::refund, number)));
  out.append(R"(,"object":"refund","amount":)").append(std::to_string(amount));
  out.append(R"(,"charge":)").append(json(format_id(p.charge_id, payment)));
  out.append(R"(,"created":)").append(std::to_string(created_s));
  out.append(R"(,"currency":)").append(json(currency));
  if (status == "failed") out.append(R"(,"failure_reason":"declined")");
  out.append(R"(,"metadata":{},"payment_intent":)").append(json(format_id(p.payment_id, payment)));
  out.append(R"(,"status":)").append(json(status)).append("}");
}

std::string_view stripe_refund_status(const OperationRecord& op, bool lookup) {
  if (op.moved) return "succeeded";
  return lookup ? "failed" : "pending";
}

void format_operation(const OpView& v, Reply& out) {
  const Profile& p = *v.profile;
  const PaymentView& pay = v.payment;
  const OperationRecord* op = v.op;
  const std::string pid = format_id(p.payment_id, pay.number);
  std::string& b = out.body;
  b.clear();
  out.status = 200;
  switch (p.id) {
    case ProfileId::stripe:
      if (op && op->kind == OpKind::refund) {
        // A Refund object: succeeded at once in the simulator, unless it fails later (then the
        // answer says pending and its lookup, once decided, failed).
        format_stripe_refund(p, op->number, pay.number, op->amount, pay.currency, op->at_ms / 1000,
                             stripe_refund_status(*op, v.lookup), b);
      } else {
        stripe_intent(v, b);  // capture and cancel answer the PaymentIntent ([ST1][ST2])
      }
      return;
    case ProfileId::adyen: {
      // 201 with status "received": the request was taken, the outcome comes by notification
      // (CheckoutService-v72.json, PaymentCaptureResponse and the others).
      out.status = 201;
      b.append(R"({"merchantAccount":"PayretrySimECOM","paymentPspReference":)").append(json(pid));
      b.append(R"(,"pspReference":)").append(json(op ? operation_id(p, op->kind, op->number) : pid));
      if (!v.reference.empty()) b.append(R"(,"reference":)").append(json(v.reference));
      b.append(R"(,"status":"received")");
      if (op && op->kind != OpKind::cancel) {
        b.append(R"(,"amount":{"currency":)").append(json(pay.currency)).append(R"(,"value":)");
        b.append(std::to_string(op->amount)).append("}");
      }
      b.push_back('}');
      return;
    }
    case ProfileId::paypal: {
      // Capture, refund and authorization objects of payments_payment_v2.json; 201 when made,
      // 200 for a replay or a lookup (the latest status).
      out.status = v.lookup || v.replayed ? 200 : 201;
      if (!op || op->kind == OpKind::cancel) {
        // An authorization (its void answers 204 with no body).
        if (op && !v.lookup) {
          out.status = 204;
          return;
        }
        const char* status = pay.money == Money::failed ? "VOIDED"
                             : v.ops->captured == 0     ? "CREATED"
                             : v.ops->capture_closed    ? "CAPTURED"
                                                        : "PARTIALLY_CAPTURED";
        b.append(R"({"id":)").append(json(paypal_authorization_id(pay.number)));
        b.append(R"(,"status":")").append(status).append(R"(","amount":)");
        paypal_money(b, pay.amount, pay.currency);
        b.append(R"(,"custom_id":)").append(json(pay.order_id)).append("}");
        return;
      }
      if (op->kind == OpKind::capture) {
        const int64_t left = paypal_capture_left(v, op->number, op->amount);
        const char* status = left == op->amount ? "COMPLETED" : left == 0 ? "REFUNDED" : "PARTIALLY_REFUNDED";
        b.append(R"({"id":)").append(json(operation_id(p, OpKind::capture, op->number)));
        b.append(R"(,"status":")").append(status).append(R"(","amount":)");
        paypal_money(b, op->amount, pay.currency);
        b.append(R"(,"final_capture":)").append(v.ops->capture_closed ? "true" : "false");
        b.append(R"(,"custom_id":)").append(json(pay.order_id)).append("}");
        return;
      }
      b.append(R"({"id":)").append(json(operation_id(p, OpKind::refund, op->number)));
      b.append(R"(,"status":"COMPLETED","amount":)");
      paypal_money(b, op->amount, pay.currency);
      b.append(R"(,"custom_id":)").append(json(pay.order_id)).append("}");
      return;
    }
    case ProfileId::square:
      if (op && op->kind == OpKind::refund) {
        // A PaymentRefund ([SQ1]): PENDING when made, COMPLETED when looked up later.
        b.append(R"({"refund":{"id":)").append(json(operation_id(p, OpKind::refund, op->number)));
        b.append(R"(,"status":")").append(v.lookup ? "COMPLETED" : "PENDING");
        b.append(R"(","amount_money":{"amount":)").append(std::to_string(op->amount));
        b.append(R"(,"currency":)").append(json(upper(pay.currency))).append("}");
        b.append(R"(,"payment_id":)").append(json(pid)).append("}}");
      } else {
        square_payment(v, b);  // complete and cancel answer the payment
      }
      return;
    case ProfileId::checkout_com:
      // 202 Accepted with the action's id ([CK1] payments_client.py; [CK2]).
      out.status = 202;
      b.append(R"({"action_id":)").append(json(op ? operation_id(p, op->kind, op->number) : std::string()));
      // The request's reference echoed ("Your reference for the capture request"); none sent,
      // none echoed (the spec's 202 does not require the member).
      if (!v.reference.empty()) b.append(R"(,"reference":)").append(json(v.reference));
      b.append(R"(,"_links":{"payment":{"href":"https://api.sandbox.checkout.com/payments/)").append(pid).append("\"}}}");
      return;
    case ProfileId::mollie:
      if (op && op->kind != OpKind::cancel) {
        // Refund and capture objects ([MO1] specs.yaml): a refund is pending when made and
        // refunded when looked up later; a capture succeeded.
        out.status = v.lookup ? 200 : 201;
        const bool refund = op->kind == OpKind::refund;
        b.append(R"({"resource":)").append(refund ? "\"refund\"" : "\"capture\"");
        b.append(R"(,"id":)").append(json(operation_id(p, op->kind, op->number)));
        b.append(R"(,"amount":{"currency":)").append(json(upper(pay.currency)));
        b.append(R"(,"value":")").append(major(op->amount)).append("\"}");
        b.append(R"(,"status":")").append(refund ? (v.lookup ? "refunded" : "pending") : "succeeded");
        b.append(R"(","paymentId":)").append(json(pid));
        b.append(R"(,"createdAt":)").append(json(iso_utc(op->at_ms))).append("}");
      } else if (v.op && v.op->kind == OpKind::cancel && pay.was_authorized) {
        out.status = 202;  // release-authorization: accepted, no body
      } else {
        // DELETE /v2/payments/{id}: the canceled payment.
        b.append(R"({"resource":"payment","id":)").append(json(pid));
        b.append(R"(,"status":")").append(mollie_payment_status(pay));
        b.append(R"(","amount":{"currency":)").append(json(upper(pay.currency)));
        b.append(R"(,"value":")").append(major(pay.amount)).append("\"}");
        b.append(R"(,"metadata":{"order_id":)").append(json(pay.order_id)).append("}}");
      }
      return;
    case ProfileId::wechatpay_v3:
      if (op && op->kind == OpKind::refund) {
        // A refund ([WX1][WX2]): PROCESSING when accepted, SUCCESS when queried (or asked again
        // with the same out_refund_no).
        b.append(R"({"refund_id":)").append(json(operation_id(p, OpKind::refund, op->number)));
        b.append(R"(,"out_refund_no":)").append(json(op->key));
        b.append(R"(,"transaction_id":)").append(json(format_id(p.payment_id, pay.number)));
        b.append(R"(,"out_trade_no":)").append(json(pay.order_id));
        b.append(R"(,"channel":"ORIGINAL","status":")").append(v.lookup || v.replayed ? "SUCCESS" : "PROCESSING");
        b.append(R"(","create_time":)").append(json(iso_beijing(op->at_ms)));
        if (v.lookup || v.replayed) b.append(R"(,"success_time":)").append(json(iso_beijing(op->at_ms)));
        b.append(R"(,"amount":{"total":)").append(std::to_string(pay.amount));
        b.append(R"(,"refund":)").append(std::to_string(op->amount));
        b.append(R"(,"payer_total":)").append(std::to_string(pay.amount));
        b.append(R"(,"payer_refund":)").append(std::to_string(op->amount));
        b.append(R"(,"currency":)").append(json(pay.currency)).append("}}");
      } else {
        out.status = 204;  // close: 204 No Content ([WX11])
      }
      return;
    case ProfileId::alipay: {
      // HTTP 200, code 10000 ([AL1]-[AL3], [AL7]); the member is the method's.
      if (op && op->kind == OpKind::refund && v.lookup) {
        b.append(R"({"alipay_trade_fastpay_refund_query_response":{"code":"10000","msg":"Success","trade_no":)");
        b.append(json(format_id(p.payment_id, pay.number))).append(R"(,"out_trade_no":)").append(json(pay.order_id));
        b.append(R"(,"out_request_no":)").append(json(v.key)).append(R"(,"total_amount":")").append(major(pay.amount));
        b.append(R"(","refund_amount":")").append(major(op->amount)).append(R"(","refund_status":"REFUND_SUCCESS"}})");
      } else if (op && op->kind == OpKind::refund && v.method == "alipay.trade.refund") {
        b.append(R"({"alipay_trade_refund_response":{"code":"10000","msg":"Success","trade_no":)");
        b.append(json(format_id(p.payment_id, pay.number))).append(R"(,"out_trade_no":)").append(json(pay.order_id));
        // fund_change: Y when this call moved money, N when the refund was made before.
        b.append(R"(,"buyer_logon_id":"159****5620","fund_change":")").append(v.replayed ? "N" : "Y");
        b.append(R"(","refund_fee":")").append(major(v.ops->refunded)).append(R"("}})");
      } else if (v.method == "alipay.trade.close") {
        b.append(R"({"alipay_trade_close_response":{"code":"10000","msg":"Success","trade_no":)");
        b.append(json(format_id(p.payment_id, pay.number))).append(R"(,"out_trade_no":)").append(json(pay.order_id)).append("}}");
      } else {
        // alipay.trade.cancel: a paid trade is refunded, an unpaid one closed ([AL7]).
        b.append(R"({"alipay_trade_cancel_response":{"code":"10000","msg":"Success","trade_no":)");
        b.append(json(format_id(p.payment_id, pay.number))).append(R"(,"out_trade_no":)").append(json(pay.order_id));
        b.append(R"(,"retry_flag":"N","action":")").append(v.ops->refunded ? "refund" : "close").append("\"}}");
      }
      return;
    }
  }
}

void format_operation_error(const Profile& p, OpKind kind, OpError e, int64_t left, std::string_view currency,
                            std::string_view gateway_method, Reply& out) {
  std::string& b = out.body;
  b.clear();
  // Only Square tells a held payment's refund apart; the others refuse it as not refundable.
  if (e == OpError::held && p.id != ProfileId::square) e = OpError::not_refundable;
  const std::string left_major = major(left);
  switch (p.id) {
    case ProfileId::stripe: {
      // Stripe's invalid_request_error: amount_too_large for a refund beyond what is left (its
      // message "Refund amount ($X) is greater than unrefunded amount on charge ($Y)", seen in
      // client issue threads), payment_intent_unexpected_state for a capture or cancel in the
      // wrong state (Stripe's error code list).
      out.status = e == OpError::not_found ? 404 : 400;
      if (e == OpError::not_found) {
        b = R"({"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such payment_intent or refund"}})";
      } else if (e == OpError::exceeds) {
        b = std::string(R"({"error":{"type":"invalid_request_error","code":"amount_too_large","param":)") +
            (kind == OpKind::capture ? R"("amount_to_capture")" : R"("amount")") + R"(,"message":)" +
            json(kind == OpKind::capture ? "amount_to_capture is greater than the amount capturable (" + left_major + ")"
                                         : "Refund amount is greater than unrefunded amount on charge (" + left_major + ")") +
            "}}";
      } else {
        b = R"({"error":{"type":"invalid_request_error","code":"payment_intent_unexpected_state","message":)" +
            json(std::string("This PaymentIntent's state does not allow a ") + std::string(op_kind_name(kind))) + "}}";
      }
      return;
    }
    case ProfileId::adyen:
      // Only an unknown payment is refused at once; the money rules answer by notification.
      out.status = 422;
      b = R"({"status":422,"errorCode":"167","message":"Original pspReference required for this operation","errorType":"validation"})";
      return;
    case ProfileId::paypal: {
      // 422 UNPROCESSABLE_ENTITY with the issue, each from the operation's own 422 list in
      // paypal-rest-api-specifications @ec4d8f3 (payments_payment_v2.json: captures.refund-422
      // REFUND_AMOUNT_EXCEEDED, CAPTURE_FULLY_REFUNDED, REFUND_NOT_ALLOWED; the capture's
      // MAX_CAPTURE_AMOUNT_EXCEEDED, AUTHORIZATION_ALREADY_CAPTURED, AUTHORIZATION_VOIDED;
      // authorizations.void-422 PREVIOUSLY_CAPTURED, PREVIOUSLY_VOIDED; checkout_orders_v2.json
      // ORDER_ALREADY_CAPTURED, ACTION_DOES_NOT_MATCH_INTENT).
      if (e == OpError::not_found) {
        set_canned(out, p.no_route);
        return;
      }
      const char* issue = "UNPROCESSABLE_ENTITY";
      switch (e) {
        case OpError::exceeds: issue = kind == OpKind::refund ? "REFUND_AMOUNT_EXCEEDED" : "MAX_CAPTURE_AMOUNT_EXCEEDED"; break;
        case OpError::fully_refunded: issue = "CAPTURE_FULLY_REFUNDED"; break;
        case OpError::not_capturable: issue = "AUTHORIZATION_ALREADY_CAPTURED"; break;
        case OpError::order_captured: issue = "ORDER_ALREADY_CAPTURED"; break;
        case OpError::voided: issue = kind == OpKind::cancel ? "PREVIOUSLY_VOIDED" : "AUTHORIZATION_VOIDED"; break;
        case OpError::not_cancelable: issue = "PREVIOUSLY_CAPTURED"; break;
        case OpError::not_refundable: issue = "REFUND_NOT_ALLOWED"; break;
        case OpError::intent_mismatch: issue = "ACTION_DOES_NOT_MATCH_INTENT"; break;
        default: break;
      }
      out.status = 422;
      b = std::string(R"({"name":"UNPROCESSABLE_ENTITY","message":"The requested action could not be performed, semantically incorrect, or failed business validation.","details":[{"issue":")") +
          issue + R"(","description":)" +
          json(e == OpError::exceeds ? "Only " + left_major + " " + upper(currency) + " is left." : std::string("See the issue.")) + "}]}";
      return;
    }
    case ProfileId::square: {
      // RefundPayment's own errors (square/connect-api-specification api.json @5733f66,
      // x-endpoint-errors of POST /v2/refunds, category REFUND_ERROR): REFUND_AMOUNT_INVALID
      // "exceeds the amount available to refund", REFUND_ERROR_PAYMENT_NEEDS_COMPLETION for a
      // payment still APPROVED, PAYMENT_NOT_REFUNDABLE otherwise. A complete or cancel in the
      // wrong state: BAD_REQUEST (sim choice; the spec lists only VERSION_MISMATCH there).
      if (e == OpError::not_found) {
        set_canned(out, p.no_route);
        return;
      }
      out.status = 400;
      const bool refund = kind == OpKind::refund;
      const char* code = e == OpError::exceeds                     ? "REFUND_AMOUNT_INVALID"
                         : e == OpError::held                      ? "REFUND_ERROR_PAYMENT_NEEDS_COMPLETION"
                         : refund                                  ? "PAYMENT_NOT_REFUNDABLE"
                                                                   : "BAD_REQUEST";
      b = std::string(R"({"errors":[{"category":")") + (refund ? "REFUND_ERROR" : "INVALID_REQUEST_ERROR") +
          R"(","code":")" + code + R"(","detail":)" +
          json(e == OpError::exceeds ? "Only " + std::to_string(left) + " can be refunded"
                                     : "The payment's status does not allow this") +
          (kind == OpKind::refund && e == OpError::exceeds ? R"(,"field":"amount_money.amount")" : "") + "}]}";
      return;
    }
    case ProfileId::checkout_com:
      // checkout-api-reference @2fc946c (nas_spec/paths/payments@{id}@captures|refunds|voids):
      // 422 ValidationError for invalid data, 403 "Capture not allowed" / "Refund not allowed" /
      // "Void not allowed", 404 payment not found. The 422's code for a refund beyond the
      // balance, refund_amount_exceeds_balance, is what hyperswitch's Checkout connector test
      // reads; capture_value_greater_than_authorized and the 403's body are sim choices.
      if (e == OpError::not_found) {
        set_canned(out, p.no_route);
        return;
      }
      if (e == OpError::exceeds) {
        out.status = 422;
        b = std::string(R"({"error_type":"request_invalid","error_codes":[")") +
            (kind == OpKind::refund ? "refund_amount_exceeds_balance" : "capture_value_greater_than_authorized") + "\"]}";
      } else {
        out.status = 403;
        b = std::string(R"({"error_type":"action_not_allowed","error_codes":[")") + std::string(op_kind_name(kind)) + "_not_allowed\"]}";
      }
      return;
    case ProfileId::mollie:
      // 422 problem+json: "The specified amount cannot be refunded" (the answer a Mollie client
      // issue quotes, mollie-api-ruby#143); the other details are sim wording.
      if (e == OpError::not_found) {
        set_canned(out, p.no_route);
        return;
      }
      out.status = 422;
      b = std::string(R"({"status":422,"title":"Unprocessable Entity","detail":)") +
          json(e == OpError::exceeds ? (kind == OpKind::refund ? "The specified amount cannot be refunded"
                                                              : "The capture amount is higher than the authorized amount")
               : kind == OpKind::cancel ? "The payment cannot be canceled"
               : kind == OpKind::refund ? "The payment cannot be refunded"
                                        : "The payment cannot be captured") +
          (e == OpError::exceeds ? R"(,"field":"amount")" : "") + "}";
      return;
    case ProfileId::wechatpay_v3:
      // v3 error bodies {"code","message"}: INVALID_REQUEST "the parameters are well formed but
      // break a business rule" (the refund API's error table), ORDERPAID for closing a paid
      // trade, RESOURCE_NOT_EXISTS for an unknown one; the messages are sim wording (the v2 API
      // said "refund_fee大于可退金额", community copy).
      if (e == OpError::not_found) {
        out.status = 404;
        b = R"({"code":"RESOURCE_NOT_EXISTS","message":"订单不存在"})";
      } else if (kind == OpKind::cancel) {
        out.status = 400;
        b = R"({"code":"ORDERPAID","message":"该订单已支付"})";
      } else {
        out.status = 400;
        b = std::string(R"({"code":"INVALID_REQUEST","message":)") +
            json(e == OpError::exceeds          ? "申请退款金额超过订单可退金额"
                 : e == OpError::total_mismatch ? "订单金额与支付金额不一致"
                                                : "订单状态不允许退款") +
            "}";
      }
      return;
    case ProfileId::alipay: {
      // 40004 with the sub_code: ACQ.REFUND_AMT_NOT_EQUAL_TOTAL 退款金额超限 (SDK error tables,
      // community copies), ACQ.TRADE_NOT_EXIST, ACQ.TRADE_STATUS_ERROR.
      out.status = 200;
      const char* sub = "ACQ.TRADE_STATUS_ERROR";
      const char* msg = "交易状态不合法";
      if (e == OpError::not_found) {
        sub = "ACQ.TRADE_NOT_EXIST";
        msg = "交易不存在";
      } else if (e == OpError::exceeds || e == OpError::partial_without_request_no) {
        sub = "ACQ.REFUND_AMT_NOT_EQUAL_TOTAL";
        msg = "退款金额超限";
      }
      b = "{" + json(gateway_member(gateway_method)) + R"(:{"code":"40004","msg":"Business Failed","sub_code":")" + sub +
          R"(","sub_msg":)" + json(msg) + "}}";
      return;
    }
  }
}

void format_operation_mismatch(const Profile& p, std::string_view gateway_method, Reply& out) {
  switch (p.id) {
    case ProfileId::wechatpay_v3:
      // The same out_refund_no with another amount ([WX12], community copy of the v2 answer).
      out.status = 400;
      out.body = R"({"code":"INVALID_REQUEST","message":"退款金额与之前请求不一致，请核实后再试"})";
      return;
    case ProfileId::alipay:
      // n.d. for refunds: the create's ACQ.CONTEXT_INCONSISTENT (sim choice).
      out.status = 200;
      out.body = "{" + json(gateway_member(gateway_method)) +
                 R"(:{"code":"40004","msg":"Business Failed","sub_code":"ACQ.CONTEXT_INCONSISTENT","sub_msg":"交易信息被篡改"}})";
      return;
    default:
      set_canned(out, p.mismatch);
      return;
  }
}

void format_operation_in_use(const Profile& p, std::string_view gateway_method, Reply& out) {
  switch (p.id) {
    case ProfileId::wechatpay_v3:
      out.status = 429;  // FREQUENCY_LIMITED (community copies)
      out.body = R"({"code":"FREQUENCY_LIMITED","message":"频率超限"})";
      return;
    case ProfileId::alipay:
      out.status = 200;  // n.d.: the gateway's "try again" (sim choice)
      out.body = "{" + json(gateway_member(gateway_method)) +
                 R"(:{"code":"20000","msg":"Service Currently Unavailable","sub_code":"ACQ.SYSTEM_ERROR","sub_msg":"系统异常"}})";
      return;
    default:
      set_canned(out, p.in_use);
      out.transient = p.transient_503;
      return;
  }
}

void format_actions(const Profile& p, const PaymentView& payment, const PaymentOps& ops, Reply& out) {
  // GET /payments/{id}/actions: newest first, the authorization last ([CK1]).
  out.status = 200;
  std::string& b = out.body;
  b = "[";
  for (auto it = ops.ops.rbegin(); it != ops.ops.rend(); ++it) {
    const char* type = it->kind == OpKind::capture ? "Capture" : it->kind == OpKind::refund ? "Refund" : "Void";
    b.append(R"({"id":)").append(json(operation_id(p, it->kind, it->number)));
    b.append(R"(,"type":")").append(type).append(R"(","processed_on":)").append(json(iso_utc(it->at_ms)));
    b.append(R"(,"amount":)").append(std::to_string(it->amount));
    if (!it->reference.empty()) b.append(R"(,"reference":)").append(json(it->reference));
    // One declined after its 202 is listed not approved, with the code Checkout.com's
    // payment_*_declined examples show (see webhook_notice.cpp).
    b.append(it->moved ? R"(,"approved":true,"response_code":"10000","response_summary":"Approved"},)"
                       : R"(,"approved":false,"response_code":"20006","response_summary":"Error / Invalid Request Parameters"},)");
  }
  b.append(R"({"id":)").append(json(operation_id(p, OpKind::capture, payment.number)));
  b.append(R"(,"type":"Authorization","amount":)").append(std::to_string(payment.amount));
  b.append(R"(,"approved":true,"response_code":"10000","response_summary":"Approved"}])");
}

}  // namespace payretry_sim
