#include "curl_transfer.hpp"

#include <strings.h>

#include <mutex>
#include <stdexcept>

namespace payretry {
namespace {

size_t on_body(char* data, size_t size, size_t nmemb, void* user) {
  auto* ex = static_cast<CurlTransfer*>(user);
  const size_t n = size * nmemb;
  if (ex->response.body.size() + n > ex->max_body) {
    ex->too_large = true;
    return 0;  // makes libcurl fail with CURLE_WRITE_ERROR
  }
  ex->response.body.append(data, n);
  return n;
}

size_t on_header(char* data, size_t size, size_t nmemb, void* user) {
  auto* ex = static_cast<CurlTransfer*>(user);
  const size_t n = size * nmemb;
  std::string_view line(data, n);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  // A new status line (after 100 Continue) starts a new header block.
  if (line.rfind("HTTP/", 0) == 0) {
    ex->response.headers.clear();
    return n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return n;
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  ex->response.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  return n;
}

// libcurl calls this once a connection is ready and before the request is
// written. A second call in one transfer is libcurl's own silent replay of a
// POST after a reused connection died (lib/transfer.c Curl_retry_request):
// the provider may already hold the first copy, and our attempt log would lie
// about how many requests were sent. We refuse it; the engine then decides,
// as a visible attempt, whether to retry with the same key.
//
// The first call is also the last moment before a byte of the request
// leaves: the payment's deadline and lease are checked here, not when the
// transfer was queued (a concurrent engine may have spent seconds on other
// payments, or waited for a free connection, in between).
int on_prereq(void* user, char*, char*, int, int) {
  auto* ex = static_cast<CurlTransfer*>(user);
  if (++ex->prereq_calls > 1) {
    ex->replay_blocked = true;
    return CURL_PREREQFUNC_ABORT;
  }
  if (ex->may_start) {
    try {
      ex->refused = (*ex->may_start)();
    } catch (...) {
      ex->refused = "the send check failed";
    }
    if (!ex->refused.empty()) return CURL_PREREQFUNC_ABORT;
  }
  ex->left_line_ms = steady_now_ms();
  if (ex->on_leaving) ex->on_leaving(ex->leaving_owner);
  return CURL_PREREQFUNC_OK;
}

// Called for each socket libcurl opens for this transfer's own connection,
// before it connects: the attempt's clock starts here, not while the
// transfer waited in line for a free connection.
int on_sockopt(void* user, curl_socket_t, curlsocktype purpose) {
  auto* ex = static_cast<CurlTransfer*>(user);
  if (purpose == CURLSOCKTYPE_IPCXN && ex->connect_started_ms < 0) ex->connect_started_ms = steady_now_ms();
  return CURL_SOCKOPT_OK;
}

}  // namespace

// libcurl's smallest receive buffer (its READBUFFER_MIN; the default is
// 16 KB). libcurl 7.x allocates it as each transfer starts and frees it as
// the transfer ends (lib/multi.c: Curl_preconnect, multi_done), so every
// payment in flight holds one: at 1 KB rather than 4, about 3 KB less of
// resident memory a payment in flight (BENCHMARKS.md, "Memory"). An answer
// larger than the buffer (a PaymentIntent is 2-4 KB) takes more reads: over
// TLS, copies out of OpenSSL's record buffer, which cost nothing measurable;
// over plain HTTP, a poll and a recv for each further KB.
constexpr long kReceiveBufferBytes = 1024;

int64_t steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void curl_global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw std::runtime_error("curl_global_init failed");
  });
}

CurlTransfer::CurlTransfer(const CurlOptions& options) {
  h_ = curl_easy_init();
  if (!h_) throw std::bad_alloc();
  CURL* h = h_;
  max_body = options.max_response_bytes;
  tls_pipewait_ = options.http2;
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  // "" disables every proxy, the environment's included; and a configured
  // proxy is used for every host, whatever NO_PROXY says.
  curl_easy_setopt(h, CURLOPT_PROXY, options.proxy.c_str());
  curl_easy_setopt(h, CURLOPT_NOPROXY, "");
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION,
                   static_cast<long>(options.http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);  // never re-POST to another URL
  curl_easy_setopt(h, CURLOPT_MAXAGE_CONN, options.max_idle_connection_age_s);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_BUFFERSIZE, kReceiveBufferBytes);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, options.verify_tls ? 1L : 0L);
  curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, options.verify_tls ? 2L : 0L);
  if (!options.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, options.ca_file.c_str());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, this);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, this);
  curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, on_prereq);
  curl_easy_setopt(h, CURLOPT_PREREQDATA, this);
  curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, on_sockopt);
  curl_easy_setopt(h, CURLOPT_SOCKOPTDATA, this);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf_);
}

CurlTransfer::~CurlTransfer() { curl_easy_cleanup(h_); }

void CurlTransfer::set_headers(const Headers& headers) {
  // One node per header, found by where each line starts (libcurl reads a
  // line up to its first NUL, as it did from curl_slist_append's copies).
  header_text_.clear();
  header_starts_.clear();
  auto line = [&](std::string_view name, std::string_view sep, std::string_view value) {
    header_starts_.push_back(header_text_.size());
    header_text_.append(name).append(sep).append(value);
    header_text_.push_back('\0');
  };
  bool typed = false;
  for (const auto& [k, v] : headers) {
    line(k, ": ", v);
    typed = typed || strncasecmp(k.c_str(), "Content-Type", k.size() + 1) == 0;
  }
  line("Expect:", "", "");  // no 100-continue round trip; bodies are small
  // A POST without a body of ours (PayPal's void) goes without a type: libcurl
  // would otherwise name its own default, application/x-www-form-urlencoded.
  if (!typed) line("Content-Type:", "", "");
  // The text is complete (no reallocation from here): point the nodes at it.
  header_nodes_.clear();
  for (size_t at : header_starts_) header_nodes_.push_back(curl_slist{&header_text_[at], nullptr});
  for (size_t i = 0; i + 1 < header_nodes_.size(); ++i) header_nodes_[i].next = &header_nodes_[i + 1];
  curl_easy_setopt(h_, CURLOPT_HTTPHEADER, header_nodes_.data());
}

