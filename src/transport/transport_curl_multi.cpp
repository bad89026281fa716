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

CurlMultiTransport::~CurlMultiTransport() {
  for (CURL* h : idle_easy_) curl_easy_cleanup(h);
  curl_multi_cleanup(multi_);
}

void CurlMultiTransport::start(const HttpRequest& request, void* tag) {
  auto t = std::make_unique<Transfer>();
  t->tag = tag;
  CURL* h = acquire_easy();
  try {
    t->curl.prepare(h, request, options_);
  } catch (...) {
    release_easy(h);  // nothing was handed to libcurl
    throw;
  }
  curl_easy_setopt(h, CURLOPT_PRIVATE, t.get());
  if (curl_multi_add_handle(multi_, h) != CURLM_OK) {
    // Nothing was handed to libcurl, so nothing was sent.
    release_easy(h);
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
    try {
      d.result = t->curl.finish(h, rc);
    } catch (...) {
      // The response could not be read (out of memory): the request went
      // out, so the provider may have acted on it.
      d.result = TransportResult{};
      d.result.failure = TransportFailure::other;
      d.result.request_written = true;
      d.result.error_text = "could not read the response";
    }
    release_easy(h);
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

CURL* CurlMultiTransport::acquire_easy() {
  if (!idle_easy_.empty()) {
    CURL* h = idle_easy_.back();
    idle_easy_.pop_back();
    return h;
  }
  CURL* h = curl_easy_init();
  if (!h) throw std::bad_alloc();
  return h;
}

// An idle handle keeps no pointer into a finished payment (its headers,
// body, PRIVATE): reset before it waits for the next one.
void CurlMultiTransport::release_easy(CURL* h) {
  curl_easy_reset(h);
  try {
    idle_easy_.push_back(h);
  } catch (...) {
    curl_easy_cleanup(h);
  }
}

}  // namespace payretry
