#include "ledger_postgres_pool.hpp"

namespace payretry {
namespace pg {

int64_t system_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace pg
}  // namespace payretry
