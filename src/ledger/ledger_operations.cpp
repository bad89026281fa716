// The ledger's side of the operation guard (ledger.hpp, operation_rules.hpp):
// its rows as the rule's inputs, and the checks of a proposal every backend
// makes before it writes.
#include "ledger.hpp"

namespace payretry {

OperationRun operation_run(PaymentState s) {
  switch (s) {
    case PaymentState::succeeded: return OperationRun::succeeded;
    case PaymentState::failed: return OperationRun::failed;
    case PaymentState::pending:
    case PaymentState::in_flight:
    case PaymentState::unknown: break;
  }
  return OperationRun::open;
}

OperationParent operation_parent(const PaymentRow& row) {
  OperationParent p;
  p.kind = row.operation;
  p.scope = row.scope;
  p.run = operation_run(row.state);
  p.money = row.money_state;
  p.amount = row.amount;
  return p;
}

OperationSibling operation_sibling(const PaymentRow& row) {
  OperationSibling s;
  s.kind = row.operation;
  s.run = operation_run(row.state);
  s.amount = row.amount;
  return s;
}

void check_operation_proposal(const PaymentRow& p) {
  if (std::string e = check_operation_ids(p.parent_order_id, p.operation, p.operation_ref); !e.empty())
    throw LedgerError("ledger: " + e);
  if (p.order_id != operation_row_id(p.parent_order_id, p.operation, p.operation_ref))
    throw LedgerError("ledger: an operation's row id must be \"" +
                      operation_row_id(p.parent_order_id, p.operation, p.operation_ref) + "\", not \"" + p.order_id +
                      "\"");
}

void check_create_proposal(const PaymentRow& p) {
  if (p.operation != OperationKind::create || !p.parent_order_id.empty() || !p.operation_ref.empty())
    throw LedgerError("ledger: an operation is created by create_operation_and_claim, which guards it, not by "
                      "create_and_claim");
}

std::string operation_guard(const PaymentRow& proposed, const std::optional<PaymentRow>& parent,
                            const std::vector<PaymentRow>& family, int64_t& amount) {
  std::optional<OperationParent> facts;
  if (parent) facts = operation_parent(*parent);
  std::vector<OperationSibling> siblings;
  siblings.reserve(family.size());
  for (const PaymentRow& r : family)
    if (r.operation != OperationKind::create) siblings.push_back(operation_sibling(r));
  return operation_refused(facts, siblings, proposed.operation, proposed.scope, amount);
}

}  // namespace payretry
