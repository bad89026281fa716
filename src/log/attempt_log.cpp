#include "attempt_log.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "error.hpp"
#include "redact.hpp"

namespace payretry {
namespace {

// A line's first bytes are about this long; one allocation holds most lines.
constexpr size_t kLineReserve = 512;

// "2026-12-02T09:43:10.791Z", written by hand: snprintf and gmtime_r were a
// fifth of a log line's cost. Civil date from days since 1970-01-01 (the
// proleptic Gregorian calendar, as gmtime), after Howard Hinnant's
// days_from_civil inverse.
void iso8601(int64_t unix_ms, char (&buf)[64]) {
  int64_t secs = unix_ms / 1000, ms = unix_ms % 1000;
  if (ms < 0) ms += 1000, --secs;
  int64_t days = secs / 86400, sod = secs % 86400;
  if (sod < 0) sod += 86400, --days;
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  if (y < 0 || y > 9999) {  // outside what four digits hold: the slow, general way
    const std::time_t t = static_cast<std::time_t>(secs);
    std::tm tm{};
    gmtime_r(&t, &tm);
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
    return;
  }
  auto put = [&](int at, int64_t v, int width) {
    for (int k = width - 1; k >= 0; --k, v /= 10) buf[at + k] = static_cast<char>('0' + v % 10);
  };
  put(0, y, 4);
  buf[4] = '-';
  put(5, m, 2);
  buf[7] = '-';
  put(8, d, 2);
  buf[10] = 'T';
  put(11, sod / 3600, 2);
  buf[13] = ':';
  put(14, sod / 60 % 60, 2);
  buf[16] = ':';
  put(17, sod % 60, 2);
  buf[19] = '.';
  put(20, ms, 3);
  buf[23] = 'Z';
  buf[24] = 0;
}

// A concurrent engine's lines wait for its once-a-turn flush, up to this much.
constexpr size_t kPendingBytes = 64 * 1024;

}  // namespace

AttemptLog::AttemptLog(Sink sink, const std::string& path, int min_level, std::vector<std::string> secrets,
                       Clock& clock, std::string client_name)
    : sink_(std::move(sink)),
      path_(path),
      min_level_(min_level),
      secrets_(std::move(secrets)),
      clock_(clock),
      client_name_(std::move(client_name)) {
  if (!path.empty()) {
    file_.reset(std::fopen(path.c_str(), "a"));
    if (!file_) throw Error(Errc::PAY_EIO, "log.path: cannot open for append: " + std::string(std::strerror(errno)));
    std::setvbuf(file_.get(), nullptr, _IONBF, 0);  // lines are gathered in pending_ and written whole
  }
}

AttemptLog::~AttemptLog() {
  std::lock_guard<std::mutex> lock(file_mu_);
  if (file_) write_pending();
}

void AttemptLog::flush_per_turn_on_this_thread() {
  std::lock_guard<std::mutex> lock(file_mu_);
  turn_flushing_threads_.push_back(std::this_thread::get_id());
}

void AttemptLog::flush() {
  // Called for every answer the engine hands over: no lock when nothing waits.
  if (path_.empty() || !has_pending_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(file_mu_);
  write_pending();
}

// One write of whole lines (the file is unbuffered): lines of several
// processes appending to one file never interleave mid-line.
void AttemptLog::write_pending() {
  if (pending_.empty()) return;
  std::fwrite(pending_.data(), 1, pending_.size(), file_.get());
  pending_.clear();
  has_pending_.store(false, std::memory_order_release);
}

void AttemptLog::reopen() {
  if (path_.empty()) return;
  std::unique_ptr<std::FILE, FileCloser> fresh(std::fopen(path_.c_str(), "a"));
  if (!fresh) throw Error(Errc::PAY_EIO, "log.path: cannot reopen for append: " + std::string(std::strerror(errno)));
  std::setvbuf(fresh.get(), nullptr, _IONBF, 0);
  std::lock_guard<std::mutex> lock(file_mu_);
  write_pending();   // lines written before the rotation go to the old file
  file_.swap(fresh);  // the old one closes as `fresh` goes, after the lock
}

void AttemptLog::begin_line(JsonWriter& w, int64_t unix_ms, int level, std::string_view event) const {
  char ts[64];
  iso8601(unix_ms, ts);
  w.begin_object();
  w.field("ts", ts);
  w.field("level", level >= kLogError ? "error" : level >= kLogWarn ? "warn" : level >= kLogInfo ? "info" : "debug");
  if (!client_name_.empty()) w.field("client", client_name_);
  w.field("event", event);
}

void AttemptLog::emit(int level, const std::string& line) {
  if (sink_) sink_(level, line);
  if (!path_.empty()) {
    std::lock_guard<std::mutex> lock(file_mu_);
    pending_.append(line).push_back('\n');
    has_pending_.store(true, std::memory_order_release);
    const auto& batching = turn_flushing_threads_;
    if (pending_.size() >= kPendingBytes ||
        std::find(batching.begin(), batching.end(), std::this_thread::get_id()) == batching.end())
      write_pending();
  }
}

void AttemptLog::attempt(const PaymentResult& p, const AttemptRecord& a) {
  write_attempt("attempt", p.order_id, p.idempotency_key, a, p.traceparent);
}

void AttemptLog::lookup(const std::string& order_id, const std::string& idempotency_key, const AttemptRecord& a) {
  write_attempt("lookup", order_id, idempotency_key, a, {});
}

void AttemptLog::write_attempt(const char* event, const std::string& order_id, const std::string& idempotency_key,
                               const AttemptRecord& a, std::string_view traceparent) {
  if (kLogInfo < min_level_ || (!sink_ && path_.empty())) return;
  std::string line;
  line.reserve(kLineReserve);
  JsonWriter w(line);
  begin_line(w, a.started_unix_ms, kLogInfo, event);
  w.field("order_id", clean(order_id).view());
  w.field("idempotency_key", clean(idempotency_key).view());
  if (!traceparent.empty()) w.field("traceparent", traceparent);  // checked: 55 hex digits and dashes
  write_attempt_fields(w, a, clean(a.transport_error).view(), clean(a.provider_request_id).view());
  w.end_object();
  emit(kLogInfo, line);
}

void AttemptLog::outcome(const PaymentResult& p) {
  const int level = p.outcome == Outcome::unknown ? kLogWarn : kLogInfo;
  if (level < min_level_ || (!sink_ && path_.empty())) return;
  std::string line;
  line.reserve(kLineReserve);
  JsonWriter w(line);
  begin_line(w, clock_.unix_ms(), level, "outcome");
  w.field("order_id", clean(p.order_id).view());
  w.field("idempotency_key", clean(p.idempotency_key).view());
  if (!p.traceparent.empty()) w.field("traceparent", p.traceparent);
  w.field("outcome", outcome_name(p.outcome));
  w.field("delivery", delivery_name(p.delivery));
  w.field("attempts", static_cast<int>(p.attempts.size()));
  w.field("http_status", p.http_status);
  w.field_or_null("provider_payment_id", clean(p.provider_payment_id).view());
  w.field_or_null("provider_status", clean(p.provider_status).view());
  w.field_or_null("error", clean(p.error).view());
  w.field("elapsed_ms", p.elapsed_ms);
  w.end_object();
  emit(level, line);
}

void AttemptLog::call_failed(const std::string& order_id, int code, const std::string& message) {
  if (kLogWarn < min_level_ || (!sink_ && path_.empty())) return;
  std::string line;
  line.reserve(kLineReserve);
  JsonWriter w(line);
  begin_line(w, clock_.unix_ms(), kLogWarn, "call_failed");
  w.field("order_id", clean(order_id).view());
  w.field("code", code);
  w.field("message", clean(message).view());
  w.end_object();
  emit(kLogWarn, line);
}

void AttemptLog::note(int level, const std::string& event, const std::string& message) {
  if (level < min_level_ || (!sink_ && path_.empty())) return;
  std::string line;
  line.reserve(kLineReserve);
  JsonWriter w(line);
  begin_line(w, clock_.unix_ms(), level, event);
  w.field("message", clean(message).view());
  w.end_object();
  emit(level, line);
}

}  // namespace payretry
