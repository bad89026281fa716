// What a payment's recorded history says about sending it again.
//
// A payment that may have been processed can be re-sent with its key only
// when the re-send cannot run it a second time. That is a fact of the
// provider (its replay kind) and of what earlier attempts observed, so it is
// read from the entries themselves: each send with the profile's verdict and
// whether the provider may have acted on it, each lookup with what it found.
// Never from a column that a later write could have overwritten.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ledger.hpp"
#include "profile.hpp"

namespace payretry {

// Verdicts of history entries that are not the classifier's own: a send a
// dead run may have made without recording it, and what lookups found.
inline constexpr const char* kUnrecordedSend = "unrecorded";
inline constexpr const char* kLookupFound = "found";
inline constexpr const char* kLookupAbsent = "absent";        // proof: no payment exists
inline constexpr const char* kLookupNotFound = "not_found";   // not found, but no proof
inline constexpr const char* kLookupFailed = "failed";

struct HistoryReading {
  // Some send may have been acted on by the provider, and no later lookup
  // proved that no payment exists.
  bool may_have_processed = false;
  // A same-key re-send cannot run the payment a second time (while the key
  // is retained).
  bool resend_safe = true;
  // When not safe: the observation that forbids it, in words.
  std::string why;
  // Unix ms of the latest moment a possibly processed send may have left;
  // 0 when none may have. "Not found" counts only after the read-lag grace
  // from here.
  int64_t last_possible_send = 0;
  // Some send under the key got the provider's final answer (a decline, a
  // refusal: verdict fail, with an HTTP status) after an earlier send may
  // have been processed. A same-key re-send gets that answer again, so
  // re-sending cannot settle the payment: reconcile leaves it to a lookup,
  // a webhook or a person (`final_why` says which answer).
  bool final_answer = false;
  std::string final_why;
  // Sends that may have been processed were cleared only by a lookup's
  // "not found" (proof because not_found_grace_ms passed, not because the
  // provider's key store said so). A 401 answered before the provider's
  // idempotency layer then settles nothing: the grace is a judgement of how
  // long the provider may still process, not its word (D41).
  bool cleared_by_lookup = false;
};

HistoryReading read_history(const Profile& profile, const std::vector<AttemptEntry>& history);

// read_history() one entry at a time: the rule as a fold with a small state
// (three flags and a time), so that tests/model can enumerate every state and
// every kind of entry and print the transitions as the SPIN model's table.
// The model then checks this code, not a copy of it.
class HistoryFold {
 public:
  explicit HistoryFold(const Profile& profile) : profile_(profile) {}
  void add(const AttemptEntry& e);
  HistoryReading reading() const;
  // The state, for the model's generator.
  bool may_have_processed() const { return h_.may_have_processed; }
  bool forbidding() const { return forbidding_; }
  bool final_answer() const { return h_.final_answer; }

 private:
  const Profile& profile_;
  HistoryReading h_;
  bool forbidding_ = false;
};

// The entry a new claim writes for a run that died holding the payment: its
// last send (if it made one) was never recorded, and may have been processed
// with any answer. `lease_until` is when that run's lease ended: no byte of
// it left later.
AttemptEntry unrecorded_send(int number, int64_t lease_until);

}  // namespace payretry
