// Where a payment's money is, as the simulator knows it (its truth), and what a create asked of
// it. The names are the library's money states (docs/providers.md, "Where the money is"); each
// payment's state is the one that table gives the word the simulator answers for it, so a test
// can compare the library's reading with this truth one for one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace payretry_sim {

enum class Money : uint8_t {
  awaiting_customer,  // made; the customer still has to approve, authenticate or pay
  pending,            // the customer is done (or never had to act); the provider decides
  authorized,         // held on the customer's account, not captured
  paid,               // captured
  failed,             // final, no money moved: canceled, voided, expired, closed unpaid
};
inline constexpr std::size_t kMoneyCount = 5;

std::string_view money_name(Money m);

// Which provider word a payment waiting for its customer carries, where a provider has more
// than one (Stripe: the PaymentIntent's requires_* status; PayPal: CREATED or
// PAYER_ACTION_REQUIRED). 0 elsewhere.
enum class Wait : uint8_t {
  none,
  // Stripe
  requires_payment_method,  // confirm=false, no payment_method
  requires_confirmation,    // confirm=false with a payment_method
  requires_action,          // a 3-D Secure test card (pm_card_threeDSecure2Required)
  // PayPal
  order_created,            // no payment_source: the payer must approve (rel "approve")
  payer_action_required,    // payment_source.paypal: the payer must act (rel "payer-action")
  // the other providers have one waiting word each
  customer,
};

// What a create asked of its payment, read from the provider's own request fields
// (create_request.cpp) or chosen by the seeded flow mix (state.cpp).
struct Flow {
  Wait wait = Wait::none;       // none: the customer has nothing to do, the payment goes through
  bool manual_capture = false;  // once the customer is done the payment is held, not captured
  bool asked = false;           // the request said either itself: the flow mix does not choose
};

// What the customer (or the merchant, for `capture`) does to a payment that is not final:
// POST /__admin/customer, or the seeded clock of the flows config.
enum class CustomerAction : uint8_t {
  pay,      // approves / authenticates / pays: paid, or authorized under manual capture
  fail,     // abandons, fails authentication, or lets it expire; an authorization is voided
  capture,  // the merchant captures a held payment: paid
};

// The state `a` moves a payment in `from` to (manual: the create asked for manual capture);
// false when the action does not apply to it (a paid payment cannot fail; only a held one is
// captured).
bool customer_moves(Money from, bool manual, CustomerAction a, Money* to);

}  // namespace payretry_sim
