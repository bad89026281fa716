#include "crypto.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>

namespace payretry_sim {

namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

std::shared_ptr<EVP_PKEY> read_pem(const std::string& path, bool private_key) {
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "r"));
  if (!f) throw std::invalid_argument("cannot read key file " + path);
  EVP_PKEY* k = private_key ? PEM_read_PrivateKey(f.get(), nullptr, nullptr, nullptr)
                            : PEM_read_PUBKEY(f.get(), nullptr, nullptr, nullptr);
  if (!k) {
    throw std::invalid_argument(std::string("not a PEM ") + (private_key ? "private" : "public") +
                                " key: " + path);
  }
  if (EVP_PKEY_base_id(k) != EVP_PKEY_RSA) {
    EVP_PKEY_free(k);
    throw std::invalid_argument("not an RSA key: " + path);
  }
  return std::shared_ptr<EVP_PKEY>(k, EVP_PKEY_free);
}

}  // namespace

RsaKey RsaKey::private_pem_file(const std::string& path) { return RsaKey(read_pem(path, true)); }
RsaKey RsaKey::public_pem_file(const std::string& path) { return RsaKey(read_pem(path, false)); }

std::string RsaKey::sign(std::string_view message) const {
  MdCtx ctx(EVP_MD_CTX_new());
  std::size_t len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1) {
    throw std::runtime_error("RSA-SHA256 signing failed");
  }
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1) {
    throw std::runtime_error("RSA-SHA256 signing failed");
  }
  sig.resize(len);
  return base64_encode(sig);
}

bool RsaKey::verify(std::string_view message, std::string_view signature_b64) const {
  std::string sig;
  if (!base64_decode(signature_b64, &sig) || sig.empty()) return false;
  MdCtx ctx(EVP_MD_CTX_new());
  return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key_.get()) == 1 &&
         EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                          reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
}

std::string base64_encode(std::string_view bytes) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                       static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (rest == 2) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

bool base64_decode(std::string_view text, std::string* bytes) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  bytes->clear();
  if (text.size() % 4 != 0) return false;
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
    if (pad == 1 && text[i + 2] == '=') return false;  // "x=y=" is not padding
    int v[4] = {0, 0, 0, 0};
    for (int k = 0; k < 4 - pad; ++k) {
      v[k] = value(text[i + k]);
      if (v[k] < 0) return false;
    }
    const uint32_t n = static_cast<uint32_t>(v[0]) << 18 | static_cast<uint32_t>(v[1]) << 12 |
                       static_cast<uint32_t>(v[2]) << 6 | static_cast<uint32_t>(v[3]);
    bytes->push_back(static_cast<char>(n >> 16));
    if (pad < 2) bytes->push_back(static_cast<char>((n >> 8) & 0xff));
    if (pad < 1) bytes->push_back(static_cast<char>(n & 0xff));
  }
  return true;
}

std::string hmac_sha256(std::string_view secret, std::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len)) {
    throw std::runtime_error("HMAC-SHA256 failed");
  }
  return std::string(reinterpret_cast<const char*>(mac), len);
}

std::string hmac_sha256_hex(std::string_view secret, std::string_view message) {
  static const char kHex[] = "0123456789abcdef";
  const std::string mac = hmac_sha256(secret, message);
  std::string out;
  out.reserve(mac.size() * 2);
  for (unsigned char c : mac) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

std::string aes_256_gcm_seal(std::string_view key, std::string_view nonce, std::string_view associated,
                             std::string_view plaintext) {
  if (key.size() != 32) throw std::invalid_argument("an AES-256-GCM key is 32 bytes");
  std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)> ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
  const auto* k = reinterpret_cast<const unsigned char*>(key.data());
  const auto* iv = reinterpret_cast<const unsigned char*>(nonce.data());
  int len = 0;
  std::string out(plaintext.size() + 16, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(nonce.size()), nullptr) != 1 ||
      EVP_EncryptInit_ex(ctx.get(), nullptr, nullptr, k, iv) != 1 ||
      (!associated.empty() &&
       EVP_EncryptUpdate(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(associated.data()),
                         static_cast<int>(associated.size())) != 1) ||
      EVP_EncryptUpdate(ctx.get(), o, &len, reinterpret_cast<const unsigned char*>(plaintext.data()),
                        static_cast<int>(plaintext.size())) != 1) {
    throw std::runtime_error("AES-256-GCM failed");
  }
  int tail = 0;
  if (EVP_EncryptFinal_ex(ctx.get(), o + len, &tail) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, 16, o + plaintext.size()) != 1) {
    throw std::runtime_error("AES-256-GCM failed");
  }
  return out;
}

std::string random_hex(std::size_t bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string raw(bytes, '\0');
  if (bytes > 0 && RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

}  // namespace payretry_sim
