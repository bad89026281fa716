#include "attempt_log.hpp"

#include <cJSON.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "error.hpp"
#include "json_util.hpp"
#include "redact.hpp"

namespace payretry {
namespace {

std::string iso8601(int64_t unix_ms) {
  const std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(unix_ms % 1000));
  return buf;
}

}  // namespace

AttemptLog::AttemptLog(Sink sink, const std::string& path, int min_level, std::vector<std::string> secrets,
                       Clock& clock)
    : sink_(std::move(sink)), min_level_(min_level), secrets_(std::move(secrets)), clock_(clock) {
  if (!path.empty()) {
    file_.reset(std::fopen(path.c_str(), "a"));
    if (!file_) throw Error(Errc::PAY_EIO, "log.path: cannot open for append: " + std::string(std::strerror(errno)));
  }
}

std::string AttemptLog::clean(const std::string& s) const { return redact(s, secrets_); }

void AttemptLog::emit(int level, cJSON* obj) {
  const std::string line = json_print(obj);
  if (sink_) sink_(level, line);
  if (file_) {
    std::lock_guard<std::mutex> lock(file_mu_);
    std::fputs(line.c_str(), file_.get());
    std::fputc('\n', file_.get());
    std::fflush(file_.get());
  }
}

void AttemptLog::attempt(const PaymentResult& p, const AttemptRecord& a) {
  write_attempt("attempt", p.order_id, p.idempotency_key, a);
}

void AttemptLog::lookup(const std::string& order_id, const std::string& idempotency_key, const AttemptRecord& a) {
  write_attempt("lookup", order_id, idempotency_key, a);
}

void AttemptLog::write_attempt(const char* event, const std::string& order_id, const std::string& idempotency_key,
                               const AttemptRecord& a) {
  if (kLogInfo < min_level_ || (!sink_ && !file_)) return;
  JsonPtr o(cJSON_CreateObject());
  if (!o) throw std::bad_alloc();
  json_add(o.get(), "ts", iso8601(a.started_unix_ms));
  json_add(o.get(), "event", event);
  json_add(o.get(), "order_id", clean(order_id));
  json_add(o.get(), "idempotency_key", clean(idempotency_key));
  AttemptRecord safe = a;
  safe.transport_error = clean(a.transport_error);
  safe.provider_request_id = clean(a.provider_request_id);
  json_add_attempt(o.get(), safe);
  emit(kLogInfo, o.get());
}

void AttemptLog::outcome(const PaymentResult& p) {
  const int level = p.outcome == Outcome::unknown ? kLogWarn : kLogInfo;
  if (level < min_level_ || (!sink_ && !file_)) return;
  JsonPtr o(cJSON_CreateObject());
  if (!o) throw std::bad_alloc();
  json_add(o.get(), "ts", iso8601(clock_.unix_ms()));
  json_add(o.get(), "event", "outcome");
  json_add(o.get(), "order_id", clean(p.order_id));
  json_add(o.get(), "idempotency_key", clean(p.idempotency_key));
  json_add(o.get(), "outcome", outcome_name(p.outcome));
  json_add(o.get(), "delivery", delivery_name(p.delivery));
  json_add(o.get(), "attempts", static_cast<int>(p.attempts.size()));
  json_add(o.get(), "http_status", p.http_status);
  json_add_or_null(o.get(), "provider_payment_id", clean(p.provider_payment_id));
  json_add_or_null(o.get(), "provider_status", clean(p.provider_status));
  json_add_or_null(o.get(), "error", clean(p.error));
  json_add(o.get(), "elapsed_ms", p.elapsed_ms);
  emit(level, o.get());
}

void AttemptLog::note(int level, const std::string& event, const std::string& message) {
  if (level < min_level_ || (!sink_ && !file_)) return;
  JsonPtr o(cJSON_CreateObject());
  if (!o) throw std::bad_alloc();
  json_add(o.get(), "ts", iso8601(clock_.unix_ms()));
  json_add(o.get(), "event", event);
  json_add(o.get(), "message", clean(message));
  emit(level, o.get());
}

}  // namespace payretry
