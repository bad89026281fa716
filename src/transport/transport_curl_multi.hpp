// AsyncTransport over libcurl's multi interface: one connection pool per
// client (bounded per host, kept alive), HTTP/2 multiplexing over TLS where
// the provider offers it, every transfer set up exactly as the threaded
// transport does (CurlTransfer), so both send the same requests and judge
// failures the same way.
#pragma once
#include <curl/curl.h>

#include <memory>
#include <vector>

#include "async_transport.hpp"
#include "curl_transfer.hpp"

namespace payretry {

class CurlMultiTransport final : public AsyncTransport {
 public:
  CurlMultiTransport(CurlOptions options, long max_connections);
  ~CurlMultiTransport() override;
  CurlMultiTransport(const CurlMultiTransport&) = delete;
  CurlMultiTransport& operator=(const CurlMultiTransport&) = delete;

  void start(const HttpRequest& request, void* tag) override;
  void perform(std::vector<Done>& done) override;
  void wait(int64_t max_ms) override;
  void wakeup() override;
  int64_t next_timeout_ms() override;

 private:
  // A configured easy handle and the payment's tag while it carries one.
  // libcurl's PRIVATE points at it for the handle's whole life.
  struct Transfer {
    explicit Transfer(const CurlOptions& options);
    CurlTransfer curl;
    void* tag = nullptr;
  };
  std::unique_ptr<Transfer> acquire();
  void release(std::unique_ptr<Transfer> t);

  const CurlOptions options_;
  CURLM* multi_ = nullptr;
  std::vector<std::unique_ptr<Transfer>> idle_;
  // Transfers that failed before libcurl got them: reported by perform().
  std::vector<Done> failed_to_start_;
};

}  // namespace payretry
