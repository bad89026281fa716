// payretry-sim: a local payment provider that injects faults at the socket level from a seeded
// schedule. It plays one provider's idempotency semantics at a time (the profile: Stripe by
// default; see profiles.hpp). Independent of the payretry client library.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace payretry_sim {

struct Options {
  std::string host = "127.0.0.1";  // IPv4 loopback only
  uint16_t port = 0;                // 0: pick a free port
  int threads = 1;                  // workers, each with its own epoll and SO_REUSEPORT socket
  uint64_t seed = 1;
  std::map<std::string, double> faults;  // fault name -> probability; the rest is "none"
  int slow_ms = 2000;
  int retry_after_s = 1;
  int refuse_ms = 100;
  // Every payment create and lookup is answered this long after it arrived, like a provider
  // that takes 100 ms-2 s; event-loop timers, no sleeping thread. 0: at once. Also settable
  // with POST /__admin/config {"latency_ms": N}.
  int latency_ms = 0;
  // The provider it plays: stripe (default), checkout_com, paypal, square, wechatpay_v3, adyen,
  // mollie, alipay. Identity, replay semantics, error shapes and lookups follow the provider;
  // faults, scripts, the truth and charges are the same for all.
  std::string profile = "stripe";
  std::string key_header;  // the key header of a header profile; empty: the profile's own
  std::string api_key;     // empty: no Authorization required (modes with a bearer only)
  // More bearer keys beside api_key. With two or more keys in all, each is its own merchant
  // account (one API key per tenant): its own idempotency keys, payments and lookups; the
  // truth still counts charges per order id across the accounts.
  std::vector<std::string> api_keys;
  // Partitions the idempotency keys, the payments and the lookups by this request header's
  // value (absent or empty: the default scope), in any mode, as Stripe-Account does at Stripe:
  // a lookup in another scope does not see the payment. Empty: no partition.
  std::string scope_header;
  // A directory laid out like tests/keys/: WeChat Pay and Alipay request signatures are then
  // verified and their answers signed. Empty: those modes check only the form of their auth.
  std::string keys_dir;
  // Every create and lookup must carry `X-Signature: v1=<hex HMAC-SHA256(secret, METHOD "\n"
  // TARGET "\n" BODY)>` (TARGET: path and query as sent), else 401 and nothing is processed:
  // a signing scheme no client builds in, for the bindings' request hooks. Empty: none.
  std::string hmac_secret;
  // PayPal's OAuth2 client (POST /v1/oauth2/token) and the lifetime of the tokens it gets.
  std::string oauth2_client_id = "test-client-id";
  std::string oauth2_client_secret = "test-client-secret";
  int oauth2_ttl_s = 32400;
  // PayPal's token endpoint holds every token request this long before answering it, without
  // holding anything else up; -1: until the client closes the connection. Also settable with
  // POST /__admin/config {"oauth2_delay_ms": N}.
  int oauth2_delay_ms = 0;
  // Notifications (webhooks, webhook_notice.hpp): every payment whose final state the
  // provider decides is notified to this http:// URL, in the profile's format, signed with
  // these. Empty URL: none sent.
  std::string webhook_url;
  std::string webhook_secret;      // Stripe, Square, Checkout.com; Adyen: the HMAC key in hex
  std::string webhook_api_v3_key;  // WeChat Pay: 32 bytes
  std::string webhook_id;          // PayPal
  std::string webhook_faults;      // "dup=P,reorder=P,delay_ms=N,forge=P,replay=P,stale=P,early=P"
};

// The names accepted in Options::profile.
std::vector<std::string> profiles();

// The names accepted in Options::faults and scripts, in schedule order.
std::vector<std::string> fault_names();

class ServerCore;

class Server {
 public:
  // Binds and starts the workers. Throws std::runtime_error when it cannot bind, and
  // std::invalid_argument for bad options (unknown fault names, non-loopback host, ...).
  explicit Server(Options options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;
  std::string base_url() const;  // "http://127.0.0.1:<port>"
  void stop();                   // idempotent; held `slow` requests are dropped

  // The truth.
  int charges_for(const std::string& order_id) const;
  std::vector<std::string> charge_ids_for(const std::string& order_id) const;
  long total_charges() const;
  long orders() const;
  int duplicate_orders() const;  // orders with more than one charge
  long requests() const;         // payment (create) requests seen, faulted ones included
  std::string truth_json() const;
  std::string stats_json() const;

  // Scripts: the next requests of that order id (or idempotency key) meet these faults in
  // order, before the seeded mix applies again. Throws std::invalid_argument on unknown names.
  void script(const std::string& order_id, std::vector<std::string> faults);
  void script_key(const std::string& key, std::vector<std::string> faults);

  // Runtime config, as POST /__admin/config does.
  void set_seed(uint64_t seed);
  void set_faults(const std::map<std::string, double>& faults);  // replaces the mix
  void set_slow_ms(int ms);
  void set_refuse_ms(int ms);
  void set_retry_after_s(int s);
  void set_latency_ms(int ms);
  // How long PayPal's token endpoint holds a token request (-1: until the client gives up).
  void set_oauth2_delay_ms(int ms);
  // Switches the provider it plays (keys and charges are kept; reset() for a clean start).
  // Throws std::invalid_argument on an unknown name.
  void set_profile(const std::string& name);

  // Forgets every PayPal OAuth2 token issued, as POST /__admin/oauth2/revoke does.
  void revoke_oauth2_tokens();

  // Closes the listeners (and idle keep-alive connections) for `ms`: connects are refused.
  void outage(int ms);
  // Forgets keys, charges, scripts and counters; keeps the config.
  void reset();

 private:
  std::unique_ptr<ServerCore> impl_;
};

}  // namespace payretry_sim
