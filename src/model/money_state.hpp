// Where the money is (docs/providers.md "Where the money is"): a
// provider-independent state beside the outcome. The outcome says whether
// a request took effect; this says whether money moved. A PayPal order
// CREATED, a Stripe PaymentIntent requires_action and a WeChat Pay
// prepay_id are all SUCCEEDED creates, and nobody has paid: a caller
// fulfils on `paid` (or `authorized` where it captures later), never on
// SUCCEEDED alone.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

namespace payretry {

// In rank order, lowest first; `failed` sits beside that line. The values
// are the C ABI's (pay_money_state, include/payretry/result.h) and are
// only appended.
enum class MoneyState {
  unknown = 0,            // no word read yet, or a word the profile does not map
  awaiting_customer = 1,  // exists, nothing moved; the next step is the customer's (or the merchant's confirm)
  pending = 2,            // the customer is done; the provider, a bank or the method is deciding
  authorized = 3,         // held on the customer's account, not captured
  paid = 4,               // captured: money moved to the merchant
  partly_refunded = 5,
  refunded = 6,
  failed = 7,             // final, and no money moved or will: declined, canceled, voided, expired
};

const char* money_state_name(MoneyState s);  // "unknown", "awaiting_customer", ...
std::optional<MoneyState> parse_money_state(std::string_view s);

// The state a row in `from` takes when something reads `read`: forward
// only, one rule for the engine, every ledger backend (the SQL ones say it
// again in their statements, held equal by a test) and the SPIN model.
// nullopt: the state stays.
//  - `unknown` read moves nothing (no word, or an unmapped one);
//  - `failed` is reached only from below `paid`: a payment that moved money
//    is never reported failed, and a late "voided" or "expired" after a
//    capture changes nothing (the weaker claim wins: `failed` tells the
//    caller that a new order is safe);
//  - otherwise only a higher rank moves it; `failed` and `refunded` are
//    terminal. Stripe moves a PaymentIntent from processing back to
//    requires_payment_method when a debit fails: the state stays `pending`.
std::optional<MoneyState> money_moves(MoneyState from, MoneyState read);

// The state after a read: money_moves's answer, or `from`.
inline MoneyState money_after(MoneyState from, MoneyState read) {
  const std::optional<MoneyState> to = money_moves(from, read);
  return to ? *to : from;
}

// What a provider's final refusal says about the money: its words where the
// profile maps them to a state that moved nothing (a Stripe decline leaves
// the PaymentIntent payable: awaiting_customer), else `failed`: a request
// the provider refused for good moved no money, whatever a profile maps its
// words to (a refusal is never `paid` or `authorized`).
inline MoneyState money_of_refusal(MoneyState read) {
  return read == MoneyState::awaiting_customer || read == MoneyState::pending ? read : MoneyState::failed;
}

// Where the money of one payment is when it is told in several parts (the
// words one reader finds, one per capture or authorization of a PayPal
// order): what is true of the payment as a whole.
//  - any part that moved money (paid, partly or fully refunded) makes it
//    paid, refunded only when every part is refunded or failed, partly
//    refunded when some refund is among them: a declined capture beside a
//    completed one never reads failed;
//  - else authorized if any part is held; else unknown if any part is
//    (an unmapped word may be money moving); else pending, then
//    awaiting_customer; failed only when every part failed.
// No parts: unknown.
MoneyState money_of_parts(const std::vector<MoneyState>& parts);

}  // namespace payretry
