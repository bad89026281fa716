// The simulator reads requests from any client on the socket. The parser must
// never read outside the buffer, and what it reports must be consistent with
// the bytes it was given.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "http_conn.hpp"

namespace {
bool inside(std::string_view v, const char* b, size_t n) {
  return v.empty() || (v.data() >= b && v.data() + v.size() <= b + n);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size heap copy, so ASan sees any read past the end.
  std::vector<char> buf(data, data + size);
  const char* b = buf.data();
  payretry_sim::Request req;
  const payretry_sim::ParseResult r = payretry_sim::parse_request(b, size, req);
  if (r.status == payretry_sim::ParseStatus::complete || r.status == payretry_sim::ParseStatus::incomplete_body) {
    if (req.header_count > payretry_sim::kMaxHeaders) std::abort();
    if (!inside(req.method, b, size) || !inside(req.target, b, size) || !inside(req.path, b, size) ||
        !inside(req.query, b, size))
      std::abort();
    for (size_t i = 0; i < req.header_count; ++i)
      if (!inside(req.headers[i].name, b, size) || !inside(req.headers[i].value, b, size)) std::abort();
    if (r.status == payretry_sim::ParseStatus::complete) {
      if (r.consumed > size || req.head_bytes > r.consumed) std::abort();
      if (!inside(req.body, b, size) || req.body.size() != req.content_length) std::abort();
    }
    std::string v;
    (void)payretry_sim::query_param(req.query, "order_id", &v);
    (void)req.header("Idempotency-Key");
  }
  return 0;
}
