// Each built-in profile's provider, as the simulation models it: identity,
// replay kind, lookup and signatures, from the same provider documents the
// profiles cite (docs/profiles.md). The answers' shapes are in
// provider_model.cpp.
#include <stdexcept>

#include "provider_model.hpp"

namespace payretry::dst {

Wire wire_for(const std::string& profile, ReplayKind undocumented) {
  Wire w;
  w.profile = profile;
  if (profile == "generic") {
    // A provider payretry knows nothing about: any documented behaviour,
    // under the assumption "replay none" profiles make (provider_model.hpp).
    w.replay = undocumented;
    w.hidden_uncached_errors = false;
  } else if (profile == "stripe") {
    w.replay = ReplayKind::all_answers;  // v1 stores every answer once execution began (St1)
    w.form_bodies = true;                // v1 takes form-encoded bodies only (St9)
    w.lookup = Wire::Lookup::by_id;      // GET /v1/payment_intents/{id} (St8)
    w.lookup_path = "/v1/payment_intents/";
  } else if (profile == "adyen") {
    // "The response to the first attempt" is replayed (Ad1); whether that
    // covers errors is not documented: any documented behaviour, as generic.
    w.replay = undocumented;
    w.hidden_uncached_errors = false;
    w.key_header = "idempotency-key";
    w.id_prefix = "psp_";
  } else if (profile == "paypal") {
    w.replay = ReplayKind::current_state;  // "returns the latest status of the previous request" (Pp1)
    w.key_header = "PayPal-Request-Id";
    w.lookup = Wire::Lookup::by_id;
    w.lookup_path = "/v2/checkout/orders/";
    w.id_prefix = "ORD_";
  } else if (profile == "square") {
    w.replay = ReplayKind::success_only;  // the first successful response is replayed (Sq1)
    w.identity = Wire::Identity::body_key;
    w.key_field = "idempotency_key";
    w.lookup = Wire::Lookup::by_id;
    w.lookup_path = "/v2/payments/";
    w.id_prefix = "sq_";
  } else if (profile == "checkout_com") {
    w.replay = ReplayKind::success_only;  // only 2xx is cached (Ck1)
    w.key_header = "Cko-Idempotency-Key";
    w.reference_path = "reference";
    w.lookup = Wire::Lookup::by_reference;
    w.lookup_path = "/payments?reference=";
    w.id_prefix = "pay_";
  } else if (profile == "mollie") {
    w.replay = ReplayKind::all_answers;  // the cached initial response, Idempotent-Replayed (Mo1)
    w.lookup = Wire::Lookup::by_id;
    w.lookup_path = "/v2/payments/";
    w.id_prefix = "tr_";
  } else if (profile == "wechatpay_v3") {
    w.replay = ReplayKind::reference;  // out_trade_no is permanent; re-entry with equal parameters (Wx2)
    w.identity = Wire::Identity::reference;
    w.reference_path = "out_trade_no";
    w.signed_requests = true;
    w.lookup = Wire::Lookup::by_reference;
    w.lookup_path = "/v3/pay/transactions/out-trade-no/";
    w.id_prefix = "wx_";
  } else if (profile == "alipay") {
    w.replay = ReplayKind::reference;  // out_trade_no is permanent; a paid trade answers TRADE_HAS_SUCCESS (Al2)
    w.identity = Wire::Identity::reference;
    w.reference_path = "biz_content.out_trade_no";
    w.signed_requests = true;
    w.gateway_form = true;  // the gateway takes form parameters, biz_content as JSON text (Al1)
    w.lookup = Wire::Lookup::by_reference;
    w.lookup_path = "/gateway.do?method=alipay.trade.query";
    w.id_prefix = "ali_";
  } else {
    throw std::invalid_argument("no provider model for profile " + profile);
  }
  return w;
}

}  // namespace payretry::dst
