// The money state's forward-only rule (money_moves, money_state.hpp) as SQL text,
// for statements that must move a stored money_state column in the same
// UPDATE that reads it: the value a caller holds may be older than the
// stored one (an event that landed before the claim, a group commit that
// batched two writes of one row), and a state computed from it could move
// the money back.
#pragma once
#include <string>

namespace payretry {

// A portable SQL expression (plain CASE, equality and IN on text: SQLite
// and PostgreSQL alike) of the money state a row whose stored state is the
// expression `from` takes when something reads the expression `read`: what
// money_after() answers, by the names money_state_name() gives. It is made
// from money_moves() itself, pair by pair, so that the SQL can never say
// another rule than the C++; a name it does not know (a damaged store)
// stays as it is, for the row codec to refuse when the row is read.
// `from` and `read` are inserted as they are: pass column names and
// parameter placeholders, never a value.
std::string sql_money_after(const std::string& from, const std::string& read);

}  // namespace payretry
