// Stats as Prometheus text, exposition format 0.0.4 (what a Prometheus
// server scrapes by default; not OpenMetrics, which wants `# EOF` and
// counters typed without their _total suffix):
// https://prometheus.io/docs/instrumenting/exposition_formats/
// Written by hand, so the core needs no metrics library: the format is a
// few line shapes, and every value here is a counter, a gauge or a
// fixed-bucket histogram.
#include <cstdio>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>

#include "stats.hpp"

namespace payretry {

namespace {

class Exposition {
 public:
  void family(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  // name{k1="v1",...} value
  void sample(std::string_view name, std::initializer_list<std::pair<const char*, std::string_view>> labels,
              std::string_view value) {
    out_ += name;
    if (labels.size() > 0) {
      out_ += '{';
      bool first = true;
      for (const auto& [k, v] : labels) {
        if (!first) out_ += ',';
        first = false;
        out_ += k;
        out_ += "=\"";
        escape(v);
        out_ += '"';
      }
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }
  void sample(std::string_view name, std::initializer_list<std::pair<const char*, std::string_view>> labels, long v) {
    sample(name, labels, std::to_string(v));
  }
  void histogram(const char* name, const char* help, const Histogram::Snapshot& h) {
    family(name, "histogram", help);
    const std::string base(name);
    long cumulative = 0;
    for (std::size_t i = 0; i < Histogram::kBounds.size(); ++i) {
      cumulative += h.counts[i];
      char le[32];
      std::snprintf(le, sizeof le, "%g", Histogram::kBounds[i]);
      sample(base + "_bucket", {{"le", le}}, cumulative);
    }
    sample(base + "_bucket", {{"le", "+Inf"}}, h.count);
    char sum[64];
    std::snprintf(sum, sizeof sum, "%.6f", h.sum_seconds);
    sample(base + "_sum", {}, sum);
    sample(base + "_count", {}, h.count);
  }
  std::string take() { return std::move(out_); }

 private:
  // Label values escape backslash, double quote and line feed.
  void escape(std::string_view v) {
    for (char c : v) {
      if (c == '\\') out_ += "\\\\";
      else if (c == '"') out_ += "\\\"";
      else if (c == '\n') out_ += "\\n";
      else out_ += c;
    }
  }
  std::string out_;
};

constexpr Outcome kAllOutcomes[] = {Outcome::succeeded, Outcome::failed, Outcome::unknown, Outcome::in_progress};
constexpr Delivery kAllDeliveries[] = {Delivery::not_sent, Delivery::maybe_processed, Delivery::delivered};

}  // namespace

std::string Stats::to_prometheus(int budget_tokens, int budget_capacity) const {
  Exposition e;
  e.family("payretry_payments_total", "counter",
           "Payment runs by outcome and delivery: one per run of a submission, never a ledger read or a lookup.");
  for (Outcome o : kAllOutcomes)
    for (Delivery d : kAllDeliveries)
      e.sample("payretry_payments_total", {{"outcome", outcome_name(o)}, {"delivery", delivery_name(d)}},
               payments_[static_cast<int>(o)][static_cast<int>(d)].load(std::memory_order_relaxed));
  e.family("payretry_ledger_answers_total", "counter",
           "Submissions answered from the ledger without a run: settled before, held by another worker, key expired.");
  for (Outcome o : kAllOutcomes)
    e.sample("payretry_ledger_answers_total", {{"outcome", outcome_name(o)}},
             ledger_answers_[static_cast<int>(o)].load(std::memory_order_relaxed));
  e.family("payretry_settlements_total", "counter",
           "Payments query and reconcile examined, by how (by: lookup at the provider, resend by reconcile with the "
           "same key, webhook kept until then) and by the outcome they left them in.");
  for (int b = 0; b < kSettledBy; ++b)
    for (Outcome o : kAllOutcomes)
      e.sample("payretry_settlements_total", {{"by", settled_by_name(static_cast<SettledBy>(b))}, {"outcome", outcome_name(o)}},
               settlements_[b][static_cast<int>(o)].load(std::memory_order_relaxed));
  e.family("payretry_in_flight_payments", "gauge", "Payments accepted and not yet answered.");
  e.sample("payretry_in_flight_payments", {}, in_flight_.load(std::memory_order_relaxed));

  e.family("payretry_attempts_started_total", "counter", "Payment attempts handed to the transport.");
  e.sample("payretry_attempts_started_total", {}, attempts_.load(std::memory_order_relaxed));
  {
    std::lock_guard<std::mutex> lock(mu_);
    e.family("payretry_attempts_total", "counter", "Payment attempts answered (or failed), by verdict and reason.");
    for (const auto& [key, n] : answers_by_verdict_reason_) {
      const std::string_view k(key);
      const std::size_t sep = k.find(kVerdictReasonSeparator);
      e.sample("payretry_attempts_total", {{"verdict", k.substr(0, sep)}, {"reason", k.substr(sep + 1)}}, n);
    }
    e.family("payretry_retries_total", "counter", "Retries of payments and lookups, by the reason they were retried.");
    for (const auto& [reason, n] : retries_by_reason_) e.sample("payretry_retries_total", {{"reason", reason}}, n);
    e.family("payretry_reconcile_left_unknown_total", "counter",
             "Payments a reconcile pass left UNKNOWN without sending, by why: a re-send could not settle them "
             "(final_answer), the re-send rule forbids it (resend_unsafe), the key expired (key_expired), or the "
             "application gave no body (no_body).");
    for (const auto& [reason, n] : reconcile_left_by_reason_)
      e.sample("payretry_reconcile_left_unknown_total", {{"reason", reason}}, n);
    e.family("payretry_webhook_events_total", "counter",
             "Provider notifications (pay_webhook_apply), one per event, by the profile, what the event says (finding: "
             "succeeded, failed, noted; refused when it did not verify) and what it did (effect: settled, recorded, "
             "duplicate, kept, ignored, conflict, refused, error).");
    for (const auto& [k, n] : webhook_events_)
      e.sample("payretry_webhook_events_total",
               {{"provider", std::get<0>(k)}, {"finding", std::get<1>(k)}, {"effect", std::get<2>(k)}}, n);
  }
  e.family("payretry_lookup_attempts_total", "counter", "Status lookups sent by query and reconcile.");
  e.sample("payretry_lookup_attempts_total", {}, lookup_attempts_.load(std::memory_order_relaxed));
  e.family("payretry_retry_budget_exhausted_total", "counter", "Payments and lookups the retry budget stopped.");
  e.sample("payretry_retry_budget_exhausted_total", {}, budget_exhausted_.load(std::memory_order_relaxed));
  e.family("payretry_retry_budget_tokens", "gauge", "Retry budget tokens left (a retry costs some, a success refunds).");
  e.sample("payretry_retry_budget_tokens", {}, static_cast<long>(budget_tokens));
  e.family("payretry_retry_budget_capacity", "gauge", "The retry budget's capacity in tokens.");
  e.sample("payretry_retry_budget_capacity", {}, static_cast<long>(budget_capacity));
  e.family("payretry_replays_blocked_total", "counter", "Same-connection replays libcurl attempted and payretry refused.");
  e.sample("payretry_replays_blocked_total", {}, replays_blocked_.load(std::memory_order_relaxed));
  e.family("payretry_connections_opened_total", "counter", "New connections to the provider (the rest were reused).");
  e.sample("payretry_connections_opened_total", {}, connections_opened_.load(std::memory_order_relaxed));
  e.family("payretry_ledger_batches_total", "counter", "Group commits of the concurrent engine.");
  e.sample("payretry_ledger_batches_total", {}, ledger_batches_.load(std::memory_order_relaxed));
  e.family("payretry_ledger_batch_entries_total", "counter", "Ledger writes those group commits held.");
  e.sample("payretry_ledger_batch_entries_total", {}, ledger_batch_entries_.load(std::memory_order_relaxed));

  e.histogram("payretry_attempt_duration_seconds", "One attempt, from its start to its answer or failure.",
              attempt_latency_.snapshot());
  e.histogram("payretry_payment_duration_seconds", "One payment run, from its first attempt to its outcome.",
              payment_latency_.snapshot());
  e.histogram("payretry_ledger_commit_duration_seconds",
              "One ledger commit: a group commit, or a write of the blocking driver.", ledger_commit_.snapshot());
  return e.take();
}

}  // namespace payretry
