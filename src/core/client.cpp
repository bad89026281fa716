#include "client.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "ledger_json.hpp"
#include "profile.hpp"
#include "scope.hpp"
#include "spelling.hpp"
#include "validate.hpp"

namespace payretry {
namespace {

bool loopback_url(const std::string& url) {
  const size_t at = url.find("://") + 3;
  const std::string host = url.substr(at, url.find_first_of(":/", at) - at);
  return host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

// Identifies this client's leases: host, process and a random part, so two
// clients in one process never share a lease either.
std::string owner_id() {
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  UuidKeySource k;
  return std::string(host) + ":" + std::to_string(getpid()) + ":" + k.new_key().substr(0, 8);
}

}  // namespace

Profile bind_profile(Config& config, bool has_hook) {
  Profile profile;
  try {
    if (!config.provider_json.empty()) {
      profile = parse_profile(config.provider_json);
    } else if (auto p = builtin_profile(config.provider)) {
      profile = std::move(*p);
    } else {
      std::string names;
      for (const std::string& n : builtin_profile_names()) names += (names.empty() ? "" : ", ") + n;
      throw ConfigError("provider: unknown provider \"" + config.provider + "\"" +
                        did_you_mean(config.provider, builtin_profile_names()) + " (built-in: " + names + ")");
    }
  } catch (const ProfileError& e) {
    throw ConfigError(std::string("provider: ") + e.what());
  }
  if (!config.key_retention_ms && profile.retention_ms) config.key_retention_ms = profile.retention_ms;
  if (config.merchant_id.empty() && (profile.lookup.path.find("{merchant_id}") != std::string::npos ||
                                     profile.lookup.body.find("{merchant_id}") != std::string::npos))
    throw ConfigError("merchant_id: is required: provider " + profile.name + "'s lookup names {merchant_id}");
  const std::string& create_path = config.create_path.empty() ? profile.create_path : config.create_path;
  if (config.merchant_id.empty() && create_path.find("{merchant_id}") != std::string::npos)
    throw ConfigError("merchant_id: is required: the create path names {merchant_id}");
  if (config.auth.kind == AuthConfig::Kind::api_key) {
    if (profile.auth.scheme != AuthScheme::api_key)
      throw ConfigError("auth.api_key: provider " + profile.name + " names no API-key header; give header and value");
    config.auth_headers.emplace_back(profile.auth.header, config.auth.api_key);
  }
  // WeChat Pay and Alipay refuse every request that is not signed: without
  // the built-in signer's keys, a request hook must sign.
  const bool signs = profile.auth.scheme == AuthScheme::wechatpay_v3 || profile.auth.scheme == AuthScheme::alipay_rsa2;
  if (signs && !has_hook && config.auth.kind != AuthConfig::Kind::wechatpay && config.auth.kind != AuthConfig::Kind::alipay)
    throw ConfigError(std::string("auth: provider ") + profile.name + " signs every request: give auth." +
                      (profile.auth.scheme == AuthScheme::wechatpay_v3 ? "wechatpay" : "alipay") +
                      " with the keys, or a request hook that signs");
  const std::string key_header = profile.identity.mode == IdentityMode::header ? profile.identity.name : "";
  for (const auto& [name, value] : config.extra_headers)
    if (std::string e = check_not_reserved(name, key_header); !e.empty()) throw ConfigError("headers." + name + ": " + e);
  for (const auto& [name, value] : config.auth_headers)
    if (std::string e = check_not_reserved(name, key_header); !e.empty()) throw ConfigError("auth.header: " + e);
  return profile;
}

Client::Client(std::string_view config_json, AttemptLog::Sink sink, RequestHook hook)
    : config_(parse_config(config_json)) {
  profile_ = bind_profile(config_, static_cast<bool>(hook));
  const std::string& create_path = config_.create_path.empty() ? profile_.create_path : config_.create_path;
  jitter_ = config_.retry.jitter_seed ? std::make_unique<JitterRandom>(*config_.retry.jitter_seed)
                                      : std::make_unique<JitterRandom>();
  curl_.verify_tls = config_.tls_verify;
  curl_.ca_file = config_.ca_file;
  curl_.proxy = config_.proxy;
  transport_ = std::make_unique<CurlTransport>(curl_);
  auth_ = make_authenticator(config_, profile_, *transport_, system_clock());
  curl_.http2 = true;  // the concurrent engine multiplexes where the provider offers HTTP/2
  log_ = std::make_unique<AttemptLog>(std::move(sink), config_.log_path, config_.log_level, config_.secrets(),
                                      system_clock(), config_.log_name.empty() ? profile_.name : config_.log_name);
  budget_ = std::make_unique<RetryBudget>(config_.budget);
  if (!config_.tls_verify)
    log_->note(kLogWarn, "config_warning",
               "tls.verify is false: provider certificates are not checked; never do this in production");
  if (config_.base_url.rfind("http://", 0) == 0 && !loopback_url(config_.base_url))
    log_->note(kLogWarn, "config_warning", "base_url uses plain http to a host that is not loopback");
  if (create_path.empty())
    log_->note(kLogWarn, "config_warning",
               "create_path: provider " + profile_.name + " has none and the config gives none: every submit "
               "must give a path");
  // Lookups are signed like creates: the same hook runs for both.
  engine_ = std::make_unique<Engine>(
      config_, profile_,
      EngineDeps{*transport_, system_clock(), system_sleeper(), *jitter_, keys_, *log_, *budget_, stats_}, hook,
      auth_.get());
  ledger_ = open_ledger(config_.ledger_url, config_.ledger_secret, config_.ledger_timeout_ms);
  if (is_memory_ledger_url(config_.ledger_url))
    log_->note(kLogWarn, "config_warning",
               "ledger is memory: idempotency keys live in this process only and are lost when it ends");
  const std::string owner = owner_id();
  flow_ = std::make_unique<PaymentFlow>(*engine_, *ledger_, config_, system_clock(), system_sleeper(), keys_, stats_,
                                        *log_, owner, client_scope(config_, profile_, ledger_->secret()));
  operations_ = std::make_unique<OperationFlow>(
      config_, profile_, *ledger_, *flow_,
      OperationFlow::Deps{*transport_, system_clock(), system_sleeper(), *jitter_, keys_, *log_, *budget_, stats_,
                          auth_.get(), hook});
  settler_ = std::make_unique<Settler>(*ledger_, *transport_, profile_, config_, system_clock(), system_sleeper(),
                                       *jitter_, *budget_, *log_, stats_, *flow_, std::move(hook), auth_.get());
  settler_->settle_operations_by([this](const PaymentRow& row) { return operations_->settle(row); });
  // Notifications: a config that gives webhook secrets the profile's scheme
  // cannot use is wrong now, not at the first notification.
  try {
    webhooks_ = std::make_unique<WebhookReceiver>(*ledger_, profile_, config_, system_clock(), stats_, *log_, *flow_,
                                                  *settler_);
    webhooks_->on_operation_settled([this](const PaymentRow& row) { operations_->settled_by_event(row); });
  } catch (const Error& e) {
    if (config_.webhook.configured) throw ConfigError(e.what());
    webhooks_unavailable_ = std::string(e.what()) + " (config: no webhook block)";
  }
}

WebhookOutcome Client::apply_webhook(const WebhookRequest& request) {
  if (!webhooks_) throw Error(Errc::PAY_ECONFIG, "webhook: " + webhooks_unavailable_);
  return webhooks_->apply(request);
}

std::string Client::ledger_payment_json(const std::string& order_id) {
  const std::optional<PaymentRow> row = ledger_->get(order_id);
  if (!row) throw Error(Errc::PAY_ENOTFOUND, "no payment for this order id in the ledger");
  // A payment's read lists its captures, refunds and cancels (rows of
  // their own); an operation's row has none.
  if (row->operation != OperationKind::create) return payment_json(*row, ledger_->attempts(order_id));
  const std::vector<PaymentRow> ops = ledger_->operations_of(order_id);
  return payment_json(*row, ledger_->attempts(order_id), &ops);
}

std::string Client::ledger_payments_json(std::optional<PaymentState> state, int64_t updated_before_ms, int limit) {
  return payments_json(ledger_->list(state, updated_before_ms, limit, std::nullopt));
}

int64_t Client::prune_ledger(int64_t updated_before_ms) {
  const int64_t min_age = prune_min_age_ms();
  const int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (updated_before_ms > now - min_age)
    throw Error(Errc::PAY_EINVALID, "prune cutoff too recent: rows must be at least " + std::to_string(min_age / 3600000) +
                                        " h old (a day, or the provider's key retention when longer); an order "
                                        "pruned and submitted again would be charged again under a new key");
  return ledger_->prune_settled(updated_before_ms);
}

Client::~Client() {
  for (const auto& m : multi_) m->stop();
  for (const auto& m : multi_) m->drain();
}

// One per core, and at least one per kConnectionsPerEngine connections: a
// libcurl 7.88 multi handle spends more per transfer the more transfers it
// holds (against nginx at 10,000 in flight, 2 engines of 5,000 cost 250-330 us
// of CPU a payment, 10 engines of 1,000 about 95 us;
// BENCHMARKS.md, "Scaling").
size_t Client::default_engine_threads() const {
  constexpr int64_t kConnectionsPerEngine = 1000;
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const auto by_connections = static_cast<size_t>((config_.max_connections + kConnectionsPerEngine - 1) /
                                                  kConnectionsPerEngine);
  return std::min<size_t>(std::max(cores, by_connections), kMaxEngineThreads);
}

void Client::start_engines() {
  std::call_once(multi_once_, [this] {
    size_t n = config_.engine_threads > 0 ? static_cast<size_t>(config_.engine_threads) : default_engine_threads();
    n = std::min<size_t>(n, static_cast<size_t>(config_.max_connections));  // at least one connection each
    const long per_engine = static_cast<long>((config_.max_connections + static_cast<int64_t>(n) - 1) /
                                              static_cast<int64_t>(n));
    const long opening_per_engine = static_cast<long>((config_.max_opening_connections + static_cast<int64_t>(n) - 1) /
                                                      static_cast<int64_t>(n));
    // All or none: a failure (no thread to be had) leaves nothing half
    // started, and the next call tries again.
    std::vector<std::unique_ptr<CurlMultiTransport>> transports;
    std::vector<std::unique_ptr<MultiEngine>> engines;
    for (size_t i = 0; i < n; ++i) {
      transports.push_back(std::make_unique<CurlMultiTransport>(curl_, per_engine, opening_per_engine));
      engines.push_back(std::make_unique<MultiEngine>(*engine_, *flow_, config_, system_clock(), *log_, stats_,
                                                      *transports.back(), true, static_cast<int>(n)));
    }
    auto ids = std::make_shared<std::vector<std::thread::id>>();
    for (const auto& m : engines) ids->push_back(m->thread_id());
    multi_transports_ = std::move(transports);
    multi_ = std::move(engines);
    engine_threads_ = std::move(ids);
    engines_started_.store(true, std::memory_order_release);
  });
}

// A payment started from a `done` callback (the next payment of a chain, the
// next item of a batch's window) stays on the callback's engine: handing it
// to another thread costs a wake-up of that thread, and memory allocated on
// one thread and freed on another spreads over more of glibc's per-thread
// arenas (BENCHMARKS.md, "The next payment on the callback's engine, second
// try"). It goes to the engine its order id picks when the callback's engine
// holds more than an eighth (and two) more payments than that one, so that
// chains cannot pile onto one engine; payments started anywhere else go
// there always.
MultiEngine& Client::multi_for(std::string_view order_id) {
  start_engines();
  if (multi_.size() == 1) return *multi_[0];
  MultiEngine& picked = *multi_[std::hash<std::string_view>{}(order_id) % multi_.size()];
  // The ids noted at start-up, in multi_'s order: an engine's own
  // std::thread is cleared as the client's destructor joins it, perhaps
  // while another engine's callback is here.
  const std::vector<std::thread::id>& ids = *engine_threads_;
  const std::thread::id me = std::this_thread::get_id();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != me) continue;
    const size_t there = picked.load();
    return multi_[i]->load() <= there + there / 8 + 2 ? *multi_[i] : picked;
  }
  return picked;
}

bool Client::on_engine_thread() {
  // Before the engines start, no thread is one of them (and asking must
  // not start them: a blocking-only client never runs any).
  if (!engines_started_.load(std::memory_order_acquire)) return false;
  const auto& ids = *engine_threads();
  return std::find(ids.begin(), ids.end(), std::this_thread::get_id()) != ids.end();
}

std::shared_ptr<const std::vector<std::thread::id>> Client::engine_threads() {
  start_engines();
  return engine_threads_;
}

}  // namespace payretry
