// Each built-in profile's provider, as the simulation models it: identity,
// replay kind, answers, lookup and signatures, from the same provider
// documents the profiles cite (docs/profiles.md). Everything the provider
// model does differently per provider is a field here.
#include "wire.hpp"

#include <stdexcept>

namespace payretry::dst {
namespace {

AnswerShape ans(int status, std::string body, std::vector<std::pair<std::string, std::string>> headers = {}) {
  return AnswerShape{status, std::move(body), std::move(headers)};
}

// Stripe-like JSON errors (generic, stripe, mollie).
void stripe_like_errors(Wire& w) {
  w.decline = ans(402, R"({"error":{"type":"card_error","code":"card_declined"}})");
  w.error = ans(500, R"({"error":{"type":"api_error","message":"internal"}})");
  w.in_progress = ans(409, R"({"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}})");
  w.mismatch = ans(422, R"({"code":"idempotency_key_reused"})");
  w.already_paid = w.unsigned_request = w.mismatch;
}

// A lookup whose answer is {"id":..,"status":..} and whose "not found" is a 404.
void plain_lookup(Wire& w, const std::string& path, std::string not_found_body, std::string charged,
                  std::string declined) {
  w.lookup = Wire::Lookup::by_id;
  w.lookup_path = path;
  w.found = ans(200, R"({"id":"{id}","status":"{status}"})");
  w.not_found = ans(404, std::move(not_found_body));
  w.word_charged = std::move(charged);
  w.word_declined = std::move(declined);
}

// The words of each phase (Phase's order): create answer, lookup, more members.
using Words = std::array<Wire::MoneyWords, kPhases>;

}  // namespace

const char* phase_name(Phase p) {
  static const char* const names[] = {"paid", "waits", "held", "captured", "abandoned", "voided", "declined"};
  static_assert(sizeof names / sizeof names[0] == kPhases, "a name per phase");
  return names[static_cast<int>(p)];
}

Money money_of(Phase p) {
  switch (p) {
    case Phase::paid:
    case Phase::captured: return Money::captured;
    case Phase::held: return Money::held;
    case Phase::waits: return Money::nothing;
    case Phase::abandoned:
    case Phase::voided:
    case Phase::declined: return Money::failed;
  }
  return Money::nothing;
}

const std::string& Wire::lookup_word(Phase p) const {
  const std::string& w = money[static_cast<size_t>(p)].lookup;
  if (!w.empty()) return w;
  return money_of(p) == Money::failed ? word_declined : word_charged;
}

std::string fill_answer(const std::string& tmpl, const std::string& id, const std::string& ref,
                        const std::string& status, const std::string& extra) {
  std::string out;
  out.reserve(tmpl.size() + id.size() + ref.size());
  for (size_t i = 0; i < tmpl.size();) {
    if (tmpl[i] == '{') {
      if (tmpl.compare(i, 4, "{id}") == 0) {
        out += id;
        i += 4;
        continue;
      }
      if (tmpl.compare(i, 5, "{ref}") == 0) {
        out += ref;
        i += 5;
        continue;
      }
      if (tmpl.compare(i, 8, "{status}") == 0) {
        out += status;
        i += 8;
        continue;
      }
      if (tmpl.compare(i, 7, "{extra}") == 0) {
        out += fill_answer(extra, id, ref, status);
        i += 7;
        continue;
      }
    }
    out.push_back(tmpl[i++]);
  }
  return out;
}

bool Wire::is_refund_lookup(const std::string& method, const std::string& path) const {
  if (method != "GET") return false;
  switch (refunds.style) {
    case Refunds::Style::none: return false;
    case Refunds::Style::object: return path.rfind(refunds.lookup_path, 0) == 0;
    case Refunds::Style::actions: {
      const std::string bare = path.substr(0, path.find('?'));
      return bare.rfind(refunds.path, 0) == 0 && bare.size() > refunds.path.size() + refunds.lookup_path.size() &&
             bare.compare(bare.size() - refunds.lookup_path.size(), std::string::npos, refunds.lookup_path) == 0;
    }
  }
  return false;
}

