// The libcurl transport: a pool of configured easy handles (each keeps its
// connections alive between payments) shared by the threads of one client.
#pragma once
#include <curl/curl.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "curl_transfer.hpp"
#include "transport.hpp"

namespace payretry {

class CurlTransport final : public Transport {
 public:
  explicit CurlTransport(CurlOptions options);
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  TransportResult post(const HttpRequest& request) override;

 private:
  std::unique_ptr<CurlTransfer> acquire();
  void release(std::unique_ptr<CurlTransfer> t);

  CurlOptions options_;
  std::mutex mu_;
  std::vector<std::unique_ptr<CurlTransfer>> idle_;
};

}  // namespace payretry