void CurlTransfer::prepare(const HttpRequest& req) {
  started_ = std::chrono::steady_clock::now();
  response.status = 0;
  response.body.clear();
  response.headers.clear();
  // The last answer's headers left with it (moved into its result): room for
  // a dozen at once, not a reallocation at the 1st, 2nd, 3rd, 5th and 9th.
  // 12 of them take 768 bytes; from 1 KB on, glibc's malloc first merges
  // every small free chunk it holds (malloc_consolidate).
  response.headers.reserve(12);
  too_large = false;
  prereq_calls = 0;
  replay_blocked = false;
  may_start = req.may_start ? &req.may_start : nullptr;
  refused.clear();
  connect_started_ms = -1;
  left_line_ms = -1;
  errbuf_[0] = 0;
  set_headers(req.headers);

  CURL* h = h_;
  if (req.url != url_) {
    curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
    // Over TLS, wait for a connection that may multiplex rather than open
    // one more. Never in cleartext: HTTP/1.1 cannot multiplex, and waiting
    // would queue every payment behind one connection.
    multiplexes_ = tls_pipewait_ && req.url.rfind("https://", 0) == 0;
    curl_easy_setopt(h, CURLOPT_PIPEWAIT, multiplexes_ ? 1L : 0L);
    url_ = req.url;
  }
  if (req.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    // The caller's buffer itself: every attempt sends exactly these bytes.
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  }
  if (req.connect_timeout_ms != connect_timeout_ms_) {
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(req.connect_timeout_ms));
    connect_timeout_ms_ = req.connect_timeout_ms;
  }
  // libcurl counts CURLOPT_TIMEOUT from the moment the transfer was added,
  // time spent in its line for a free connection included, and a transfer
  // that timed out there closes the kept-alive connection it is finally
  // handed (libcurl 7.88, multi.c). An owner that times its transfers ends
  // them itself, in line or on the wire; libcurl's timeout is then a
  // backstop that can only come later.
  int64_t timeout = req.timeout_ms;
  if (owner_times && timeout > 0) timeout += (req.wait_limit_ms > 0 ? req.wait_limit_ms : req.timeout_ms) + 1000;
  if (timeout != timeout_ms_) {
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout));
    timeout_ms_ = timeout;
  }
}

TransportResult CurlTransfer::finish(CURLcode rc) {
  CURL* h = h_;
  // Let go of the request whatever happens below: an idle handle points
  // into no finished payment.
  struct LetGo {
    CurlTransfer& t;
    ~LetGo() {
      curl_easy_setopt(t.h_, CURLOPT_HTTPHEADER, nullptr);
      curl_easy_setopt(t.h_, CURLOPT_POSTFIELDS, nullptr);
      curl_easy_setopt(t.h_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(-1));
      t.may_start = nullptr;
    }
  } let_go{*this};
  TransportResult out;
  long request_size = 0, status = 0, connects = 0;
  curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &request_size);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
  // libcurl only replays on a reused connection; the replay itself then
  // counts as a new connect, so a blocked replay proves the first was reused.
  out.reused_connection = replay_blocked || (prereq_calls > 0 && connects == 0);
  out.connections_opened = connects;
  // libcurl counts in CURLINFO_REQUEST_SIZE the request bytes it actually
  // wrote to the socket. Without a ready connection (no prereq call) nothing
  // can have been written. After one, only a send that wrote zero bytes is
  // proof of non-delivery; everything else may have reached the provider.
  out.request_written = request_size > 0 || (prereq_calls > 0 && rc != CURLE_SEND_ERROR);
  // Refused at the gate: the request was never handed to the socket.
  if (!refused.empty() && !replay_blocked) out.request_written = false;

  switch (rc) {
    case CURLE_OK:
      out.failure = TransportFailure::none;
      out.response = std::move(response);
      out.response.status = static_cast<int>(status);
      out.request_written = true;
      break;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      out.failure = TransportFailure::resolve;
      break;
    case CURLE_COULDNT_CONNECT:
      out.failure = TransportFailure::connect;
      break;
    case CURLE_SSL_CONNECT_ERROR:
      out.failure = TransportFailure::tls_handshake;
      break;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
      out.failure = TransportFailure::tls_verify;
      break;
    case CURLE_OPERATION_TIMEDOUT:
      out.failure = prereq_calls == 0 ? TransportFailure::connect_timeout : TransportFailure::timeout;
      break;
    case CURLE_ABORTED_BY_CALLBACK:
      out.failure = replay_blocked          ? TransportFailure::replay_blocked
                    : !refused.empty()      ? TransportFailure::not_started
                                            : TransportFailure::other;
      break;
    case CURLE_WRITE_ERROR:
      out.failure = too_large ? TransportFailure::response_too_large : TransportFailure::other;
      break;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_WEIRD_SERVER_REPLY:
      out.failure = TransportFailure::connection_lost;
      break;
    default:
      out.failure = TransportFailure::other;
      break;
  }
  if (out.failure == TransportFailure::not_started) {
    out.error_text = refused;
  } else if (rc != CURLE_OK) {
    out.error_text = std::string(curl_easy_strerror(rc));
    if (errbuf_[0]) out.error_text += std::string(": ") + errbuf_;
  }
  out.elapsed_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_).count();
  return out;
}

}  // namespace payretry
