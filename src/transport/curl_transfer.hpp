// One HTTP exchange on a libcurl easy handle: the options every payretry
// request carries, the callbacks that collect the answer, and the reading of
// libcurl's result into a TransportResult. Shared by the threaded transport
// (curl_easy_perform) and the concurrent engine (curl_multi), so that both
// send exactly the same requests and judge failures the same way.
#pragma once
#include <curl/curl.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "transport.hpp"

namespace payretry {

struct CurlOptions {
  bool verify_tls = true;
  std::string ca_file;                 // empty: the system store
  size_t max_response_bytes = 4u << 20;
  // HTTP/2 over TLS when the server offers it (ALPN), so that many payments
  // share one connection; cleartext stays HTTP/1.1.
  bool http2 = false;
  // The only proxy to use; empty: none, and the environment's proxy
  // variables are ignored (they would carry card data and credentials to a
  // host the config never named).
  std::string proxy;
};

class CurlTransfer {
 public:
  CurlTransfer() = default;
  CurlTransfer(const CurlTransfer&) = delete;
  CurlTransfer& operator=(const CurlTransfer&) = delete;

  // Sets every option of `h` for `request` (after curl_easy_reset). The
  // request's body is borrowed and must outlive the transfer; so must this.
  void prepare(CURL* h, const HttpRequest& request, const CurlOptions& options);
  // Reads what happened once libcurl is done with the transfer.
  TransportResult finish(CURL* h, CURLcode rc);

  // For the callbacks.
  HttpResponse response;
  size_t max_body = 0;
  bool too_large = false;
  int prereq_calls = 0;
  bool replay_blocked = false;
  std::function<std::string()> may_start;  // the request's gate, asked in the first prereq call
  std::string refused;                     // why may_start said no

 private:
  struct SlistDeleter {
    void operator()(curl_slist* l) const { curl_slist_free_all(l); }
  };
  std::unique_ptr<curl_slist, SlistDeleter> headers_;
  char errbuf_[CURL_ERROR_SIZE] = {0};
  std::chrono::steady_clock::time_point started_;
};

// curl_global_init, once per process, before the first handle.
void curl_global_init_once();

}  // namespace payretry
