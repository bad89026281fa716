// The transport limit: raw libcurl multi posting the same JSON bodies with the same
// Idempotency-Key header as payretry, K transfers in flight on one thread, keep-alive
// connections reused, no retries, no ledger. Whatever payretry adds is measured against this.
#include <curl/curl.h>

#include <memory>

#include "bench_common.hpp"

namespace {

struct Transfer {
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string body;
  std::string response;
  long index = -1;
  bench::Clock::time_point started;
};

size_t on_data(char* p, size_t size, size_t n, void* user) {
  static_cast<Transfer*>(user)->response.append(p, size * n);
  return size * n;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args a = bench::parse_args(argc, argv, "");
  curl_global_init(CURL_GLOBAL_DEFAULT);
  CURLM* multi = curl_multi_init();
  curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, a.inflight + 16);
  const std::string url = a.url + "/v1/payments";

  std::vector<Transfer> slots(static_cast<std::size_t>(a.seconds > 0 ? a.inflight : std::min(a.inflight, a.payments)));
  bench::Meter meter(a);
  long next = 0, running_transfers = 0;

  auto start_one = [&](Transfer& t) {
    const long i = next++;
    const std::string order = a.prefix + std::to_string(i);
    t.index = i;
    t.body = bench::body_for(order);
    t.response.clear();
    if (!t.easy) {
      t.easy = curl_easy_init();
      curl_easy_setopt(t.easy, CURLOPT_URL, url.c_str());
      curl_easy_setopt(t.easy, CURLOPT_WRITEFUNCTION, on_data);
      curl_easy_setopt(t.easy, CURLOPT_WRITEDATA, &t);
      curl_easy_setopt(t.easy, CURLOPT_PRIVATE, &t);
      curl_easy_setopt(t.easy, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(t.easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
      curl_easy_setopt(t.easy, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
      curl_easy_setopt(t.easy, CURLOPT_TIMEOUT_MS, 10000L);
      if (!a.ca_file.empty()) curl_easy_setopt(t.easy, CURLOPT_CAINFO, a.ca_file.c_str());
    }
    curl_slist_free_all(t.headers);
    t.headers = curl_slist_append(nullptr, "Content-Type: application/json");
    t.headers = curl_slist_append(t.headers, ("Idempotency-Key: key-" + order).c_str());
    t.headers = curl_slist_append(t.headers, "Expect:");
    curl_easy_setopt(t.easy, CURLOPT_HTTPHEADER, t.headers);
    curl_easy_setopt(t.easy, CURLOPT_POSTFIELDS, t.body.data());
    curl_easy_setopt(t.easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t.body.size()));
    t.started = bench::Clock::now();
    curl_multi_add_handle(multi, t.easy);
    ++running_transfers;
  };

  meter.begin();
  for (auto& t : slots) start_one(t);
  while (running_transfers > 0) {
    int running = 0;
    curl_multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
      long status = 0;
      curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
      const CURLcode rc = m->data.result;
      curl_multi_remove_handle(multi, m->easy_handle);
      --running_transfers;
      meter.done(bench::ms_between(t->started, bench::Clock::now()),
                 rc != CURLE_OK    ? std::string("transport_error")
                 : status == 200 ? std::string("succeeded")
                 : status == 402 ? std::string("failed")
                                 : "http_" + std::to_string(status));
      if (meter.may_start(next)) start_one(*t);
    }
    if (running_transfers > 0) curl_multi_poll(multi, nullptr, 0, 100, nullptr);
  }
  meter.finish();
  for (auto& t : slots) {
    if (t.easy) curl_easy_cleanup(t.easy);
    curl_slist_free_all(t.headers);
  }
  curl_multi_cleanup(multi);
  meter.print("curl-multi (raw)", "-", "multi");
  curl_global_cleanup();
  return 0;
}
