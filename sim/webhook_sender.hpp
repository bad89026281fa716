// Delivers the provider's notifications (webhook_notice.hpp) to --webhook-url from one sender
// thread, so no worker's event loop ever waits on the merchant's receiver. Retries what got no
// 2xx a few times with backoff, as providers do; adds the seeded delivery faults
// (--webhook-faults); keeps a log of every notification for GET /__admin/webhooks.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "webhook_notice.hpp"

namespace payretry_sim {

// Probabilities per notification (each decided apart, from the seed, the order and the payment),
// and the base delay of every delivery.
struct WebhookFaults {
  double dup = 0;      // the provider sends the notification twice (kDupAfterMs apart)
  double reorder = 0;  // held back behind later notifications (kReorderMs more)
  double forge = 0;    // a copy with a bad signature goes out beside the real one
  double replay = 0;   // an earlier notification's exact bytes are sent again, later
  double stale = 0;    // a copy signed outside the scheme's time window (Stripe, WeChat Pay)
  double early = 0;    // sent at once, and the create's answer held kEarlyLeadMs behind it
  int delay_ms = 0;    // every notification waits this long after the final state
};

// "dup=0.1,forge=0.05,delay_ms=20" (any subset, any order). False with *error on a bad name or
// value.
bool parse_webhook_faults(std::string_view text, WebhookFaults* out, std::string* error);

class WebhookSender {
 public:
  static constexpr int kEarlyLeadMs = 200;
  static constexpr int kReorderMs = 300;
  static constexpr int kReplayAfterMs = 400;
  static constexpr int kDupAfterMs = 150;
  static constexpr int kMaxAttempts = 4;      // a real notification: the first and 3 retries
  static constexpr int kFirstBackoffMs = 100; // then doubled

  // Starts the sender thread. `settings.url` must be checked (check_webhook_settings).
  WebhookSender(WebhookSettings settings, WebhookFaults faults, uint64_t seed);
  ~WebhookSender();
  WebhookSender(const WebhookSender&) = delete;
  WebhookSender& operator=(const WebhookSender&) = delete;
  void stop();  // idempotent; what is still queued is dropped

  // The provider decided a payment's final state: queue its notification (and the copies the
  // faults add). True when it goes out `early`: the caller holds the create's answer
  // kEarlyLeadMs. Never blocks on the network.
  bool payment_final(const Profile& p, const PaymentEvent& e);

  void set_faults(const WebhookFaults& faults);
  WebhookFaults faults() const;
  // {"url":..,"faults":{..},"notifications":[{..},..]} in the order they were queued.
  std::string log_json() const;
  // Forgets the log and what is queued (POST /__admin/reset).
  void reset();

 private:
  struct Record {
    std::string order_id, provider_id, event_id, type, kind;
    int attempts = 0;
    int last_status = 0;  // 0: no answer (not yet sent, or the connection failed)
    bool delivered = false;
    bool early = false, reordered = false;
  };
  struct Delivery {
    int64_t due_ns = 0;
    uint64_t seq = 0;
    std::size_t record = 0;
    bool retries = false;  // the provider's own sends retry; an attacker's copies do not
    uint64_t generation = 0;  // reset() forgets the deliveries of earlier generations
    Notice notice;
  };
  struct Later {
    bool operator()(const Delivery& a, const Delivery& b) const {
      return a.due_ns != b.due_ns ? a.due_ns > b.due_ns : a.seq > b.seq;
    }
  };
  // Appends a log record and queues its delivery; mu_ held. Returns the delivery as queued.
  Delivery queue(int64_t due_ns, Record record, Notice n, bool retries);
  bool decide(const PaymentEvent& e, std::string_view fault, double p) const;
  void run();
  int post(const Notice& n) const;  // the HTTP status, 0 when there was none

  const WebhookSettings settings_;
  const uint64_t seed_;
  std::string host_;  // the URL's, split once
  uint16_t port_ = 80;
  std::string path_;
  uint32_t addr_ = 0;  // network order

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  WebhookFaults faults_;
  std::vector<Delivery> heap_;
  uint64_t seq_ = 0;
  uint64_t generation_ = 0;
  std::vector<Record> log_;
  std::optional<Delivery> last_real_;  // what a replay sends again
  std::thread thread_;
};

}  // namespace payretry_sim
