// The libcurl transport: a pool of easy handles (each keeps its connections
// alive between payments) shared by the threads of one client.
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
  struct EasyDeleter {
    void operator()(CURL* h) const { curl_easy_cleanup(h); }
  };
  using Easy = std::unique_ptr<CURL, EasyDeleter>;

  Easy acquire();
  void release(Easy h);

  CurlOptions options_;
  std::mutex mu_;
  std::vector<Easy> idle_;
};

}  // namespace payretry
