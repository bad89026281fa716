// The server: binds one listener per worker, starts and stops the worker threads, owns the
// outage state they share, and the public Server API over all of it.
#include "server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "admin.hpp"
#include "faults.hpp"
#include "profiles.hpp"
#include "server_core.hpp"
#include "sockets.hpp"
#include "worker.hpp"

namespace payretry_sim {

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::vector<std::string> profiles() { return profile_names(); }

std::vector<std::string> fault_names() {
  std::vector<std::string> v;
  for (std::size_t i = 0; i < kFaultCount; ++i) v.emplace_back(fault_name(static_cast<Fault>(i)));
  return v;
}

namespace {

Config config_from(const Options& o) {
  Config cfg;
  cfg.seed = o.seed;
  std::string error;
  auto mix = FaultMix::from_map(o.faults, &error);
  if (!mix) throw std::invalid_argument(error);
  cfg.mix = *mix;
  if (o.slow_ms < 0 || o.retry_after_s < 0 || o.refuse_ms < 0) {
    throw std::invalid_argument("slow_ms, retry_after_s and refuse_ms must be >= 0");
  }
  cfg.slow_ms = o.slow_ms;
  cfg.retry_after_s = o.retry_after_s;
  cfg.refuse_ms = o.refuse_ms;
  if (o.latency_ms < 0 || o.latency_ms > 3600 * 1000) {
    throw std::invalid_argument("latency_ms must be between 0 and 3600000");
  }
  cfg.latency_ms = o.latency_ms;
  const Profile* profile = find_profile(o.profile);
  if (!profile) throw std::invalid_argument("unknown profile: " + o.profile);
  cfg.profile = profile;
  cfg.key_header = o.key_header;  // empty: the profile's header
  if (!o.api_key.empty()) cfg.api_keys.push_back(o.api_key);
  for (const std::string& k : o.api_keys) {
    if (k.empty()) throw std::invalid_argument("an API key must not be empty");
    if (std::find(cfg.api_keys.begin(), cfg.api_keys.end(), k) == cfg.api_keys.end()) cfg.api_keys.push_back(k);
  }
  for (char ch : o.scope_header) {
    // An HTTP token: the header's name as requests carry it.
    if (ch <= 0x20 || ch >= 0x7f || ch == ':') throw std::invalid_argument("bad scope header name: " + o.scope_header);
  }
  cfg.scope_header = o.scope_header;
  if (o.oauth2_delay_ms < -1 || o.oauth2_delay_ms > 3600 * 1000) {
    throw std::invalid_argument("oauth2_delay_ms must be -1 (for ever) or between 0 and 3600000");
  }
  cfg.oauth2_delay_ms = o.oauth2_delay_ms;
  if (!o.keys_dir.empty()) cfg.keys = KeySet::load(o.keys_dir);
  cfg.hmac_secret = o.hmac_secret;
  if (o.oauth2_client_id.empty() || o.oauth2_client_secret.empty()) {
    throw std::invalid_argument("the OAuth2 client id and secret must not be empty");
  }
  if (o.oauth2_ttl_s < 1) throw std::invalid_argument("oauth2_ttl_s must be >= 1");
  cfg.oauth2 = OAuth2Client{o.oauth2_client_id, o.oauth2_client_secret, o.oauth2_ttl_s};
  return cfg;
}

// The sender of --webhook-url's notifications, or null without one.
std::unique_ptr<WebhookSender> webhooks_from(const Options& o, const Config& cfg) {
  if (o.webhook_url.empty()) {
    if (!o.webhook_faults.empty()) throw std::invalid_argument("--webhook-faults needs --webhook-url");
    return nullptr;
  }
  WebhookSettings s;
  s.url = o.webhook_url;
  s.secret = o.webhook_secret;
  s.api_v3_key = o.webhook_api_v3_key;
  s.webhook_id = o.webhook_id;
  s.keys = cfg.keys;
  if (!o.keys_dir.empty() && cfg.profile->id == ProfileId::paypal) {
    const std::string base = o.keys_dir.back() == '/' ? o.keys_dir : o.keys_dir + "/";
    s.paypal_key = std::make_shared<const RsaKey>(RsaKey::private_pem_file(base + "paypal_webhook_key.pem"));
  }
  const std::string missing = check_webhook_settings(*cfg.profile, s);
  if (!missing.empty()) throw std::invalid_argument(missing);
  WebhookFaults faults;
  std::string error;
  if (!parse_webhook_faults(o.webhook_faults, &faults, &error)) throw std::invalid_argument(error);
  return std::make_unique<WebhookSender>(std::move(s), faults, o.seed);
}

}  // namespace

ServerCore::ServerCore(Options o)
    : options(std::move(o)), state(config_from(options)), webhooks(webhooks_from(options, state.config())) {
  state.set_webhooks(webhooks.get());
  if (options.threads < 1 || options.threads > 256) {
    throw std::invalid_argument("threads must be between 1 and 256");
  }
  in_addr ip{};
  const std::string host = options.host == "localhost" ? "127.0.0.1" : options.host;
  if (inet_pton(AF_INET, host.c_str(), &ip) != 1 || (ntohl(ip.s_addr) >> 24) != 127) {
    throw std::invalid_argument("host must be an IPv4 loopback address: " + options.host);
  }
  addr = ip.s_addr;
  std::vector<Fd> listeners;
  listeners.push_back(make_listener(addr, options.port));
  port = bound_port(listeners[0].get());
  for (int i = 1; i < options.threads; ++i) listeners.push_back(make_listener(addr, port));
  for (std::size_t i = 0; i < listeners.size(); ++i) {
    slots.push_back({listeners[i].get(), true});
    workers.push_back(std::make_unique<Worker>(*this, i, std::move(listeners[i])));
  }
  try {
    for (auto& w : workers) threads.emplace_back([wp = w.get()] { wp->run(); });
  } catch (...) {
    stop();
    throw;
  }
}

ServerCore::~ServerCore() { stop(); }

void ServerCore::stop() {
  std::lock_guard<std::mutex> lk(stop_mu);
  if (stopped) return;
  stopped = true;
  stopping.store(true, std::memory_order_release);
  wake_all();
  for (auto& t : threads) t.join();
  threads.clear();
  workers.clear();  // closes connections and listeners
  state.stop_customer_clock();  // it notifies through the sender: stopped first
  if (webhooks) webhooks->stop();
}

void ServerCore::wake_all() {
  for (auto& w : workers) w->wake();
}

uint64_t ServerCore::outage(int ms) {
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lk(outage_mu);
    outage_until_ns = std::max(outage_until_ns, now_ns() + static_cast<int64_t>(ms) * 1000000);
    for (auto& slot : slots) {
      // SHUT_RD on a listening socket stops it listening at once (new SYNs get RST, the
      // accept queue is reset) while the fd stays owned, and the port bound, by its worker.
      if (slot.listening && ::shutdown(slot.fd, SHUT_RD) == 0) slot.listening = false;
    }
    gen = ++outage_generation;
  }
  wake_all();
  return gen;
}

