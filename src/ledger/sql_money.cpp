#include "sql_money.hpp"

#include <optional>
#include <vector>

#include "money_state.hpp"

namespace payretry {

namespace {
// Every state, by its C ABI value: the values are dense from 0 and only
// appended (money_state.hpp), so the last one bounds the walk. A state appended
// after `failed` must be added here; the conformance test that compares the
// SQL with money_moves() for every pair fails until it is.
constexpr int kLastMoneyState = static_cast<int>(MoneyState::failed);

std::string quoted(MoneyState s) { return std::string("'") + money_state_name(s) + "'"; }
}  // namespace

std::string sql_money_after(const std::string& from, const std::string& read) {
  // One WHEN per stored state that can move: the reads that move it to what
  // they read, in one IN list; a read that moved it elsewhere would get a
  // WHEN of its own (money_moves answers the read itself today, but the
  // text follows whatever it answers).
  std::string out = "(CASE";
  for (int f = 0; f <= kLastMoneyState; ++f) {
    const MoneyState was = static_cast<MoneyState>(f);
    std::vector<MoneyState> to_read;
    for (int r = 0; r <= kLastMoneyState; ++r) {
      const MoneyState seen = static_cast<MoneyState>(r);
      const std::optional<MoneyState> to = money_moves(was, seen);
      if (!to) continue;
      if (*to == seen) {
        to_read.push_back(seen);
      } else {
        out += " WHEN " + from + " = " + quoted(was) + " AND " + read + " = " + quoted(seen) + " THEN " + quoted(*to);
      }
    }
    if (to_read.empty()) continue;
    out += " WHEN " + from + " = " + quoted(was) + " AND " + read + " IN (";
    for (size_t i = 0; i < to_read.size(); ++i) out += (i ? ", " : "") + quoted(to_read[i]);
    out += ") THEN " + read;
  }
  out += " ELSE " + from + " END)";
  return out;
}

}  // namespace payretry
