// A configured client: the engine and everything it stands on, built from a
// JSON config. Shared by every thread that submits through it.
#pragma once
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "attempt_log.hpp"
#include "auth.hpp"
#include "budget.hpp"
#include "config.hpp"
#include "engine.hpp"
#include "ledger.hpp"
#include "multi_engine.hpp"
#include "operation_flow.hpp"
#include "payment_flow.hpp"
#include "settle.hpp"
#include "random.hpp"
#include "stats.hpp"
#include "transport_curl.hpp"
#include "transport_curl_multi.hpp"
#include "webhook_receiver.hpp"

namespace payretry {

// The config's provider as its profile, and what that profile asks of the
// config (a merchant id its paths name, the keys of a provider that signs, a
// key header the config must not set): everything a client refuses before it
// opens anything. Fills in the profile's key retention and API-key header.
// Throws ConfigError. `has_hook`: a request hook signs instead of auth.
Profile bind_profile(Config& config, bool has_hook);

class Client {
 public:
  // Throws ConfigError or Error(Errc::PAY_EIO).
  Client(std::string_view config_json, AttemptLog::Sink sink, RequestHook hook);
  // Answers every payment handed to the engines before anything goes.
  ~Client();

  PaymentResult submit(const SubmitRequest& r) { return flow_->submit(r); }
  // A capture, refund or cancel of a payment this client made
  // (operation_flow.hpp).
  PaymentResult submit_operation(const OperationRequest& r) { return operations_->submit(r); }
  // The concurrent engine (batch and asynchronous submits), started on first
  // use: `engine_threads` engines, each on its own thread. A payment runs on
  // the one its order id picks, or, started from a `done` callback, on the
  // callback's own engine while that one is not clearly busier; either way it
  // never moves between threads once started.
  MultiEngine& multi_for(std::string_view order_id);
  // True on any of this client's engine threads (inside a `done`), where
  // waiting for a payment could wait for the thread that must answer it.
  bool on_engine_thread();
  // The engines' threads (all started), shared: a pay_pending keeps them to
  // refuse waits on them, and may outlive the client.
  std::shared_ptr<const std::vector<std::thread::id>> engine_threads();
  PaymentResult query(const std::string& order_id) { return settler_->query(order_id); }
  ReconcileReport reconcile(const ReconcileOptions& o) { return settler_->reconcile(o); }
  // A provider's notification (webhook_receiver.hpp). Throws
  // Error(PAY_ECONFIG) when the profile or the config reads none.
  WebhookOutcome apply_webhook(const WebhookRequest& request);
  // What the ledger holds, read through the client (ledger.h; nothing is
  // sent). One order's row and attempts as JSON; throws
  // Error(PAY_ENOTFOUND) when the ledger has no row for it.
  std::string ledger_payment_json(const std::string& order_id);
  // Rows in `state` (every state when nullopt) last changed before
  // `updated_before_ms` (0: any time), at most `limit`, as JSON.
  std::string ledger_payments_json(std::optional<PaymentState> state, int64_t updated_before_ms, int limit);
  // Forgets settled rows last changed before `updated_before_ms` and
  // answers how many. Throws Error(PAY_EINVALID) for a cutoff younger than
  // prune_min_age_ms() before now.
  int64_t prune_ledger(int64_t updated_before_ms);
  std::string stats_json() const { return stats_.to_json(budget_->tokens()); }
  std::string metrics_text() const { return stats_.to_prometheus(budget_->tokens(), budget_->capacity()); }
  void reopen_log() { log_->reopen(); }
  // The youngest cutoff pay_ledger_prune takes: a day, or the provider's key
  // retention when longer. A settled row younger than that may still be
  // submitted again by an application retrying its own call, and a pruned
  // order would then be charged again under a new key.
  int64_t prune_min_age_ms() const {
    constexpr int64_t kDay = 24LL * 3600 * 1000;
    return std::max(kDay, config_.key_retention_ms.value_or(0));
  }
  // A call that failed with PAY_E* `code`: one warn line, so that it is seen
  // even when the caller drops the code.
  void log_failed_call(const std::string& order_id, int code, const std::string& message) noexcept {
    try {
      log_->call_failed(order_id, code, message);
    } catch (...) {
      // A line that cannot be written must not turn into another failure.
    }
  }
  const Profile& profile() const { return profile_; }

 private:
  Config config_;
  Profile profile_;
  std::unique_ptr<JitterRandom> jitter_;
  UuidKeySource keys_;
  std::unique_ptr<CurlTransport> transport_;
  std::unique_ptr<Authenticator> auth_;  // null: fixed headers or the hook authenticate
  std::unique_ptr<AttemptLog> log_;
  std::unique_ptr<RetryBudget> budget_;
  Stats stats_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Ledger> ledger_;
  std::unique_ptr<PaymentFlow> flow_;
  std::unique_ptr<Settler> settler_;
  std::unique_ptr<OperationFlow> operations_;
  std::unique_ptr<WebhookReceiver> webhooks_;  // null: notifications are not read (webhooks_unavailable_ says why)
  std::string webhooks_unavailable_;
  std::once_flag multi_once_;
  CurlOptions curl_;
  std::vector<std::unique_ptr<CurlMultiTransport>> multi_transports_;
  // Last: destroyed first, so they drain while everything they use is alive.
  std::vector<std::unique_ptr<MultiEngine>> multi_;
  std::shared_ptr<const std::vector<std::thread::id>> engine_threads_;
  std::atomic<bool> engines_started_{false};
  void start_engines();
  // engine_threads when the config leaves it 0.
  size_t default_engine_threads() const;
  static constexpr size_t kMaxEngineThreads = 64;  // the config's own bound on engine_threads
};

}  // namespace payretry
