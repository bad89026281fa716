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
#include <vector>

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
  // How long a kept-alive connection may sit idle and still be reused, in
  // seconds (libcurl's CURLOPT_MAXAGE_CONN; 118 is its default, set here so
  // that the concurrent transport knows which idle connections libcurl will
  // still hand out).
  long max_idle_connection_age_s = 118;
};

// One libcurl easy handle and the state of the exchange it carries. The
// handle is made and given every option that never changes once (the
// client's TLS, proxy, protocol and callback settings); each request then
// sets only what is its own (URL, method, body, headers, timeouts), so a
// pooled handle costs no option parsing and no allocation per payment
// beyond libcurl's own. Between requests it holds no pointer into a finished
// one (finish() clears the headers, body and gate).
class CurlTransfer {
 public:
  explicit CurlTransfer(const CurlOptions& options);
  ~CurlTransfer();
  CurlTransfer(const CurlTransfer&) = delete;
  CurlTransfer& operator=(const CurlTransfer&) = delete;

  CURL* handle() const { return h_; }
  // Whether the prepared request may share a connection with others
  // (HTTP/2 configured and a TLS URL); otherwise one request per connection.
  bool multiplexes() const { return multiplexes_; }
  // Sets this request's own options. The request (its body, headers and
  // gate) is borrowed and must outlive the transfer.
  void prepare(const HttpRequest& request);
  // Reads what happened once libcurl is done with the transfer, then lets go
  // of the request.
  TransportResult finish(CURLcode rc);

  // For the callbacks.
  HttpResponse response;
  size_t max_body = 0;
  bool too_large = false;
  int prereq_calls = 0;
  bool replay_blocked = false;
  const std::function<std::string()>* may_start = nullptr;  // the request's gate, asked in the first prereq call
  std::string refused;                                      // why may_start said no
  // Steady-clock milliseconds: when this transfer began opening a connection
  // of its own, and when its request was let through the gate; -1: not yet
  // (a transfer handed a kept-alive connection opens none).
  int64_t connect_started_ms = -1;
  int64_t left_line_ms = -1;

  // For an owner that times its transfers itself (the concurrent transport,
  // whose requests may wait in line for a connection): libcurl's own timeout
  // is then only a backstop past the owner's, and `on_leaving(leaving_owner)`
  // is called once the gate lets the request through.
  bool owner_times = false;
  void (*on_leaving)(void* owner) = nullptr;
  void* leaving_owner = nullptr;

 private:
  void set_headers(const Headers& headers);

  CURL* h_ = nullptr;
  bool tls_pipewait_ = false;  // HTTP/2 configured: wait for a connection that multiplexes (TLS only)
  bool multiplexes_ = false;   // for the URL last given to libcurl
  std::string url_;            // the URL last given to libcurl (re-set only when it changes)
  int64_t connect_timeout_ms_ = -1, timeout_ms_ = -1;
  // The request's header lines, NUL-separated, and list nodes pointing into
  // them: libcurl only reads a header list (CURLOPT_HTTPHEADER), so the
  // list is ours, reused across requests, with no allocation per line.
  std::string header_text_;
  std::vector<size_t> header_starts_;
  std::vector<curl_slist> header_nodes_;
  char errbuf_[CURL_ERROR_SIZE] = {0};
  std::chrono::steady_clock::time_point started_;
};

// curl_global_init, once per process, before the first handle.
void curl_global_init_once();

// The steady clock in milliseconds, as CurlTransfer's times are read.
int64_t steady_now_ms();

}  // namespace payretry
