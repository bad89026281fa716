// The request fingerprint stored in the ledger: HMAC-SHA256 over method, path
// and body, keyed by the ledger's secret, so that the stored value proves
// "same request" without revealing anything of the body (card data included).
#pragma once
#include <memory>
#include <string>
#include <string_view>

namespace payretry {

std::string request_fingerprint(std::string_view secret, std::string_view method, std::string_view path,
                                std::string_view body);

// The same fingerprint, keyed once: OpenSSL's one-shot HMAC() looks the MAC
// and the digest up by name and sets the key on every call, which costs more
// than hashing a payment's body. Thread-safe (calls take turns on the keyed
// context; each is a few microseconds).
class Fingerprinter {
 public:
  explicit Fingerprinter(std::string_view secret);
  ~Fingerprinter();
  Fingerprinter(const Fingerprinter&) = delete;
  Fingerprinter& operator=(const Fingerprinter&) = delete;
  std::string operator()(std::string_view method, std::string_view path, std::string_view body) const;

 private:
  struct Keyed;
  std::unique_ptr<Keyed> keyed_;
};

std::string new_ledger_secret();

}  // namespace payretry
