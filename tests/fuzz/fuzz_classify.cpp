// Every answer a provider (or a proxy) can give, against every built-in
// profile: classification never crashes, and a transport failure with
// nothing written is never "may have processed", and what it quotes from
// the provider is UTF-8.
//
// Input: byte 0 picks the transport failure, bytes 1-2 the status; the rest
// is "Name: value" header lines, a blank line, then the body.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "classify.hpp"
#include "profile.hpp"
#include "utf8_check.hpp"

namespace {
const std::vector<payretry::Profile>& profiles() {
  static const std::vector<payretry::Profile> all = [] {
    std::vector<payretry::Profile> v;
    for (const std::string& n : payretry::builtin_profile_names()) v.push_back(*payretry::builtin_profile(n));
    return v;
  }();
  return all;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  payretry::TransportResult t;
  t.failure = static_cast<payretry::TransportFailure>(data[0] % 11);
  t.request_written = (data[0] & 0x80) != 0;
  t.response.status = (data[1] << 8 | data[2]) % 1000;
  std::string_view rest(reinterpret_cast<const char*>(data + 3), size - 3);
  const size_t blank = rest.find("\n\n");
  std::string_view head = rest.substr(0, blank);
  if (blank != std::string_view::npos) t.response.body = std::string(rest.substr(blank + 2));
  while (!head.empty()) {
    const size_t nl = head.find('\n');
    const std::string_view line = head.substr(0, nl);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos)
      t.response.headers.emplace_back(std::string(line.substr(0, colon)), std::string(line.substr(colon + 1)));
    if (nl == std::string_view::npos) break;
    head.remove_prefix(nl + 1);
  }
  for (const payretry::Profile& p : profiles()) {
    const payretry::Classification c = payretry::classify(p, t);
    if (c.reason.empty()) std::abort();
    // The provider's code is quoted in results and logs (JSON): UTF-8 only.
    if (!is_utf8(c.provider_code) || !is_utf8(c.reason)) std::abort();
    const bool nothing_sent = t.failure != payretry::TransportFailure::none && !t.request_written;
    if (nothing_sent && c.may_have_processed) std::abort();
  }
  return 0;
}
