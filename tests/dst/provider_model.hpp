// The modelled payment provider: an in-process idempotency store with the
// semantics real providers document (Stripe's, chiefly), and the faults they
// and the network between add. It is the simulation's ground truth: what it
// charged is what happened, whatever the client believes.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "transport.hpp"

namespace payretry::dst {

enum class Fault {
  none,
  refuse,               // connect refused: nothing written
  reset_before,         // written, reset before the provider read it
  timeout_before,       // written, stuck before processing, client times out
  lost_response,        // processed, then the connection resets
  timeout_after,        // processed, the answer never arrives in time
  slow_processing,      // processing takes longer than the attempt: same key gets 409 meanwhile
  throttled,            // 429 with a (possibly hostile) Retry-After, before processing
  unavailable,          // 503 before processing, sometimes with Retry-After
  error_after,          // processed (charged), then a 500; the stored answer stays the 200
  error_stored,         // processed (charged), and the 500 itself is stored and replayed
  conflict_storm,       // 409 whatever the key's state
  crash_before_send,    // the client process dies before any byte leaves
  crash_after_process,  // the provider processed it, then the client process dies
};
const char* fault_name(Fault f);

// What a Retry-After header the provider sent should mean, decided by the
// model from how it built the header, not by the parser under test.
struct RetryAfterTruth {
  std::string header;            // empty: no header
  std::optional<int64_t> ms;     // nullopt: not a valid delay, must be ignored
};

struct ProviderReply {
  TransportResult result;
  RetryAfterTruth retry_after;
  bool crash = false;            // the client dies now (after any processing)
};

class ProviderModel {
 public:
  // Orders whose payment the card issuer declines (decided per schedule).
  std::map<std::string, bool> declines;
  // How long a key is remembered after its first request (0: forever).
  // After that a same-key request is a new payment, as at a real provider.
  int64_t retention_ms = 0;

  // One request at monotonic `now_mono` (Unix `now_unix`) with the fault
  // `f`; `latency_ms` is how long the answer takes (a timeout if longer than
  // the request's own). `ra_kind` picks the Retry-After variant for 429/503.
  ProviderReply handle(const HttpRequest& req, Fault f, int64_t now_mono, int64_t now_unix, int64_t latency_ms,
                       int ra_kind, int64_t slow_ms);

  // Lets every processing still running finish, as it would after the run.
  void finish_all();

  struct KeyState {
    std::string order_id;
    std::string body;
    int64_t first_seen = 0;      // monotonic ms of the first request
    bool processing = false;     // started, not yet done
    int64_t done_at = 0;         // monotonic ms when processing completes
    bool charge_on_done = false;
    int status = 0;              // stored answer
    std::string stored_body;
  };
  std::map<std::string, KeyState> keys;
  std::map<std::string, int> charges;       // by order id

 private:
  void complete(KeyState& k);
  void process_new(const std::string& key, const std::string& order, std::string_view body, int64_t now,
                   int64_t slow_ms);
};

// Builds the Retry-After variant `kind` at Unix time `now_unix`.
RetryAfterTruth make_retry_after(int kind, int64_t now_unix);
inline constexpr int kRetryAfterKinds = 14;

}  // namespace payretry::dst
