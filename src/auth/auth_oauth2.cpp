// OAuth2 client credentials (RFC 6749 §4.4), as PayPal's SDK does it: the
// client's id and secret buy an access token at the token endpoint; every
// request carries it as a bearer until shortly before it expires, and a 401
// drops it for one fresh try. Fetching a token is not a payment attempt: it
// sends nothing of the payment, and its failure leaves the payment unsent.
//
// No lock is held across a fetch, and no engine thread ever waits for one
// (docs/design.md "Authentication"). One fetch runs at a time: a blocking
// caller (pay_submit, a lookup) that finds none running makes it on its own
// thread; every other caller waits for it no longer than its own payment's
// time. A concurrent engine's thread never waits: it hands the fetch to the
// background runner and polls, so a hanging token endpoint holds no other
// payment of that engine, and each payment still ends by its own deadline.
#include <cJSON.h>
#include <strings.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "auth.hpp"
#include "base64.hpp"
#include "form_encoding.hpp"
#include "json_util.hpp"

namespace payretry {
namespace {

// Renew this long before the provider's expiry at the latest, so that a
// token never runs out between being attached and being read.
constexpr int64_t kRenewMarginMs = 300000;

class ThreadRunner final : public BackgroundRunner {
 public:
  ~ThreadRunner() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void post(std::function<void()> task) override {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    cv_.notify_one();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, nothing left
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      try {
        task();
      } catch (...) {
        // A task reports through the state it updates; nothing may end the thread.
      }
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

class OAuth2ClientCredentials final : public Authenticator {
 public:
  OAuth2ClientCredentials(const Config& config, const Profile& profile, Transport& transport, Clock& clock,
                          BackgroundRunner* runner)
      : transport_(transport), clock_(clock), basic_("Basic " + base64_encode(config.auth.client_id + ":" +
                                                                              config.auth.client_secret)) {
    const std::string& path = config.auth.token_path.empty() ? profile.auth.token_path : config.auth.token_path;
    url_ = config.base_url + path;
    body_ = "grant_type=client_credentials";
    if (!config.auth.scope.empty()) body_ += "&scope=" + form_escape(config.auth.scope);
    extra_ = config.extra_headers;
    attempt_timeout_ms_ = config.retry.attempt_timeout_ms;
    connect_timeout_ms_ = config.retry.connect_timeout_ms;
    if (!runner) {
      own_runner_ = make_thread_runner();
      runner = own_runner_.get();
    }
    runner_ = runner;
  }

  ~OAuth2ClientCredentials() override {
    // The own runner's thread may be inside a fetch that uses this object:
    // joined before anything else goes.
    own_runner_.reset();
  }

  std::string authorize(OutgoingRequest& r, int64_t, int64_t budget_ms) override {
    const int64_t until = clock_.now_ms() + std::max<int64_t>(0, budget_ms);
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t arrived = generation_;
    for (;;) {
      const int64_t now = clock_.now_ms();
      const bool valid = !token_.empty() && now < expires_at_;
      // Renewal is due: this caller fetches, unless another fetch runs (a
      // valid token is used meanwhile rather than waited on).
      if (valid && (now < renew_at_ || fetching_)) return attach(r);
      // A fetch that ended after this caller arrived, and failed, is its
      // answer: the callers that queued behind a hanging endpoint do not
      // each hang on it again in turn.
      if (!valid && failed_generation_ > arrived) return failed_why_;
      if (fetching_) {
        // A runner without a thread of its own (the simulation's) runs the
        // fetch here; a thread's is waited for, no longer than this
        // payment's time.
        lock.unlock();
        const bool ran = runner_->run_pending();
        lock.lock();
        if (ran) continue;
        if (clock_.now_ms() >= until)
          return "no OAuth2 token within the payment's time: the token request is still running";
        const int64_t generation = generation_;
        cv_.wait_for(lock, std::chrono::milliseconds(until - clock_.now_ms()),
                     [&] { return generation_ != generation; });
        continue;
      }
      fetching_ = true;
      lock.unlock();
      Fetched got = fetch(until - now);
      lock.lock();
      const std::string why = got.why;
      finish_fetch(std::move(got));
      if (!why.empty() && !(!token_.empty() && clock_.now_ms() < expires_at_)) return why;
    }
  }

  Readiness authorize_now(OutgoingRequest& r, int64_t, int64_t waiting_since, std::string& why) override {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t now = clock_.now_ms();
    const bool valid = !token_.empty() && now < expires_at_;
    if (valid) {
      if (now >= renew_at_) start_background_fetch();  // renewed early, off this thread
      attach(r);
      return Readiness::ready;
    }
    if (waiting_since >= 0 && failed_at_ >= waiting_since) {
      why = failed_why_;
      return Readiness::failed;
    }
    start_background_fetch();
    return Readiness::pending;
  }

  bool renew_after_unauthorized() override {
    std::lock_guard<std::mutex> lock(mu_);
    token_.clear();
    failed_at_ = 0;
    failed_generation_ = 0;
    return true;
  }

 private:
  struct Fetched {
    std::string token;
    int64_t asked = 0;     // monotonic ms the request was made
    int64_t life_ms = 0;
    std::string why;       // "" when a token came
  };

  // With mu_ held.
  std::string attach(OutgoingRequest& r) {
    r.headers.emplace_back("Authorization", "Bearer " + token_);
    return {};
  }

  // With mu_ held: a fetch on the runner, unless one runs already.
  void start_background_fetch() {
    if (fetching_) return;
    fetching_ = true;
    runner_->post([this] {
      Fetched got = fetch(attempt_timeout_ms_);
      std::lock_guard<std::mutex> lock(mu_);
      finish_fetch(std::move(got));
    });
  }

  // With mu_ held: the fetch's outcome becomes everyone's.
  void finish_fetch(Fetched got) {
    fetching_ = false;
    ++generation_;
    if (got.why.empty()) {
      token_ = std::move(got.token);
      // Counted from when it was asked for; renewed a margin early, or at
      // half its life when that is shorter.
      renew_at_ = got.asked + got.life_ms - std::min(kRenewMarginMs, got.life_ms / 2);
      expires_at_ = got.asked + got.life_ms;
      failed_at_ = 0;
      failed_generation_ = 0;
    } else {
      failed_at_ = clock_.now_ms();
      failed_generation_ = generation_;
      failed_why_ = got.why;
    }
    cv_.notify_all();
  }

  // Without mu_: the token request itself, bounded like an attempt and by
  // `budget_ms`.
  Fetched fetch(int64_t budget_ms) {
    Fetched out;
    HttpRequest h;
    h.method = "POST";
    h.url = url_;
    h.headers = {{"Authorization", basic_},
                 {"Content-Type", "application/x-www-form-urlencoded"},
                 {"Accept", "application/json"},
                 {"User-Agent", "payretry/" PAYRETRY_VERSION_STRING}};
    h.headers.insert(h.headers.end(), extra_.begin(), extra_.end());
    h.body = body_;
    h.timeout_ms = std::max<int64_t>(1, std::min(budget_ms, attempt_timeout_ms_));
    h.connect_timeout_ms = std::min(connect_timeout_ms_, h.timeout_ms);
    out.asked = clock_.now_ms();
    TransportResult t;
    try {
      t = transport_.post(h);
    } catch (const std::exception& e) {
      out.why = std::string("OAuth2 token request failed (") + e.what() + ")";
      return out;
    }
    if (t.failure != TransportFailure::none) {
      out.why = "OAuth2 token request failed (" + std::string(transport_failure_name(t.failure)) + ")";
      return out;
    }
    if (t.response.status != 200) {
      out.why = "OAuth2 token request answered HTTP " + std::to_string(t.response.status) +
                (t.response.status == 401 ? " (check auth.oauth2.client_id and client_secret)" : "");
      return out;
    }
    JsonPtr j(cJSON_ParseWithLength(t.response.body.data(), t.response.body.size()));
    const cJSON* access = j ? cJSON_GetObjectItemCaseSensitive(j.get(), "access_token") : nullptr;
    const cJSON* type = j ? cJSON_GetObjectItemCaseSensitive(j.get(), "token_type") : nullptr;
    const cJSON* expires = j ? cJSON_GetObjectItemCaseSensitive(j.get(), "expires_in") : nullptr;
    if (!cJSON_IsString(access) || !*access->valuestring) {
      out.why = "OAuth2 token answer has no access_token";
      return out;
    }
    if (type && (!cJSON_IsString(type) || strcasecmp(type->valuestring, "bearer") != 0)) {
      out.why = "OAuth2 token answer has token_type other than Bearer";
      return out;
    }
    const std::string value = access->valuestring;
    for (unsigned char c : value)
      if (c < 0x21 || c > 0x7E) {
        out.why = "OAuth2 token answer's access_token is not printable";
        return out;
      }
    // No expires_in: RFC 6749 leaves it to documentation; renew hourly.
    out.life_ms = 3600000;
    // Bounded to [1 s, 1 year]: a wild value neither overflows nor pins a token forever.
    if (cJSON_IsNumber(expires) && expires->valuedouble > 0)
      out.life_ms = static_cast<int64_t>(std::min(std::max(expires->valuedouble, 1.0), 365.0 * 86400) * 1000);
    out.token = value;
    return out;
  }

  Transport& transport_;
  Clock& clock_;
  const std::string basic_;
  std::string url_;
  std::string body_;
  Headers extra_;
  int64_t attempt_timeout_ms_ = 0;
  int64_t connect_timeout_ms_ = 0;
  BackgroundRunner* runner_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string token_;
  int64_t renew_at_ = 0;    // monotonic ms
  int64_t expires_at_ = 0;  // monotonic ms
  bool fetching_ = false;   // a fetch runs (on a caller's thread or the runner)
  int64_t generation_ = 0;  // fetches finished
  int64_t failed_at_ = 0;   // monotonic ms the last fetch failed
  int64_t failed_generation_ = 0;  // and its number among the fetches
  std::string failed_why_;
  // Last: destroyed first (see the destructor).
  std::unique_ptr<BackgroundRunner> own_runner_;
};

}  // namespace

std::unique_ptr<BackgroundRunner> make_thread_runner() { return std::make_unique<ThreadRunner>(); }

std::unique_ptr<Authenticator> make_oauth2_authenticator(const Config& config, const Profile& profile,
                                                         Transport& transport, Clock& clock,
                                                         BackgroundRunner* runner) {
  return std::make_unique<OAuth2ClientCredentials>(config, profile, transport, clock, runner);
}

}  // namespace payretry
