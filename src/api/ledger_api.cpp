// ledger.h: what the ledger holds, as JSON, and forgetting old settled
// payments; nothing is sent. The reads go through the client (core), as
// every other call does.
#include <algorithm>
#include <optional>

#include "api_internal.hpp"

using namespace payretry::capi;

extern "C" {

int pay_ledger_get(pay_buf* out, pay_client* client, const char* order_id) {
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    *out = pay_buf{nullptr, 0};
    if (!client || !order_id) return set_error(PAY_EINVALID, "client or order_id is NULL");
    if (const int rc = foreign(client)) return rc;
    return fill_buf(out, client->impl->ledger_payment_json(order_id));
  });
}

int pay_ledger_list(pay_buf* out, pay_client* client, const char* state, int64_t updated_before_unix_ms,
                    uint32_t limit) {
  return guarded([&]() -> int {
    if (!out) return set_error(PAY_EINVALID, "out is NULL");
    *out = pay_buf{nullptr, 0};
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (const int rc = foreign(client)) return rc;
    std::optional<payretry::PaymentState> st;
    if (state) {
      st = payretry::parse_state(state);
      if (!st) return set_error(PAY_EINVALID, "state must be PENDING, IN_FLIGHT, SUCCEEDED, FAILED or UNKNOWN");
    }
    const int n = limit == 0 ? 1000 : static_cast<int>(std::min<uint32_t>(limit, 1000000));
    return fill_buf(out, client->impl->ledger_payments_json(st, updated_before_unix_ms, n));
  });
}

int pay_ledger_prune(pay_client* client, int64_t updated_before_unix_ms, uint64_t* pruned) {
  return guarded([&]() -> int {
    if (pruned) *pruned = 0;
    if (!client) return set_error(PAY_EINVALID, "client is NULL");
    if (updated_before_unix_ms <= 0) return set_error(PAY_EINVALID, "updated_before_unix_ms must be a time (> 0)");
    if (const int rc = foreign(client)) return rc;
    const int64_t n = client->impl->prune_ledger(updated_before_unix_ms);
    if (pruned) *pruned = static_cast<uint64_t>(n);
    return 0;
  });
}

}  // extern "C"
