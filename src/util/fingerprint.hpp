// The request fingerprint stored in the ledger: HMAC-SHA256 over method, path
// and body, keyed by the ledger's secret, so that the stored value proves
// "same request" without revealing anything of the body (card data included).
#pragma once
#include <string>
#include <string_view>

namespace payretry {
std::string request_fingerprint(std::string_view secret, std::string_view method, std::string_view path,
                                std::string_view body);
std::string new_ledger_secret();
}  // namespace payretry