uint64_t ServerCore::min_synced_generation() const {
  uint64_t m = UINT64_MAX;
  for (const auto& w : workers) m = std::min(m, w->synced_generation.load(std::memory_order_acquire));
  return m;
}

Server::Server(Options options) : impl_(std::make_unique<ServerCore>(std::move(options))) {}
Server::~Server() = default;

uint16_t Server::port() const { return impl_->port; }
std::string Server::base_url() const { return "http://127.0.0.1:" + std::to_string(impl_->port); }
void Server::stop() { impl_->stop(); }

int Server::charges_for(const std::string& order_id) const {
  return impl_->state.charges_for(order_id);
}
std::vector<std::string> Server::charge_ids_for(const std::string& order_id) const {
  return impl_->state.charge_ids_for(order_id);
}
long Server::total_charges() const { return impl_->state.total_charges(); }
long Server::orders() const { return impl_->state.orders(); }
int Server::duplicate_orders() const { return static_cast<int>(impl_->state.duplicate_orders()); }
long Server::requests() const { return impl_->state.requests(); }
std::string Server::truth_json() const { return payretry_sim::truth_json(impl_->state); }
std::string Server::stats_json() const { return payretry_sim::stats_json(impl_->state); }

namespace {
std::vector<Fault> to_faults(const std::vector<std::string>& names) {
  std::vector<Fault> v;
  std::string unknown;
  for (const auto& n : names) {
    auto f = fault_from_name(n);
    if (!f) unknown += (unknown.empty() ? "" : ", ") + n;
    else v.push_back(*f);
  }
  if (!unknown.empty()) throw std::invalid_argument("unknown fault name(s): " + unknown);
  return v;
}
}  // namespace

