// The HTTP types every layer speaks: a request as the engine builds it, a
// response as the transport received it, and why none came back. Plain
// data; the Transport interface that moves them is in transport/.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace payretry {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = "POST";    // or "GET" (a status lookup)
  std::string url;
  Headers headers;
  std::string_view body;          // borrowed: the same bytes on every attempt
  int64_t connect_timeout_ms = 0;
  // The attempt, from the start of its connection (its own connect, or the
  // moment a kept-alive one is handed to it) to its answer.
  int64_t timeout_ms = 0;
  // The request's whole time in the transport, counted from when it was
  // handed over: waiting in line for a free connection of the client's
  // bounded pool, then the attempt. Waiting in line sends nothing, so it
  // does not eat into timeout_ms; a request still in line when less than
  // send_margin_ms of it is left is ended there, nothing sent. 0: the line
  // counts inside timeout_ms (a blocking transport has no line).
  int64_t wait_limit_ms = 0;
  int64_t send_margin_ms = 0;
  // Asked once the connection is ready, immediately before the first byte
  // of the request is written; a non-empty answer (why not) stops the
  // transfer with nothing sent (TransportFailure::not_started). The payment's
  // deadline and lease are checked here, whatever the thread did meanwhile.
  std::function<std::string()> may_start;
  // Opaque to the transport and never sent: the ledger claim (fencing token)
  // this request runs under, for logs and for tests that check no byte
  // leaves under a claim that was lost.
  std::string claim;
};

// Why no usable response came back. The split that matters for payments is
// whether the request can have reached the provider (`request_written`).
enum class TransportFailure {
  none,
  resolve,            // DNS failed: nothing sent
  connect,            // refused / unreachable: nothing sent
  tls_handshake,      // TLS failed before the request was written
  tls_verify,         // certificate rejected: nothing sent, retrying cannot help
  connect_timeout,    // timed out before the connection was up
  timeout,            // timed out after the request was (maybe) written
  connection_lost,    // reset / EOF / send or receive error
  replay_blocked,     // libcurl wanted to silently re-send on a new connection; we stopped it
  not_started,        // may_start said no (deadline or lease over): nothing sent
  response_too_large,
  no_credentials,     // the authenticator could not sign or get a token: nothing sent
  other,
};

const char* transport_failure_name(TransportFailure f);

// Headers as JSON text, [["name","value"],...] in their order, "" for none:
// how the ledger keeps a payment's own submission headers. And back; a text
// that is not such an array answers nullopt.
std::string headers_to_json(const Headers& h);
std::optional<Headers> headers_from_json(std::string_view json);

struct HttpResponse {
  int status = 0;
  Headers headers;  // names as received
  std::string body;
  // Case-insensitive lookup of the last header with this name; nullptr if none.
  const std::string* header(std::string_view name) const;
};

struct TransportResult {
  TransportFailure failure = TransportFailure::none;
  // True when any byte of the request may have left this host, so the
  // provider may have acted on it. False only with proof (nothing written).
  bool request_written = false;
  bool reused_connection = false;
  long connections_opened = 0;  // new connections this transfer made (libcurl's count)
  HttpResponse response;  // meaningful when failure == none
  std::string error_text; // transport's own words, for the attempt log
  int64_t elapsed_ms = 0;
};

}  // namespace payretry
