#include "money.hpp"

namespace payretry_sim {

std::string_view money_name(Money m) {
  switch (m) {
    case Money::awaiting_customer: return "awaiting_customer";
    case Money::pending: return "pending";
    case Money::authorized: return "authorized";
    case Money::paid: return "paid";
    case Money::failed: return "failed";
  }
  return "unknown";
}

bool customer_moves(Money from, bool manual, CustomerAction a, Money* to) {
  // Forward only, as the library's money state: nothing leaves paid or failed.
  const bool waiting = from == Money::awaiting_customer || from == Money::pending;
  switch (a) {
    case CustomerAction::pay:
      if (!waiting) return false;
      *to = manual ? Money::authorized : Money::paid;
      return true;
    case CustomerAction::fail:
      if (!waiting && from != Money::authorized) return false;
      *to = Money::failed;
      return true;
    case CustomerAction::capture:
      if (from != Money::authorized) return false;
      *to = Money::paid;
      return true;
  }
  return false;
}

}  // namespace payretry_sim
