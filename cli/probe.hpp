// `payretry check --probe`: is the provider reachable? One GET of base_url,
// with no credentials and no body: it can never be a payment.
#pragma once

#include <cstdint>
#include <string>

namespace cli {

struct ProbeTarget {
  std::string url;        // the config's base_url
  bool tls_verify = true;
  std::string ca_file;    // empty: the system's CAs
  std::string proxy;      // empty: none (the environment's proxies are ignored, as the library does)
  int64_t timeout_ms = 5000;
};

struct ProbeResult {
  bool reachable = false;  // some HTTP answer came back, whatever its status
  long http_status = 0;
  int64_t elapsed_ms = 0;
  std::string error;       // why not, when not reachable (curl's words)
};

ProbeResult probe(const ProbeTarget& target);

}  // namespace cli
