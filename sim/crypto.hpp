// The primitives behind the providers' signatures: RSA-SHA256 (PKCS#1 v1.5) with PEM keys,
// base64, and unguessable random text for nonces and tokens. OpenSSL's EVP API underneath; its
// types stay out of this header.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace payretry_sim {

// An RSA key, private or public. Immutable once loaded, so workers share it freely.
class RsaKey {
 public:
  // PKCS#8 (or traditional) private key PEM. Throws std::invalid_argument naming the file.
  static RsaKey private_pem_file(const std::string& path);
  // SubjectPublicKeyInfo public key PEM. Throws std::invalid_argument naming the file.
  static RsaKey public_pem_file(const std::string& path);

  // base64(RSA-SHA256(message)); needs a private key. Throws std::runtime_error if OpenSSL fails.
  std::string sign(std::string_view message) const;
  // True when signature_b64 is base64 of a valid RSA-SHA256 signature of message.
  bool verify(std::string_view message, std::string_view signature_b64) const;

 private:
  explicit RsaKey(std::shared_ptr<evp_pkey_st> key) : key_(std::move(key)) {}
  std::shared_ptr<evp_pkey_st> key_;
};

// Standard base64 with '=' padding.
std::string base64_encode(std::string_view bytes);
// Strict standard base64 (padding required, no whitespace). False on anything else.
bool base64_decode(std::string_view text, std::string* bytes);

// Lower-case hex of HMAC-SHA256(secret, message).
std::string hmac_sha256_hex(std::string_view secret, std::string_view message);

// HMAC-SHA256(secret, message), the 32 raw bytes (Square and Adyen write them in base64).
std::string hmac_sha256(std::string_view secret, std::string_view message);

// AEAD_AES_256_GCM as WeChat Pay seals a notification's resource: ciphertext followed by the
// 16-byte tag. `key` must be 32 bytes. Throws std::invalid_argument / std::runtime_error.
std::string aes_256_gcm_seal(std::string_view key, std::string_view nonce, std::string_view associated,
                             std::string_view plaintext);

// `bytes` random bytes from OpenSSL's CSPRNG, as lower-case hex (2 * bytes characters).
std::string random_hex(std::size_t bytes);

}  // namespace payretry_sim
