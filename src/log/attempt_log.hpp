// The attempt log (docs/design.md "Attempt log"): one redacted JSON object per attempt and per
// outcome, to the caller's callback and/or a JSON-lines file.
#pragma once
#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "clock.hpp"
#include "json_writer.hpp"
#include "redact.hpp"
#include "result.hpp"

namespace payretry {

inline constexpr int kLogDebug = 10, kLogInfo = 20, kLogWarn = 30, kLogError = 40;

class AttemptLog {
 public:
  using Sink = std::function<void(int level, const std::string& line)>;

  // Throws Error(Errc::PAY_EIO) when `path` is set and cannot be opened for append.
  // `client_name` goes in every line (empty: none), to tell apart the
  // clients of one process or fleet.
  AttemptLog(Sink sink, const std::string& path, int min_level, std::vector<std::string> secrets, Clock& clock,
             std::string client_name = {});
  ~AttemptLog();  // writes what a concurrent engine left pending

  // After attempt `a` of payment `p` (p.attempts may not yet hold it).
  void attempt(const PaymentResult& p, const AttemptRecord& a);
  // One attempt of a status lookup (query, reconcile): the same record,
  // event "lookup".
  void lookup(const std::string& order_id, const std::string& idempotency_key, const AttemptRecord& a);
  // When the submission ends.
  void outcome(const PaymentResult& p);
  // A call that failed (an error code, nothing sent by it): why, at warn.
  void call_failed(const std::string& order_id, int code, const std::string& message);
  // Anything else worth a line (configuration warnings).
  void note(int level, const std::string& event, const std::string& message);
  // The calling thread (a concurrent engine's) writes its lines to the file
  // without flushing each one; it calls flush() once per loop turn and
  // before handing any answer to its caller, so a caller never sees an
  // answer whose lines are not yet in the file. Other threads flush each line.
  void flush_per_turn_on_this_thread();
  void flush();
  // Reopens the log file by its path (after log rotation moved it away).
  // Nothing to do without one. Throws Error(PAY_EIO) when it cannot be
  // opened; the old file then stays in use, so no line is lost.
  void reopen();

 private:
  void write_attempt(const char* event, const std::string& order_id, const std::string& idempotency_key,
                     const AttemptRecord& a, std::string_view traceparent);
  // Starts a line: its object opened, "ts", "level", "client" and "event" written.
  void begin_line(JsonWriter& w, int64_t unix_ms, int level, std::string_view event) const;
  // Hands a finished line to the sink and the file.
  void emit(int level, const std::string& line);
  void write_pending();  // with file_mu_ held
  // What a line shows of a value: the value itself, without a copy, when
  // nothing in it needs hiding or mending (most order ids, keys and provider
  // ids); else its redacted copy, held here. Neither copied nor moved (the
  // view may point into the copy): used where it is made.
  class Shown {
   public:
    Shown(std::string_view text, const std::vector<std::string>& secrets)
        : fixed_(redact_if_needed(text, secrets)), view_(fixed_ ? std::string_view(*fixed_) : text) {}
    Shown(const Shown&) = delete;
    Shown& operator=(const Shown&) = delete;
    std::string_view view() const { return view_; }

   private:
    std::optional<std::string> fixed_;
    std::string_view view_;
  };
  Shown clean(std::string_view s) const { return Shown(s, secrets_); }

  Sink sink_;
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::unique_ptr<std::FILE, FileCloser> file_;  // set once at construction when path_ is; swapped by reopen()
  std::mutex file_mu_;
  std::vector<std::thread::id> turn_flushing_threads_;  // under file_mu_
  std::string pending_;                                 // whole lines not yet written; under file_mu_
  std::atomic<bool> has_pending_{false};                // pending_ is not empty (read without the lock)
  int min_level_;
  std::vector<std::string> secrets_;
  Clock& clock_;
  std::string client_name_;
};

}  // namespace payretry
