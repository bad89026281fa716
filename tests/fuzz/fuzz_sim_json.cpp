// The simulator's JSON scanner reads every request body: any bytes must be
// judged valid or not without reading outside them, and a field it reports
// points into the body or into its own copy.
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "json_lite.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<char> buf(data, data + size);
  const std::string_view body(buf.data(), size);
  payretry_sim::PaymentFields f;
  if (payretry_sim::scan_payment_json(body, &f) && f.has_order_id) {
    const bool in_body = f.order_id.data() >= body.data() && f.order_id.data() + f.order_id.size() <= body.data() + size;
    const bool in_copy = f.order_id.data() >= f.order_id_buf.data() &&
                         f.order_id.data() + f.order_id.size() <= f.order_id_buf.data() + f.order_id_buf.size();
    if (!f.order_id.empty() && !in_body && !in_copy) std::abort();
  }
  return 0;
}
