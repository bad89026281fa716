// A throwaway self-signed certificate for 127.0.0.1, made at test time so no
// private key lives in the repository, and a TLS server context holding it.
#pragma once
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

namespace payretry_hostile {

struct SelfSigned {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{nullptr, EVP_PKEY_free};
  std::unique_ptr<X509, decltype(&X509_free)> cert{nullptr, X509_free};
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx{nullptr, SSL_CTX_free};

  SelfSigned() {
    key.reset(EVP_EC_gen("P-256"));
    cert.reset(X509_new());
    if (!key || !cert) throw std::runtime_error("self-signed: key or cert");
    X509_set_version(cert.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 3600);
    X509_set_pubkey(cert.get(), key.get());
    X509_NAME* name = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
    X509_set_issuer_name(cert.get(), name);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, cert.get(), cert.get(), nullptr, nullptr, 0);
    if (X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, "IP:127.0.0.1")) {
      X509_add_ext(cert.get(), ext, -1);
      X509_EXTENSION_free(ext);
    }
    if (!X509_sign(cert.get(), key.get(), EVP_sha256())) throw std::runtime_error("self-signed: sign");
    ctx.reset(SSL_CTX_new(TLS_server_method()));
    if (!ctx || SSL_CTX_use_certificate(ctx.get(), cert.get()) != 1 || SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1)
      throw std::runtime_error("self-signed: server context");
  }

  // Writes the certificate (PEM) to `path`, for a client's ca_file.
  void write_pem(const std::string& path) const {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f || PEM_write_X509(f, cert.get()) != 1) throw std::runtime_error("self-signed: write " + path);
    std::fclose(f);
  }
};

}  // namespace payretry_hostile
