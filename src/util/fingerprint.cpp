#include "fingerprint.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <mutex>
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

// What the MAC covers. Length-prefix each part so that ("a", "bc") and
// ("ab", "c") differ.
std::string message_of(std::string_view method, std::string_view path, std::string_view body) {
  std::string msg;
  msg.reserve(method.size() + path.size() + body.size() + 64);
  for (std::string_view part : {method, path, body}) {
    msg += std::to_string(part.size());
    msg += ':';
    msg.append(part.data(), part.size());
  }
  return msg;
}

struct MacDeleter {
  void operator()(EVP_MAC* m) const { EVP_MAC_free(m); }
};
struct MacCtxDeleter {
  void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
};
using MacCtxPtr = std::unique_ptr<EVP_MAC_CTX, MacCtxDeleter>;

}  // namespace

struct Fingerprinter::Keyed {
  // HMAC-SHA256 with the secret set. EVP_MAC_init without a key starts a new
  // MAC under the key already set (cheaper than a copy of the context); the
  // mutex gives each call the context to itself.
  std::mutex mu;
  MacCtxPtr ctx;
};

Fingerprinter::Fingerprinter(std::string_view secret) : keyed_(std::make_unique<Keyed>()) {
  std::unique_ptr<EVP_MAC, MacDeleter> mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
  if (!mac) throw std::runtime_error("HMAC-SHA256 unavailable");
  keyed_->ctx.reset(EVP_MAC_CTX_new(mac.get()));
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_construct_end()};
  if (!keyed_->ctx ||
      !EVP_MAC_init(keyed_->ctx.get(), reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), params))
    throw std::runtime_error("HMAC-SHA256 failed");
}

Fingerprinter::~Fingerprinter() = default;

std::string Fingerprinter::operator()(std::string_view method, std::string_view path, std::string_view body) const {
  const std::string msg = message_of(method, path, body);
  unsigned char out[EVP_MAX_MD_SIZE];
  size_t len = 0;
  {
    std::lock_guard<std::mutex> lock(keyed_->mu);
    EVP_MAC_CTX* ctx = keyed_->ctx.get();
    if (!EVP_MAC_init(ctx, nullptr, 0, nullptr) ||
        !EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(msg.data()), msg.size()) ||
        !EVP_MAC_final(ctx, out, &len, sizeof out))
      throw std::runtime_error("HMAC-SHA256 failed");
  }
  return hex(out, len);
}

std::string request_fingerprint(std::string_view secret, std::string_view method, std::string_view path,
                                std::string_view body) {
  const std::string msg = message_of(method, path, body);
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
