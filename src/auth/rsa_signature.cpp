#include "rsa_signature.hpp"

#include "base64.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include <cctype>
#include <stdexcept>

namespace payretry {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

BioPtr memory_bio(const std::string& pem) { return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

EVP_PKEY* checked_rsa(EVP_PKEY* key, const std::string& what, const char* kind) {
  if (!key) throw std::invalid_argument(what + ": not a PEM " + kind + " key");
  if (EVP_PKEY_base_id(key) != EVP_PKEY_RSA) {
    EVP_PKEY_free(key);
    throw std::invalid_argument(what + ": the key is not RSA");
  }
  return key;
}

}  // namespace

std::string random_token(size_t length) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string bytes(length, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(length)) != 1)
    throw std::runtime_error("CSPRNG failure: cannot create a nonce");
  for (char& c : bytes) c = alphabet[static_cast<unsigned char>(c) % 36];
  return bytes;
}

void RsaKey::Free::operator()(void* k) const { EVP_PKEY_free(static_cast<EVP_PKEY*>(k)); }

RsaKey RsaKey::private_from_pem(const std::string& pem, const std::string& what) {
  BioPtr bio = memory_bio(pem);
  EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  RsaKey k;
  k.key_.reset(checked_rsa(key, what, "private"), Free{});
  return k;
}

RsaKey RsaKey::public_from_pem(const std::string& pem, const std::string& what) {
  BioPtr bio = memory_bio(pem);
  EVP_PKEY* key = bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  if (!key) {
    // A platform certificate instead of a bare public key.
    BioPtr again = memory_bio(pem);
    if (X509* cert = again ? PEM_read_bio_X509(again.get(), nullptr, nullptr, nullptr) : nullptr) {
      key = X509_get_pubkey(cert);
      X509_free(cert);
    }
  }
  RsaKey k;
  k.key_.reset(checked_rsa(key, what, "public"), Free{});
  return k;
}

std::string RsaKey::sign_base64(std::string_view message) const {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  EVP_PKEY* key = static_cast<EVP_PKEY*>(key_.get());
  size_t len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1)
    throw std::runtime_error("RSA-SHA256 signing failed");
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1)
    throw std::runtime_error("RSA-SHA256 signing failed");
  sig.resize(len);
  return base64_encode(sig);
}

bool RsaKey::verifies(std::string_view message, std::string_view signature_b64) const {
  std::string sig;
  if (!base64_decode(signature_b64, sig) || sig.empty()) return false;
  MdCtxPtr ctx(EVP_MD_CTX_new());
  EVP_PKEY* key = static_cast<EVP_PKEY*>(key_.get());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key) != 1) return false;
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                          reinterpret_cast<const unsigned char*>(message.data()), message.size()) == 1;
}

}  // namespace payretry
