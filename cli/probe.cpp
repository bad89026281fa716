#include "probe.hpp"

#include <curl/curl.h>

#include <chrono>
#include <memory>

namespace cli {
namespace {

// The answer's body is not wanted: reachability is the status line.
size_t discard(char*, size_t size, size_t n, void*) { return size * n; }

}  // namespace

ProbeResult probe(const ProbeTarget& t) {
  ProbeResult r;
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) {
    r.error = "libcurl could not start";
    return r;
  }
  char error[CURL_ERROR_SIZE] = "";
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, (t.url + "/").c_str());
  curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(t.timeout_ms));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(t.timeout_ms));
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, t.tls_verify ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, t.tls_verify ? 2L : 0L);
  if (!t.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, t.ca_file.c_str());
  // "" turns off the environment's proxies; a named one is the only way out.
  curl_easy_setopt(c, CURLOPT_PROXY, t.proxy.c_str());
  curl_easy_setopt(c, CURLOPT_USERAGENT, "payretry-check");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  const auto start = std::chrono::steady_clock::now();
  const CURLcode rc = curl_easy_perform(c);
  r.elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  if (rc != CURLE_OK) {
    r.error = *error ? error : curl_easy_strerror(rc);
    return r;
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.http_status);
  r.reachable = r.http_status > 0;
  if (!r.reachable) r.error = "no HTTP answer";
  return r;
}

}  // namespace cli
