// Operations on a payment (issue 47): captures, refunds and cancels. Each
// is a POST that moves money, made safe to retry as a create is: it is a
// ledger row of its own (docs/internals.md "Operations"), claimed, fenced
// and settled like any payment, under a row id made from its payment's
// order id, its kind and the caller's name for it.
//
// The guard that decides whether an operation may be made is a pure
// function of its payment's row, the payment's operation rows and the
// proposal, so that every backend asks the same rule inside its one
// transaction, and the SPIN model can be generated from it. It lives here,
// in the lowest layer, on inputs of its own (OperationParent,
// OperationSibling): PaymentRow and PaymentState are the ledger's, a layer
// above, and the rule needs only a few of their facts (the ledger maps its
// rows onto these, ledger.hpp operation_parent / operation_sibling).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "money_state.hpp"

namespace payretry {

// What a ledger row is: a payment's create (the row its order id names),
// or an operation on that payment. The values are stored by name
// (operation_kind_name; "" for a create), never by number.
enum class OperationKind { create, capture, refund, cancel };

// "" for a create, else "capture", "refund", "cancel": the stored name.
const char* operation_kind_name(OperationKind k);
// The kind a stored name says; nullopt for a name this code does not know.
std::optional<OperationKind> parse_operation_kind(std::string_view s);

// The row id of operation `ref` of kind `kind` on the payment of order
// `parent_order_id`: "<parent> <kind> <ref>", e.g. "42 refund r1". Order
// ids and refs are visible ASCII without spaces (check_operation_ids), so
// no create's order id can ever equal it, and no two (parent, kind, ref)
// share one. `kind` must not be create.
std::string operation_row_id(const std::string& parent_order_id, OperationKind kind, const std::string& ref);

// Why (parent, kind, ref) cannot name an operation ("" when they can): an
// empty, over-long or not visible-ASCII order id or ref (a space would let
// two of them compose one row id), or kind create.
std::string check_operation_ids(const std::string& parent_order_id, OperationKind kind, const std::string& ref);

// Where a row's run stands, as far as the guard is concerned: still open
// (PENDING, IN_FLIGHT or UNKNOWN: it may have moved money, or may yet),
// succeeded, or failed (the only state that frees an amount).
enum class OperationRun { open, succeeded, failed };

// The facts of the payment an operation is proposed on.
struct OperationParent {
  OperationKind kind = OperationKind::create;  // must be create
  std::string scope;
  OperationRun run = OperationRun::open;
  MoneyState money = MoneyState::unknown;
  int64_t amount = -1;  // what the payment asked, in the provider's units; -1 not known
};

// One of the payment's existing operation rows.
struct OperationSibling {
  OperationKind kind = OperationKind::capture;
  OperationRun run = OperationRun::open;
  int64_t amount = -1;  // as the guard decided it; -1 not known
};

// The guard: "" when operation `kind` of `amount` (-1: the rest) may be
// made by a client of `scope` on `parent` (nullopt: no such payment) whose
// operation rows are `siblings`; else a sentence saying why not. When it
// allows, `amount` is the amount to store: the rest when -1 was asked and
// the rest is known, 0 for a cancel, else as asked. It never looks at a
// sibling's ref: a retry of an existing operation is not guarded again
// (the ledger answers with its row before asking this rule).
//
// An open operation counts as spent, a failed one as never made: an
// UNKNOWN refund may have moved its money, and only a provider's final
// "failed" shows that it did not.
std::string operation_refused(const std::optional<OperationParent>& parent, const std::vector<OperationSibling>& siblings,
                              OperationKind kind, const std::string& scope, int64_t& amount);

// Whether the refunds of `parent` that succeeded give back all it captured
// for sure (its captures that succeeded, or its create's amount): its
// money is then wholly refunded, not partly. False whenever either sum is
// not known.
bool wholly_refunded(const OperationParent& parent, const std::vector<OperationSibling>& siblings);

}  // namespace payretry
