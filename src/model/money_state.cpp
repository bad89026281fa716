#include "money_state.hpp"

namespace payretry {

namespace {
constexpr MoneyState kAll[] = {MoneyState::unknown,         MoneyState::awaiting_customer, MoneyState::pending,
                               MoneyState::authorized,      MoneyState::paid,              MoneyState::partly_refunded,
                               MoneyState::refunded,        MoneyState::failed};
}  // namespace

const char* money_state_name(MoneyState s) {
  switch (s) {
    case MoneyState::unknown: return "unknown";
    case MoneyState::awaiting_customer: return "awaiting_customer";
    case MoneyState::pending: return "pending";
    case MoneyState::authorized: return "authorized";
    case MoneyState::paid: return "paid";
    case MoneyState::partly_refunded: return "partly_refunded";
    case MoneyState::refunded: return "refunded";
    case MoneyState::failed: return "failed";
  }
  return "?";
}

std::optional<MoneyState> parse_money_state(std::string_view s) {
  for (MoneyState m : kAll)
    if (s == money_state_name(m)) return m;
  return std::nullopt;
}

std::optional<MoneyState> money_moves(MoneyState from, MoneyState read) {
  if (read == MoneyState::unknown || from == MoneyState::failed || from == MoneyState::refunded) return std::nullopt;
  if (read == MoneyState::failed) {
    if (from == MoneyState::paid || from == MoneyState::partly_refunded) return std::nullopt;
    return MoneyState::failed;
  }
  if (static_cast<int>(read) > static_cast<int>(from)) return read;
  return std::nullopt;
}

MoneyState money_of_parts(const std::vector<MoneyState>& parts) {
  if (parts.empty()) return MoneyState::unknown;
  if (parts.size() == 1) return parts[0];
  size_t moved = 0, refunded = 0, some_refund = 0, failed = 0;
  bool held = false, unknown = false, pending = false, awaiting = false;
  for (MoneyState p : parts) {
    switch (p) {
      case MoneyState::paid: ++moved; break;
      case MoneyState::partly_refunded: ++moved; ++some_refund; break;
      case MoneyState::refunded: ++moved; ++refunded; ++some_refund; break;
      case MoneyState::failed: ++failed; break;
      case MoneyState::authorized: held = true; break;
      case MoneyState::unknown: unknown = true; break;
      case MoneyState::pending: pending = true; break;
      case MoneyState::awaiting_customer: awaiting = true; break;
    }
  }
  if (moved > 0) {
    if (refunded + failed == parts.size()) return MoneyState::refunded;
    return some_refund > 0 ? MoneyState::partly_refunded : MoneyState::paid;
  }
  if (held) return MoneyState::authorized;
  if (unknown) return MoneyState::unknown;
  if (pending) return MoneyState::pending;
  if (awaiting) return MoneyState::awaiting_customer;
  return MoneyState::failed;
}

}  // namespace payretry
