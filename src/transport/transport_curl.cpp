#include "transport_curl.hpp"

namespace payretry {

CurlTransport::CurlTransport(CurlOptions options) : options_(std::move(options)) { curl_global_init_once(); }

CurlTransport::~CurlTransport() = default;

CurlTransport::Easy CurlTransport::acquire() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      Easy h = std::move(idle_.back());
      idle_.pop_back();
      return h;
    }
  }
  Easy h(curl_easy_init());
  if (!h) throw std::bad_alloc();
  return h;
}

void CurlTransport::release(Easy h) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(h));
}

TransportResult CurlTransport::post(const HttpRequest& req) {
  Easy easy = acquire();
  CURL* h = easy.get();
  // Reset options but keep the handle's live connections for reuse.
  curl_easy_reset(h);
  CurlTransfer transfer;
  transfer.prepare(h, req, options_);
  TransportResult out = transfer.finish(h, curl_easy_perform(h));
  // A handle whose transfer failed may hold a half-dead connection; libcurl
  // closes those itself, so the handle is safe to reuse.
  release(std::move(easy));
  return out;
}

}  // namespace payretry
