#include "fingerprint.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace payretry {
namespace {

std::string hex(const unsigned char* p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(digits[p[i] >> 4]);
    out.push_back(digits[p[i] & 0xF]);
  }
  return out;
}

}  // namespace

std::string request_fingerprint(std::string_view secret, std::string_view method, std::string_view path,
                                std::string_view body) {
  // Length-prefix each part so that ("a", "bc") and ("ab", "c") differ.
  std::string msg;
  msg.reserve(method.size() + path.size() + body.size() + 64);
  for (std::string_view part : {method, path, body}) {
    msg += std::to_string(part.size());
    msg += ':';
    msg.append(part.data(), part.size());
  }
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
            reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), mac, &len))
    throw std::runtime_error("HMAC-SHA256 failed");
  return hex(mac, len);
}

std::string new_ledger_secret() {
  unsigned char b[32];
  if (RAND_bytes(b, sizeof b) != 1) throw std::runtime_error("CSPRNG failure: cannot create a ledger secret");
  return hex(b, sizeof b);
}

}  // namespace payretry
