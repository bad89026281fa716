// What a provider's notification settles, as pure functions of the profile
// and the ledger's rows: the decisions of WebhookReceiver (webhook_receiver.cpp)
// and of the kept events' replay (Settler::apply_kept_events) without their
// I/O, so that tests/model can print them as the SPIN model's tables. How a
// landed event moves a row is the ledger's event_moves() (ledger.hpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ledger.hpp"
#include "profile.hpp"

namespace payretry {

// What an event says of its payment, as its history entry's verdict
// (kEventSucceeded, kEventFailed or kEventNoted): the profile's webhook
// `events` map by the event's type first, else its status word through
// the lookup's status_map. A type or status in neither, or one that maps
// to PENDING, is noted and settles nothing.
const char* event_finding(const Profile& profile, const std::string& event_type, const std::string& status);

// The finding an event may land with on the row of the order it names
// (`row`: null when there is none, or it is another client's or another
// payment's). A failure settles FAILED only when it is provably the row's
// own payment's: the row knows its provider payment id and the event names
// that very id, or the event carries the idempotency key the row sent
// (`event_key`, Stripe's request.idempotency_key: only this row's requests
// carried it, so the payment it failed is the one this row made, even when
// the create's answer, and with it the id, was lost). A failure read by the
// order alone may be another payment's of the same order (an older one,
// one made elsewhere, a late redelivery), and a payment told FAILED is
// charged again under a new order while its own may have been charged.
// Otherwise it is noted, and a lookup, a later event or a person settles
// the payment. Success and noted findings land as they are.
const char* event_finding_on(const char* finding, const PaymentRow* row, const std::string& event_provider_id,
                             const std::string& event_key);

// The finding a success may land with on `row` (as for event_finding_on)
// given where its words say the money is (`money`, money_in_event). A
// success whose words say no money moved (the payment waits for its
// customer, is pending, or failed: PayPal's approved order, Stripe's
// requires_action, Checkout.com's payment_voided) proves only that some
// payment of the order exists. Unless the row already knows the very id
// the event names, it is noted: settled by the order's name alone it would
// give the row another payment's id, the row's own events (naming its real
// id) would no longer land on it, and that other payment's later "canceled"
// would read failed on an order whose own payment was charged. Failures
// and noted findings are returned as they are.
const char* event_finding_by_money(const char* finding, MoneyState money, const PaymentRow* row,
                                   const std::string& event_provider_id);

// The key an event carries (`event_key`), as event_finding_on may take it
// for proof that the event is `row`'s own payment's; "" when it proves
// nothing. A caller may choose its own keys (an order id, say) and use one
// again for a later payment of the same order once the provider forgot it;
// an older payment's redelivered "failed" then carries the row's key. So
// the key proves only for a payment made (`object_created_s`, Unix seconds;
// 0 unknown) no earlier than the provider's key window before the row was
// made, less an hour for the two clocks and the seconds: a payment that
// recent under the row's key is the one the row's own sends reached (the
// provider answered them with it). A key kept forever (`retention_ms`
// nullopt: a reference) proves at any age.
std::string key_as_proof(const PaymentRow& row, const std::string& event_key, int64_t object_created_s,
                         const std::optional<int64_t>& retention_ms);

// What becomes of an event that names an order this client has no row for
// (in the event's scope): a payment's row is committed before its first
// byte leaves, so none of its own events comes first. The event is another
// payment's under the same order id (made elsewhere, in another account, an
// older one), and its order name must never find the row made later:
// kept_by_id keeps it under the provider's id alone, to land only on a row
// that comes to know that id; without an id it is ignored. kept_by_order
// (keep it under the order's name, for kept_event_applies to judge by the
// clocks of two hosts) is what the receiver did before, which a receiving
// host whose clock runs ahead lands on the order's next row: the code never
// answers it, the SPIN model's revert does.
enum class EventWithoutRow { ignored, kept_by_id, kept_by_order };
EventWithoutRow event_without_row(const std::string& event_provider_id);

// Whether an event made in `event_account` may land on the row of a payment
// made in `payment_account` ("" for both: the platform's own). Only where
// the provider keeps several accounts' payments in one store and names the
// account in its events and requests (profile webhook.account_header, with
// webhook.account_path: Stripe Connect's Stripe-Account); elsewhere always.
// Another account's payment under the same order id is not this row's,
// whatever it says: its success would end an order nobody paid for.
bool event_in_payment_account(const Profile& profile, const std::string& payment_account,
                              const std::string& event_account);

// What a recorded event reports as its effect, from its row as the receiver
// read it before (`before`) and after the event's commit (`after`; null:
// no row), what the event says (`finding`: "succeeded", "failed", "noted")
// and the detail a row settled by it holds (`settled_detail`):
//   - "settled": the row was open when read and now holds this event's
//     settlement (a row read IN_FLIGHT may since have been settled by its
//     own run, whose detail is then the run's);
//   - "conflict": the row is final, before or after, with the other outcome
//     than the event's. Judged on the row after the commit too: another
//     event or the payment's own run may have settled it between the
//     receiver's read and this event's commit (two events of one payment
//     arriving together, one success and one failure), and a person must be
//     told whichever came first;
//   - "recorded" otherwise (a noted event, or one that agrees).
const char* recorded_event_effect(const PaymentRow* before, const PaymentRow* after, const std::string& finding,
                                  const std::string& settled_detail);

// Whether an event kept for later (Ledger::record_event) may land on `row`
// now. Only one that came after the row was made: the key is committed
// before the first byte is sent, so an event received earlier is about a
// payment made elsewhere (another system, a dashboard, an account
// this client does not serve) that happens to name the same order; landed,
// its "failed" would end an order whose own payment may have been charged.
// Strictly after: an event stamped in the row's own millisecond may have
// come first. (Two hosts' clocks: their skew widens that window; a failure
// is held back by event_finding_on whatever the clocks say.)
bool kept_event_applies(const PaymentRow& row, const LedgerEvent& event);

// ---- an operation's own notifications (profile operations.<kind>.webhook)

// The operation (its name in profile.operations: "capture", "refund",
// "cancel") whose webhook lists `event_type`; "" none (the loader allows a
// type in one operation's list only).
std::string operation_event_kind(const Profile& profile, const std::string& event_type);

// What an operation's event says of the operation (a kEvent* verdict): its
// type through op.webhook.events; a type listed PENDING lets its status word
// decide, through the operation's status_map, then its lookup's.
const char* operation_event_finding(const ProfileOperation& op, const std::string& event_type,
                                    const std::string& status);

// Which of a payment's operation rows (`rows`, Ledger::operations_of) an
// event about its operation of kind `kind` lands on: its index, or -1 when
// none is provably the event's. Only a row of that kind, and only one:
//   - the row that knows the very id the event names (`operation_id`), or
//   - where no row knows it, the row whose idempotency key the event
//     carries (`event_key`: only that row's requests carried it, keys are
//     never chosen by callers) and that knows no other id.
// Two rows that know the same id (a Stripe capture's id is its payment's)
// are none: the event could be either's, and settling one with the other's
// outcome would free or spend money that did not move. An event that names
// neither lands on no row, whatever else it says: the payment's only
// open refund is not proof that a refund event is that refund's.
int operation_event_row(const std::vector<PaymentRow>& rows, OperationKind kind, const std::string& operation_id,
                        const std::string& event_key);

// An event id as the ledger keeps it: as sent when it is short visible
// ASCII (every provider's is), else a digest of it, so that an odd one can
// neither fail the store on every redelivery nor be told apart from itself.
std::string stored_event_id(const std::string& id);
// The event a lookup's answer is recorded as (a Mollie hint's confirming
// lookup, a query of a settled payment): the payment and its status, so
// that the same word read twice, by either path, is one event.
std::string lookup_event_id(const std::string& provider_id, const std::string& status);

}  // namespace payretry
