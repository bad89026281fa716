// RSA-SHA256 signatures (PKCS#1 v1.5), as WeChat Pay v3 and
// Alipay's RSA2 use them on requests and on answers. Keys are PEM text:
// PKCS#8 or PKCS#1 private keys, SubjectPublicKeyInfo public keys (an X.509
// certificate's public key is accepted too).
#pragma once
#include <memory>
#include <string>
#include <string_view>

namespace payretry {

// Letters and digits from the CSPRNG, for nonces.
std::string random_token(size_t length);

class RsaKey {
 public:
  // Throw std::invalid_argument naming `what` when the PEM holds no usable
  // RSA key of that kind.
  static RsaKey private_from_pem(const std::string& pem, const std::string& what);
  static RsaKey public_from_pem(const std::string& pem, const std::string& what);

  // base64(RSA-SHA256(message)); throws std::runtime_error if OpenSSL fails.
  std::string sign_base64(std::string_view message) const;
  // Whether `signature_b64` is this key's signature of `message`.
  bool verifies(std::string_view message, std::string_view signature_b64) const;

 private:
  struct Free {
    void operator()(void* k) const;
  };
  std::shared_ptr<void> key_;  // EVP_PKEY, shared: keys are immutable once loaded
};

}  // namespace payretry
