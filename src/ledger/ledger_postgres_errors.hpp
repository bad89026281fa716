// How the PostgreSQL ledger's failures read: a failure of the store as a
// whole, as opposed to one statement's.
#pragma once
#include "ledger.hpp"

namespace payretry {
namespace pg {

// A failure of the store as a whole (unreachable, stalled, connection
// lost), as opposed to one statement's: retrying other work at once is
// pointless.
class Unavailable : public LedgerError {
 public:
  using LedgerError::LedgerError;
};

}  // namespace pg
}  // namespace payretry
