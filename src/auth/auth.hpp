// Authentication the provider's own SDK performs, built in, so that every
// binding gets it without a hook: an OAuth2 token fetched and renewed
// (PayPal), request signatures (WeChat Pay v3, Alipay RSA2) and the
// verification of the answers those providers sign. Fixed credentials
// (bearer, basic, an API-key header) need none of this: they are headers the
// config holds (Config::auth_headers).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "clock.hpp"
#include "config.hpp"
#include "profile.hpp"
#include "transport.hpp"

namespace payretry {

// One request about to leave, as the signer may change it.
struct OutgoingRequest {
  std::string method;       // "POST" or "GET"
  std::string base_url;     // scheme://host[/prefix]
  std::string path;         // path and query, as the profile or caller gave it
  std::string_view body;    // the exact bytes sent
  Headers headers;          // the signer appends its own
  // The URL to send to; the signer may add query parameters (Alipay).
  std::string url() const { return base_url + path; }
};

// How far an answer can be trusted.
enum class AnswerTrust {
  verified,  // signed by the provider's key
  unsigned_, // carries no signature (providers leave some error answers unsigned)
  forged,    // carries a signature that does not verify, or a stale one
};

// Where credential fetches run when an engine thread needs one: never on
// that thread, which carries every other payment of its engine. The default
// (make_thread_runner) is a thread of the authenticator's own; the
// deterministic simulation runs each task when its schedule says.
class BackgroundRunner {
 public:
  virtual ~BackgroundRunner() = default;
  virtual void post(std::function<void()> task) = 0;
  // Runs the tasks posted so far on the calling thread, when the runner has
  // no thread of its own (the simulation's): true if it ran any. A blocking
  // caller that would wait for a posted fetch runs it instead.
  virtual bool run_pending() { return false; }
};
// One thread, started with the first task, that runs tasks in turn; the
// destructor runs the rest and joins it.
std::unique_ptr<BackgroundRunner> make_thread_runner();

class Authenticator {
 public:
  virtual ~Authenticator() = default;
  // Adds what proves who sends `r`. `unix_ms` is the wall clock of the
  // attempt; `budget_ms` bounds any exchange this needs (a token): the
  // calling thread waits at most that long, however many others wait too.
  // Returns "" or why the request cannot be authenticated (then nothing was
  // sent).
  virtual std::string authorize(OutgoingRequest& r, int64_t unix_ms, int64_t budget_ms) = 0;
  // authorize() for a thread that must never wait (a concurrent engine's):
  // ready (r authenticated), pending (a credential is being fetched
  // elsewhere: ask again later, the payment's deadline still running) or
  // failed (`why`). `waiting_since` is the monotonic ms this request first
  // got `pending` (-1 the first time): a fetch that fails after it is this
  // request's answer, as for a blocking waiter. The default: authorize(),
  // for schemes that only compute (signers).
  enum class Readiness { ready, pending, failed };
  virtual Readiness authorize_now(OutgoingRequest& r, int64_t unix_ms, int64_t /*waiting_since*/, std::string& why) {
    why = authorize(r, unix_ms, 0);
    return why.empty() ? Readiness::ready : Readiness::failed;
  }
  // Whether the provider signs its answers (then a success must be verified).
  virtual bool signs_answers() const { return false; }
  // The answer to the request sent to `request_path` (as the profile gave
  // it, before signing). `why` says what failed when it is not verified.
  virtual AnswerTrust check_answer(const HttpResponse& answer, std::string_view request_path, int64_t unix_ms,
                                   std::string& why) const {
    (void)answer, (void)request_path, (void)unix_ms, (void)why;
    return AnswerTrust::unsigned_;
  }
  // A 401 came back: drop the cached credential. True when a fresh one is
  // worth exactly one more send of the same request.
  virtual bool renew_after_unauthorized() { return false; }
};

// authorize(), with a failure of the signer itself (OpenSSL, memory) as a
// reason too: nothing was sent, and the caller treats it like any refusal.
std::string authorize_or_why(Authenticator& auth, OutgoingRequest& r, int64_t unix_ms, int64_t budget_ms);

// The authenticator the profile's scheme and the config's credentials call
// for; nullptr when fixed headers (or a request hook) do the work. Throws
// ConfigError for credentials that do not fit the profile or keys that do
// not load. `transport` carries token requests; `runner` runs the fetches
// engine threads ask for (null: a thread of the authenticator's own).
std::unique_ptr<Authenticator> make_authenticator(const Config& config, const Profile& profile, Transport& transport,
                                                  Clock& clock, BackgroundRunner* runner = nullptr);

// Implementations (auth_oauth2.cpp, auth_wechatpay.cpp, auth_alipay.cpp).
std::unique_ptr<Authenticator> make_oauth2_authenticator(const Config& config, const Profile& profile,
                                                         Transport& transport, Clock& clock,
                                                         BackgroundRunner* runner);
std::unique_ptr<Authenticator> make_wechatpay_authenticator(const Config& config);
std::unique_ptr<Authenticator> make_alipay_authenticator(const Config& config);

}  // namespace payretry
