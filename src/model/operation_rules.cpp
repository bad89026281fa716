#include "operation_rules.hpp"

#include "validate.hpp"

namespace payretry {

const char* operation_kind_name(OperationKind k) {
  switch (k) {
    case OperationKind::create: return "";
    case OperationKind::capture: return "capture";
    case OperationKind::refund: return "refund";
    case OperationKind::cancel: return "cancel";
  }
  return "?";
}

std::optional<OperationKind> parse_operation_kind(std::string_view s) {
  for (OperationKind k : {OperationKind::create, OperationKind::capture, OperationKind::refund, OperationKind::cancel})
    if (s == operation_kind_name(k)) return k;
  return std::nullopt;
}

std::string operation_row_id(const std::string& parent_order_id, OperationKind kind, const std::string& ref) {
  return parent_order_id + " " + operation_kind_name(kind) + " " + ref;
}

std::string check_operation_ids(const std::string& parent_order_id, OperationKind kind, const std::string& ref) {
  if (kind == OperationKind::create) return "a create is not an operation: it has no parent payment";
  if (std::string e = check_order_id(parent_order_id); !e.empty()) return "the operation's payment: " + e;
  // The ref is held to the order id's rules: the row id joins them with spaces.
  if (std::string e = check_order_id(ref); !e.empty()) return "the operation's ref (as an " + e + ")";
  return {};
}

namespace {

const char* money(MoneyState m) { return money_state_name(m); }

// The amounts of `siblings` of `kind` whose run is one `counts` accepts,
// summed; nullopt when one of them is not known (-1), or the sum does not
// fit: then nothing more may be taken from what they share.
template <class Counts>
std::optional<int64_t> sum_of(const std::vector<OperationSibling>& siblings, OperationKind kind, Counts counts) {
  int64_t sum = 0;
  for (const OperationSibling& s : siblings) {
    if (s.kind != kind || !counts(s.run)) continue;
    if (s.amount < 0 || __builtin_add_overflow(sum, s.amount, &sum)) return std::nullopt;
  }
  return sum;
}

bool any_of_kind(const std::vector<OperationSibling>& siblings, OperationKind kind, bool (*counts)(OperationRun)) {
  for (const OperationSibling& s : siblings)
    if (s.kind == kind && counts(s.run)) return true;
  return false;
}

// UNKNOWN, PENDING and IN_FLIGHT may have moved money, or may yet: spent.
bool not_failed(OperationRun r) { return r != OperationRun::failed; }
bool succeeded(OperationRun r) { return r == OperationRun::succeeded; }
bool any(OperationRun) { return true; }

// Takes `amount` (-1: the rest) out of `available` of which `spent` is
// spent already (nullopt: not known); "" and `amount` set when it fits.
std::string take(const char* what, int64_t available, const std::optional<int64_t>& spent, int64_t& amount) {
  if (!spent)
    return std::string("an earlier ") + what + " of the payment, made or under way, has an amount that is not known";
  const int64_t rest = available - *spent;
  const int64_t asked = amount == -1 ? rest : amount;
  if (rest <= 0)
    return std::string("nothing is left to ") + what + ": " + std::to_string(*spent) + " of " +
           std::to_string(available) + " is taken by earlier ones, made or under way";
  if (asked > rest)
    return std::string("a ") + what + " of " + std::to_string(asked) + " is more than is left (" +
           std::to_string(rest) + " of " + std::to_string(available) + ")";
  amount = asked;
  return {};
}

std::string capture_refused(const OperationParent& p, const std::vector<OperationSibling>& siblings, int64_t& amount) {
  if (p.money != MoneyState::authorized)
    return std::string("nothing to capture: the payment is not authorized (its money state is ") + money(p.money) + ")";
  // A cancel (a void) releases the hold; the money state moves only when
  // the provider tells, so the cancel row itself is what says so until then.
  if (any_of_kind(siblings, OperationKind::cancel, not_failed))
    return "nothing to capture: a cancel of the payment is made or under way";
  if (p.amount >= 0)
    return take("capture", p.amount, sum_of(siblings, OperationKind::capture, not_failed), amount);
  // Not knowing what was authorized, only the whole may be captured, once.
  if (amount != -1) return "the payment's amount is not known: only a capture of the whole (-1) may be asked";
  if (any_of_kind(siblings, OperationKind::capture, not_failed))
    return "a capture of the payment is made or under way, and the payment's amount is not known";
  return {};
}

// What the payment captured, as far as it is known for sure: by its own
// captures that succeeded, or at its create. "" and `captured` set (nullopt:
// captured, amount not known); else why nothing is known to be captured.
std::string captured_by(const OperationParent& p, const std::vector<OperationSibling>& siblings,
                        std::optional<int64_t>& captured) {
  captured.reset();
  if (any_of_kind(siblings, OperationKind::capture, any)) {
    // Captured by its own operations: only what they captured for sure.
    if (!any_of_kind(siblings, OperationKind::capture, succeeded))
      return "nothing captured to refund: no capture of the payment has succeeded";
    captured = sum_of(siblings, OperationKind::capture, succeeded);
    return {};
  }
  if (p.money == MoneyState::authorized)
    return "nothing captured to refund: the payment is authorized and no capture of it has succeeded";
  if (p.amount >= 0) captured = p.amount;  // captured at the create
  return {};
}

std::string refund_refused(const OperationParent& p, const std::vector<OperationSibling>& siblings, int64_t& amount) {
  switch (p.money) {
    case MoneyState::paid:
    case MoneyState::partly_refunded:
    case MoneyState::authorized:
      break;
    default:
      return std::string("nothing captured to refund: the payment's money state is ") + money(p.money);
  }
  std::optional<int64_t> captured;  // nullopt: captured, amount not known
  if (std::string why = captured_by(p, siblings, captured); !why.empty()) return why;
  if (captured) return take("refund", *captured, sum_of(siblings, OperationKind::refund, not_failed), amount);
  // Not knowing what was captured, only the whole may be refunded, once.
  if (amount != -1) return "the captured amount is not known: only a refund of the whole (-1) may be asked";
  if (any_of_kind(siblings, OperationKind::refund, not_failed))
    return "a refund of the payment is made or under way, and the captured amount is not known";
  return {};
}

std::string cancel_refused(const OperationParent& p, const std::vector<OperationSibling>& siblings, int64_t& amount) {
  if (amount != -1 && amount != 0) return "a cancel moves no amount: ask -1 or 0";
  if (p.money != MoneyState::awaiting_customer && p.money != MoneyState::pending && p.money != MoneyState::authorized)
    return std::string("the payment cannot be canceled: its money state is ") + money(p.money);
  if (any_of_kind(siblings, OperationKind::capture, not_failed))
    return "the payment cannot be canceled: a capture of it is made or under way";
  if (any_of_kind(siblings, OperationKind::cancel, not_failed))
    return "a cancel of the payment is made or under way already";
  amount = 0;
  return {};
}

}  // namespace

bool wholly_refunded(const OperationParent& parent, const std::vector<OperationSibling>& siblings) {
  std::optional<int64_t> captured;
  if (!captured_by(parent, siblings, captured).empty() || !captured || *captured <= 0) return false;
  const std::optional<int64_t> refunded = sum_of(siblings, OperationKind::refund, succeeded);
  return refunded && *refunded >= *captured;
}

std::string operation_refused(const std::optional<OperationParent>& parent, const std::vector<OperationSibling>& siblings,
                              OperationKind kind, const std::string& scope, int64_t& amount) {
  if (kind == OperationKind::create) return "a create is not an operation";
  if (!parent) return "no payment of that order id is in the ledger";
  const OperationParent& p = *parent;
  if (p.kind != OperationKind::create) return "the order id names an operation, not a payment";
  if (p.scope != scope) return "the payment belongs to another client's scope";
  if (p.run == OperationRun::open) return "the payment is not settled";
  if (p.run == OperationRun::failed) return "the payment failed";
  if (kind != OperationKind::cancel && (amount == 0 || amount < -1))
    return "the amount must be positive, or -1 for the rest";
  std::string why;
  int64_t decided = amount;  // `amount` changes only when the operation is allowed
  switch (kind) {
    case OperationKind::capture: why = capture_refused(p, siblings, decided); break;
    case OperationKind::refund: why = refund_refused(p, siblings, decided); break;
    case OperationKind::cancel: why = cancel_refused(p, siblings, decided); break;
    case OperationKind::create: break;
  }
  if (why.empty()) amount = decided;
  return why;
}

}  // namespace payretry