void Server::script(const std::string& order_id, std::vector<std::string> faults) {
  impl_->state.script_order(order_id, to_faults(faults));
}
void Server::script_key(const std::string& key, std::vector<std::string> faults) {
  impl_->state.script_key(key, to_faults(faults));
}

void Server::set_seed(uint64_t seed) {
  Config c = impl_->state.config();
  c.seed = seed;
  impl_->state.set_config(std::move(c));
}
void Server::set_faults(const std::map<std::string, double>& faults) {
  std::string error;
  auto mix = FaultMix::from_map(faults, &error);
  if (!mix) throw std::invalid_argument(error);
  Config c = impl_->state.config();
  c.mix = *mix;
  impl_->state.set_config(std::move(c));
}
void Server::set_slow_ms(int ms) {
  if (ms < 0) throw std::invalid_argument("slow_ms must be >= 0");
  Config c = impl_->state.config();
  c.slow_ms = ms;
  impl_->state.set_config(std::move(c));
}
void Server::set_refuse_ms(int ms) {
  if (ms < 0) throw std::invalid_argument("refuse_ms must be >= 0");
  Config c = impl_->state.config();
  c.refuse_ms = ms;
  impl_->state.set_config(std::move(c));
}
void Server::set_profile(const std::string& name) {
  const Profile* profile = find_profile(name);
  if (!profile) throw std::invalid_argument("unknown profile: " + name);
  Config c = impl_->state.config();
  c.profile = profile;
  impl_->state.set_config(std::move(c));
}
void Server::set_latency_ms(int ms) {
  if (ms < 0 || ms > 3600 * 1000) throw std::invalid_argument("latency_ms must be between 0 and 3600000");
  Config c = impl_->state.config();
  c.latency_ms = ms;
  impl_->state.set_config(std::move(c));
}
void Server::set_oauth2_delay_ms(int ms) {
  if (ms < -1 || ms > 3600 * 1000) {
    throw std::invalid_argument("oauth2_delay_ms must be -1 (for ever) or between 0 and 3600000");
  }
  Config c = impl_->state.config();
  c.oauth2_delay_ms = ms;
  impl_->state.set_config(std::move(c));
}
void Server::set_retry_after_s(int s) {
  if (s < 0) throw std::invalid_argument("retry_after_s must be >= 0");
  Config c = impl_->state.config();
  c.retry_after_s = s;
  impl_->state.set_config(std::move(c));
}

void Server::outage(int ms) {
  if (ms <= 0) return;
  const uint64_t gen = impl_->outage(ms);
  // Like the admin endpoint: return once every worker has closed its idle connections.
  while (impl_->min_synced_generation() < gen && !impl_->stopping.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}
void Server::reset() { impl_->state.reset(); }
void Server::revoke_oauth2_tokens() { impl_->state.tokens().revoke_all(); }

}  // namespace payretry_sim
