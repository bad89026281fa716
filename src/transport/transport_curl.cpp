#include "transport_curl.hpp"

namespace payretry {

CurlTransport::CurlTransport(CurlOptions options) : options_(std::move(options)) { curl_global_init_once(); }

CurlTransport::~CurlTransport() = default;

std::unique_ptr<CurlTransfer> CurlTransport::acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<CurlTransfer> t = std::move(idle_.back());
      idle_.pop_back();
      return t;
    }
  }
  return std::make_unique<CurlTransfer>(options_);
}

void CurlTransport::release(std::unique_ptr<CurlTransfer> t) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(t));
}

TransportResult CurlTransport::post(const HttpRequest& req) {
  std::unique_ptr<CurlTransfer> t = acquire();
  t->prepare(req);
  TransportResult out = t->finish(curl_easy_perform(t->handle()));
  // A handle whose transfer failed may hold a half-dead connection; libcurl
  // closes those itself, so the handle is safe to reuse.
  release(std::move(t));
  return out;
}

}  // namespace payretry
