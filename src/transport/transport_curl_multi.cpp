#include "transport_curl_multi.hpp"

#include <algorithm>
#include <new>

namespace payretry {

CurlMultiTransport::CurlMultiTransport(CurlOptions options, long max_connections) : options_(std::move(options)) {
  curl_global_init_once();
  multi_ = curl_multi_init();
  if (!multi_) throw std::bad_alloc();
  // A bounded pool per host: beyond it, transfers wait in libcurl's queue
  // for a free connection instead of opening a handshake per payment. (A
  // transfer that waits there long is still checked at the last moment: the
  // request's may_start gate runs when its connection is ready.)
  curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, max_connections);
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, max_connections);
  curl_multi_setopt(multi_, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
}

// The engine drains every transfer before it lets the transport go; the idle
// ones are freed here.
CurlMultiTransport::~CurlMultiTransport() {
  idle_.clear();
  curl_multi_cleanup(multi_);
}

CurlMultiTransport::Transfer::Transfer(const CurlOptions& options) : curl(options) {
  curl_easy_setopt(curl.handle(), CURLOPT_PRIVATE, this);
}

void CurlMultiTransport::start(const HttpRequest& request, void* tag) {
  std::unique_ptr<Transfer> t = acquire();
  t->tag = tag;
  t->curl.prepare(request);  // throws only before libcurl has the handle: nothing sent
  if (curl_multi_add_handle(multi_, t->curl.handle()) != CURLM_OK) {
    // Nothing was handed to libcurl, so nothing was sent.
    (void)t->curl.finish(CURLE_FAILED_INIT);  // lets go of the request
    release(std::move(t));
    Done d;
    d.tag = tag;
    d.result.failure = TransportFailure::other;
    d.result.error_text = "curl_multi_add_handle failed";
    failed_to_start_.push_back(std::move(d));
    return;
  }
  (void)t.release();  // owned through CURLOPT_PRIVATE until perform() reports it
}

void CurlMultiTransport::perform(std::vector<Done>& done) {
  for (Done& d : failed_to_start_) done.push_back(std::move(d));
  failed_to_start_.clear();
  int running = 0;
  curl_multi_perform(multi_, &running);
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
    if (m->msg != CURLMSG_DONE) continue;
    CURL* h = m->easy_handle;
    const CURLcode rc = m->data.result;
    Transfer* raw = nullptr;
    curl_easy_getinfo(h, CURLINFO_PRIVATE, reinterpret_cast<char**>(&raw));
    std::unique_ptr<Transfer> t(raw);
    curl_multi_remove_handle(multi_, h);
    Done d;
    d.tag = t->tag;
    t->tag = nullptr;
    try {
      d.result = t->curl.finish(rc);
    } catch (...) {
      // The response could not be read (out of memory): the request went
      // out, so the provider may have acted on it.
      d.result = TransportResult{};
      d.result.failure = TransportFailure::other;
      d.result.request_written = true;
      d.result.error_text = "could not read the response";
    }
    release(std::move(t));
    done.push_back(std::move(d));
  }
}

void CurlMultiTransport::wait(int64_t max_ms) {
  curl_multi_poll(multi_, nullptr, 0, static_cast<int>(std::max<int64_t>(0, max_ms)), nullptr);
}

void CurlMultiTransport::wakeup() { curl_multi_wakeup(multi_); }

int64_t CurlMultiTransport::next_timeout_ms() {
  long ms = -1;
  curl_multi_timeout(multi_, &ms);
  return ms;
}

std::unique_ptr<CurlMultiTransport::Transfer> CurlMultiTransport::acquire() {
  if (!idle_.empty()) {
    std::unique_ptr<Transfer> t = std::move(idle_.back());
    idle_.pop_back();
    return t;
  }
  return std::make_unique<Transfer>(options_);
}

// Kept configured for the next payment (finish() let go of this one's
// headers, body and gate); dropped if the pool cannot grow.
void CurlMultiTransport::release(std::unique_ptr<Transfer> t) {
  try {
    idle_.push_back(std::move(t));
  } catch (...) {
  }
}

}  // namespace payretry
