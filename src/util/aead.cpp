#include "aead.hpp"

#include <openssl/evp.h>

#include <climits>
#include <memory>

namespace payretry {
namespace {

struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};

constexpr size_t kTagBytes = 16;

const unsigned char* bytes(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

}  // namespace

bool aes_256_gcm_decrypt(std::string_view key, std::string_view nonce, std::string_view associated_data,
                         std::string_view ciphertext_and_tag, std::string& plaintext) {
  plaintext.clear();
  if (key.size() != 32 || nonce.empty() || nonce.size() > 256 || ciphertext_and_tag.size() < kTagBytes ||
      ciphertext_and_tag.size() > static_cast<size_t>(INT_MAX) || associated_data.size() > static_cast<size_t>(INT_MAX))
    return false;
  const std::string_view ciphertext = ciphertext_and_tag.substr(0, ciphertext_and_tag.size() - kTagBytes);
  std::string tag(ciphertext_and_tag.substr(ciphertext.size()));
  std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree> ctx(EVP_CIPHER_CTX_new());
  if (!ctx || EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN, static_cast<int>(nonce.size()), nullptr) != 1 ||
      EVP_DecryptInit_ex(ctx.get(), nullptr, nullptr, bytes(key), bytes(nonce)) != 1)
    return false;
  int len = 0;
  if (!associated_data.empty() &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, bytes(associated_data), static_cast<int>(associated_data.size())) != 1)
    return false;
  std::string out(ciphertext.size() + kTagBytes, '\0');
  int written = 0;
  if (!ciphertext.empty()) {
    if (EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &len, bytes(ciphertext),
                          static_cast<int>(ciphertext.size())) != 1)
      return false;
    written = len;
  }
  if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagBytes), tag.data()) != 1 ||
      EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(out.data()) + written, &len) != 1)
    return false;  // the tag does not authenticate: the output is dropped with `out`
  out.resize(static_cast<size_t>(written + len));
  plaintext = std::move(out);
  return true;
}

}  // namespace payretry