bool Wire::is_lookup(const std::string& method, const std::string& path) const {
  if (is_refund_lookup(method, path)) return true;
  if (lookup != Lookup::by_id && lookup != Lookup::by_reference) return false;
  if (gateway_form) {
    // The gateway's method is a query parameter, wherever the signer put it.
    const size_t q = path.find('?');
    for (size_t at = q; at != std::string::npos && at < path.size(); at = path.find('&', at + 1)) {
      const std::string field = path.substr(at + 1, path.find('&', at + 1) - at - 1);
      if (field == "method=" + lookup_gateway_method) return true;
    }
    return false;
  }
  return method == lookup_method && path.rfind(lookup_path, 0) == 0;
}

Wire wire_for(const std::string& profile, ReplayKind undocumented) {
  Wire w;
  w.name = profile;
  w.replay_marker = "";
  if (profile == "generic") {
    // A provider payretry knows nothing about: any documented behaviour,
    // under the assumption "replay none" profiles make (hidden_uncached_errors).
    w.replay = undocumented;
    w.hidden_uncached_errors = false;
    w.replay_marker = "Idempotent-Replayed";
    w.success = ans(200, R"({"id":"{id}","status":"succeeded"})");
    stripe_like_errors(w);
  } else if (profile == "stripe") {
    w.replay = ReplayKind::all_answers;  // v1 stores every answer once execution began (St1)
    w.form_bodies = true;                // v1 takes form-encoded bodies only (St9)
    w.order_path = "metadata.order_id";  // v1 takes only its own parameters: the order goes in metadata
    w.replay_marker = "Idempotent-Replayed";
    w.should_retry_header = true;
    w.success = ans(200, R"({"id":"{id}","status":"{status}"})");
    // The PaymentIntent's statuses (St8): requires_action waits for 3-D
    // Secure, requires_capture holds (capture_method=manual), canceled ends
    // one that was abandoned or released.
    w.money = Words{{{"succeeded", "succeeded", ""},
                     {"requires_action", "requires_action", ""},
                     {"requires_capture", "requires_capture", ""},
                     {"succeeded", "succeeded", ""},
                     {"canceled", "canceled", ""},
                     {"canceled", "canceled", ""},
                     {"", "", ""}}};
    stripe_like_errors(w);
    w.mismatch = w.already_paid = w.unsigned_request = ans(400, R"({"error":{"type":"idempotency_error"}})");
    // GET /v1/payment_intents/{id} (St8). A declined PaymentIntent goes back
    // to requires_payment_method, which a new one also reads: no proof either way.
    plain_lookup(w, "/v1/payment_intents/", R"({"error":{"type":"invalid_request_error","code":"resource_missing"}})",
                 "succeeded", "requires_payment_method");
    w.found = ans(200, R"({"id":"{id}","object":"payment_intent","status":"{status}"})");
    // Refunds (St10): POST /v1/refunds with payment_intent answers the
    // Refund object, "succeeded", or "pending" and later "succeeded" or
    // "failed" (nothing moved); GET /v1/refunds/{id} reads it. Replayed
    // under the key as any answer is (all_answers: a pending refund's
    // replay still says pending). The PaymentIntent's status does not
    // change with its refunds (its charge's amount_refunded does).
    w.refunds.style = Wire::Refunds::Style::object;
    w.refunds.path = "/v1/refunds";
    w.refunds.payment_field = "payment_intent";
    w.refunds.id_prefix = "re_";
    w.refunds.lookup_path = "/v1/refunds/";
  } else if (profile == "adyen") {
    w.id_prefix = "psp_";
    // "The response to the first attempt" is replayed (Ad1); whether that
    // covers errors is not documented: any documented behaviour, as generic.
    w.replay = undocumented;
    w.hidden_uncached_errors = false;
    w.key_header = "idempotency-key";
    w.success = ans(200, R"({"pspReference":"{id}","resultCode":"{status}"})");
    // Authorised is a hold until a capture (CAPTURE notification); a
    // redirect method answers RedirectShopper and is authorised once the
    // shopper completes it (Ad4). No lookup: the rest is notified.
    w.money = Words{{{"", "", ""},
                     {"RedirectShopper", "", ""},
                     {"Authorised", "", ""},
                     {"", "", ""},
                     {"", "", ""},
                     {"", "", ""},
                     {"", "", ""}}};
    w.at_once = w.customer_pays = Phase::held;
    w.decline = ans(200, R"({"pspReference":"{id}","resultCode":"Refused"})");
    w.error = ans(500, R"({"status":500,"errorCode":"905"})");
    w.in_progress = ans(422, R"({"status":422,"errorCode":"704"})", {{"transient-error", "true"}});
    w.mismatch = w.already_paid = w.unsigned_request = ans(422, R"({"status":422,"errorCode":"704"})");
  } else if (profile == "paypal") {
    w.id_prefix = "ORD_";
    w.replay = ReplayKind::current_state;  // "returns the latest status of the previous request" (Pp1)
    w.key_header = "PayPal-Request-Id";
    w.success = ans(201, R"({"id":"{id}","status":"{status}"{extra}})");
    // The order's status says nothing moved while the payer has to act
    // (PAYER_ACTION_REQUIRED) and VOIDED when it never did; a COMPLETED
    // order carries its capture, or its authorization under intent
    // AUTHORIZE (captured or voided later), in purchase_units[0].payments.
    {
      const std::string units = R"(,"purchase_units":[{"payments":{)";
      const std::string capture = R"("captures":[{"id":"CAP_{id}","status":"COMPLETED"}])";
      auto auth = [](const std::string& status) { return "\"authorizations\":[{\"id\":\"AUT_{id}\",\"status\":\"" + status + "\"}]"; };
      w.money = Words{{{"COMPLETED", "COMPLETED", units + capture + "}}]"},
                       {"PAYER_ACTION_REQUIRED", "PAYER_ACTION_REQUIRED", ""},
                       {"COMPLETED", "COMPLETED", units + auth("CREATED") + "}}]"},
                       {"COMPLETED", "COMPLETED", units + auth("CAPTURED") + "," + capture + "}}]"},
                       {"VOIDED", "VOIDED", ""},
                       {"COMPLETED", "COMPLETED", units + auth("VOIDED") + "}}]"},
                       {"", "", ""}}};
    }
    w.decline = ans(422, R"({"name":"UNPROCESSABLE_ENTITY","details":[{"issue":"INSTRUMENT_DECLINED"}]})");
    w.error = ans(500, R"({"name":"INTERNAL_SERVER_ERROR"})");
    w.in_progress = ans(409, R"({"details":[{"issue":"PREVIOUS_REQUEST_IN_PROGRESS"}]})");
    w.mismatch = w.already_paid = w.unsigned_request = ans(422, R"({"details":[{"issue":"DUPLICATE_INVOICE_ID"}]})");
    plain_lookup(w, "/v2/checkout/orders/", R"({"name":"RESOURCE_NOT_FOUND"})", "COMPLETED", "VOIDED");
    w.found = ans(200, R"({"id":"{id}","status":"{status}"{extra}})");
  } else if (profile == "square") {
    w.id_prefix = "sq_";
    w.replay = ReplayKind::success_only;  // the first successful response is replayed (Sq1)
    w.identity = Wire::Identity::body_key;
    w.key_path = "idempotency_key";
    w.success = ans(200, R"({"payment":{"id":"{id}","status":"{status}"}})");
    // autocomplete=false leaves a card payment APPROVED (held) until it is
    // completed or canceled (Sq2); nothing waits for a customer.
    w.money = Words{{{"COMPLETED", "COMPLETED", ""},
                     {"", "", ""},
                     {"APPROVED", "APPROVED", ""},
                     {"COMPLETED", "COMPLETED", ""},
                     {"", "", ""},
                     {"CANCELED", "CANCELED", ""},
                     {"", "", ""}}};
    w.decline = ans(402, R"({"errors":[{"category":"PAYMENT_METHOD_ERROR","code":"CARD_DECLINED"}]})");
    w.error = ans(500, R"({"errors":[{"category":"API_ERROR","code":"INTERNAL_SERVER_ERROR"}]})");
    w.in_progress = ans(409, R"({"errors":[{"category":"API_ERROR","code":"CONFLICT"}]})");
    w.mismatch = w.already_paid = w.unsigned_request =
        ans(400, R"({"errors":[{"category":"INVALID_REQUEST_ERROR","code":"IDEMPOTENCY_KEY_REUSED"}]})");
    plain_lookup(w, "/v2/payments/", R"({"errors":[{"code":"NOT_FOUND"}]})", "COMPLETED", "FAILED");
    w.found = ans(200, R"({"payment":{"id":"{id}","status":"{status}"}})");
  } else if (profile == "checkout_com") {
    w.id_prefix = "pay_";
    w.replay = ReplayKind::success_only;  // only 2xx is cached (Ck1)
    w.key_header = "Cko-Idempotency-Key";
    w.success = ans(201, R"({"id":"{id}","status":"{status}","reference":"{ref}"})");
    // Captured by default, Authorized under capture=false (voided later or
    // captured), Pending while 3-D Secure waits for the customer (Expired
    // when it never comes).
    w.money = Words{{{"Captured", "Captured", ""},
                     {"Pending", "Pending", ""},
                     {"Authorized", "Authorized", ""},
                     {"Captured", "Captured", ""},
                     {"Expired", "Expired", ""},
                     {"Voided", "Voided", ""},
                     {"", "", ""}}};
    w.decline = ans(201, R"({"id":"{id}","status":"Declined","reference":"{ref}"})");
    w.error = ans(500, "{}");
    w.in_progress = ans(409, "{}");
    w.mismatch = w.already_paid = w.unsigned_request = ans(422, R"({"error_codes":["request_invalid"]})");
    // GET /payments?reference= (Ck4), newest first; half the callers set
    // the reference, half let payretry write it (lookup.reference_path).
    w.lookup = Wire::Lookup::by_reference;
    w.lookup_path = "/payments?reference=";
    w.search_path = "reference";
    w.caller_reference = Wire::CallerReference::half;
    w.found = ans(200, R"({"limit":10,"skip":0,"total_count":1,"data":[{"id":"{id}","status":"{status}","reference":"{ref}"}]})");
    w.not_found = ans(200, R"({"limit":10,"skip":0,"total_count":0,"data":[]})");
    w.word_charged = "Authorized";
    w.word_declined = "Declined";
    // Refunds (Ck6, Ck7): POST /payments/{id}/refunds answers 202 with the
    // action's id and nothing decided (only that 2xx is cached under the
    // key); GET /payments/{id}/actions lists the payment's actions newest
    // first, each with its id, type, amount, approved and response_code,
    // a refund once it is processed: approved (money refunded, the payment
    // then Partially Refunded or Refunded) or declined (nothing moved).
    w.refunds.style = Wire::Refunds::Style::actions;
    w.refunds.path = "/payments/";
    w.refunds.path_suffix = "/refunds";
    w.refunds.id_prefix = "act_";
    w.refunds.lookup_path = "/actions";
    // Each listed action shows the reference its request carried ("Your
    // reference for the action", Ck7's PaymentAction): payretry's key.
    w.refunds.reference_field = "reference";
    w.refunds.word_partly_refunded = "Partially Refunded";
    w.refunds.word_refunded = "Refunded";
  } else if (profile == "mollie") {
    w.id_prefix = "tr_";
    w.replay = ReplayKind::all_answers;  // the cached initial response, Idempotent-Replayed (Mo1)
    w.replay_marker = "Idempotent-Replayed";
    w.success = ans(201, R"({"id":"{id}","status":"{status}"})");
    // open until the customer pays at the checkout (expired when never),
    // authorized under captureMode manual (canceled when released) (Mo3).
    w.money = Words{{{"paid", "paid", ""},
                     {"open", "open", ""},
                     {"authorized", "authorized", ""},
                     {"paid", "paid", ""},
                     {"expired", "expired", ""},
                     {"canceled", "canceled", ""},
                     {"", "", ""}}};
    stripe_like_errors(w);
    plain_lookup(w, "/v2/payments/", R"({"status":404,"title":"Not Found"})", "paid", "failed");
  } else if (profile == "wechatpay_v3") {
    w.id_prefix = "wx_";
    w.replay = ReplayKind::reference;  // out_trade_no is permanent; re-entry with equal parameters (Wx2)
    w.identity = Wire::Identity::reference;
    w.key_path = "out_trade_no";
    w.signs = Wire::Signs::wechatpay;
    w.decline_leaves_record = false;   // no order is created for a refused one
    w.success = w.already_paid = ans(200, R"({"prepay_id":"{id}"})");  // re-entry (Wx2)
    w.decline = ans(400, R"({"code":"PARAM_ERROR","message":"declined"})");
    w.error = ans(500, R"({"code":"SYSTEM_ERROR","message":"retry with the same parameters"})");
    w.in_progress = ans(500, R"({"code":"SYSTEM_ERROR","message":"in progress"})");
    w.unsigned_request = ans(401, R"({"code":"SIGN_ERROR","message":"signature missing or wrong"})");
    w.mismatch = ans(400, R"({"code":"OUT_TRADE_NO_USED"})");
    // GET .../out-trade-no/{out_trade_no}?mchid= (Wx4); the answer names the
    // trade it is about, as WeChat's does.
    w.lookup = Wire::Lookup::by_reference;
    w.lookup_path = "/v3/pay/transactions/out-trade-no/";
    w.search_path = w.key_path;
    w.caller_reference = Wire::CallerReference::always;
    // (The simulation's merchant is the test keys' mchid, provider_auth.hpp.)
    w.found = ans(200, R"({"trade_state":"{status}","transaction_id":"{id}","out_trade_no":"{ref}","mchid":"1900000109"})");
    w.not_found = ans(404, R"({"code":"ORDER_NOT_EXIST","message":"order does not exist"})");
    w.word_charged = "NOTPAY";
    w.word_declined = "PAYERROR";
    // A prepay_id is an order to pay: NOTPAY until the payer pays it
    // (SUCCESS), CLOSED when it never was.
    w.money = Words{{{"", "SUCCESS", ""},
                     {"", "NOTPAY", ""},
                     {"", "", ""},
                     {"", "", ""},
                     {"", "CLOSED", ""},
                     {"", "", ""},
                     {"", "", ""}}};
    w.at_once = Phase::waits;
  } else if (profile == "alipay") {
    w.id_prefix = "ali_";
    w.replay = ReplayKind::reference;  // out_trade_no is permanent; a paid trade answers TRADE_HAS_SUCCESS (Al2)
    w.identity = Wire::Identity::reference;
    w.key_path = "biz_content.out_trade_no";
    w.signs = Wire::Signs::alipay;
    w.gateway_form = true;  // the gateway takes form parameters, biz_content as JSON text (Al1)
    auto gw = [](int status, const std::string& inner) {
      return ans(status, R"({"alipay_trade_pay_response":{)" + inner + "}}");
    };
    w.success = gw(200, R"("code":"{status}","msg":"Success","trade_no":"{id}","out_trade_no":"{ref}")");
    // 10000: the barcode payment went through; 10003: the buyer is still
    // confirming (WAIT_BUYER_PAY until TRADE_SUCCESS, or TRADE_CLOSED).
    w.money = Words{{{"10000", "TRADE_SUCCESS", ""},
                     {"10003", "WAIT_BUYER_PAY", ""},
                     {"", "", ""},
                     {"", "", ""},
                     {"", "TRADE_CLOSED", ""},
                     {"", "", ""},
                     {"", "", ""}}};
    w.body_extras = {{"biz_content.total_amount", "\"{amount}\""}};
    // A refusal comes as a listed business failure, or as a code the
    // profile does not list (an HTTP 200 all the same): only 10000 is paid.
    w.decline = gw(200, R"("code":"40004","msg":"Business Failed","sub_code":"ACQ.PAYMENT_FAIL")");
    w.decline_alt = gw(200, R"("code":"40003","msg":"Insufficient Conditions","sub_code":"isv.insufficient")");
    w.error = gw(200, R"("code":"20000","msg":"Service Currently Unavailable","sub_code":"isp.unknow-error")");
    w.in_progress = gw(200, R"("code":"10003","msg":"WAIT_BUYER_PAY")");
    w.already_paid = gw(200, R"("code":"40004","msg":"Business Failed","sub_code":"ACQ.TRADE_HAS_SUCCESS")");
    w.unsigned_request =
        ans(200, R"({"error_response":{"code":"40002","msg":"Invalid Arguments","sub_code":"isv.invalid-signature"}})");
    w.mismatch = gw(200, R"("code":"40004","sub_code":"ACQ.CONTEXT_INCONSISTENT")");
    w.lookup = Wire::Lookup::by_reference;
    w.lookup_method = "POST";
    w.lookup_path = "/gateway.do";
    w.lookup_gateway_method = "alipay.trade.query";
    w.lookup_body_path = "biz_content.out_trade_no";
    w.search_path = w.key_path;
    w.caller_reference = Wire::CallerReference::always;
    w.found = ans(200, R"({"alipay_trade_query_response":{"code":"10000","trade_status":"{status}","trade_no":"{id}","out_trade_no":"{ref}"}})");
    w.not_found =
        ans(200, R"({"alipay_trade_query_response":{"code":"40004","msg":"Business Failed","sub_code":"ACQ.TRADE_NOT_EXIST"}})");
    w.word_charged = "TRADE_SUCCESS";
    w.word_declined = "WAIT_BUYER_PAY";
  } else {
    throw std::invalid_argument("no provider model for profile " + profile);
  }
  return w;
}

}  // namespace payretry::dst
