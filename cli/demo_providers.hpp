// What `payretry demo --operations` needs to know of each built-in provider
// to make payments the way that provider's own clients do against the
// embedded simulator: the create body (paid at once, or only held), the
// client config (credentials, merchant id), the fields every operation
// carries, and where the second id a path names comes from (PayPal).
// Everything else (paths, keys, windows, what is offered) is the profile's,
// asked of the library, never repeated here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cli {

struct DemoProvider {
  std::string name;
  // A request field asks for an authorization only, to be captured later
  // (docs/simulator.md, "Where the money is").
  bool holds = false;
  // Capture takes an amount (part of the hold); else the whole.
  bool partial_capture = true;
  // The operation's path names a second id (PayPal refunds a capture and
  // captures an authorization): read from the payment's or capture's answer.
  bool needs_target = false;
  // The payment's key is its order reference (out_trade_no), not a header.
  bool key_is_order = false;
  // Notifies its operations (Adyen: its captures' only outcome; Checkout.com
  // its actions, approved or declined; Stripe its refunds): the demo runs an
  // endpoint the simulator notifies, which applies them to the ledger.
  bool notifies = false;
};

// The eight built-in providers, in the order the demo runs them.
const std::vector<std::string>& demo_provider_names();
// Throws Failure(usage) for a name that is not one of them.
DemoProvider demo_provider(const std::string& name);

// The amount of payment i, in minor units (the same in every run).
int64_t demo_op_amount(int i);
// The create body of `order`, as the provider's own clients send it.
std::string demo_provider_body(const DemoProvider& p, const std::string& order, int64_t amount, bool hold);
// Further fields an operation of a payment of `amount` sends beside what
// payretry writes (Adyen's merchantAccount; WeChat Pay's refund restates the
// trade's total and currency); "" none.
std::string demo_operation_body(const DemoProvider& p, int64_t amount);
// The demo's order ids: letters, digits and "_" only, which every
// provider's merchant reference takes (Alipay's the fewest).
std::string demo_op_order(int i);
int demo_op_index(const std::string& order);  // -1 when not one
// The client config for the provider, pointed at the simulator.
// `webhook_secret`: the HMAC key the simulator signs notifications with
// ("" when the demo receives none).
std::string demo_provider_config(const DemoProvider& p, const std::string& base_url, const std::string& ledger_url,
                                 const std::string& keys_dir, uint64_t seed, const std::string& webhook_secret);
// A fresh random key, hex (Adyen's notification HMAC key).
std::string demo_hmac_key_hex();
// Writes fresh RSA keys into `dir`, laid out as the simulator's --keys
// wants them and as the client's WeChat Pay and Alipay credentials name
// them: made per run, so no private key ships with the demo.
void write_demo_keys(const std::string& dir);
// The second id an operation's path names: for a capture the hold's
// (PayPal's authorization), for a refund the capture's. `payment_answer`
// is the body of the payment's create or lookup; `capture_answer` of its
// capture ("" when none). "" when the provider names none or it is absent.
std::string demo_target_id(const DemoProvider& p, bool refund, const std::string& payment_answer,
                           const std::string& capture_answer);

}  // namespace cli
