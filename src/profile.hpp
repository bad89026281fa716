// What one provider's contract says about safe retries. For now the two
// built-in behaviours the core needs; the data-driven profile system
// (DESIGN §5) replaces this table in a later change.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace payretry {

struct Profile {
  std::string name;
  std::string key_header;              // where the idempotency key travels
  size_t key_max_length = 255;
  std::string create_path;             // appended to base_url
  // 500 and other unlisted 5xx: true when the contract says a same-key retry
  // is safe, false when the payment must be settled by a query instead.
  bool retry_other_5xx = false;
  std::string should_retry_header;     // server's explicit retry hint, if any
  std::string replay_header;           // marks a replayed idempotent response
  std::vector<std::string> request_id_headers;
};

// nullptr when `name` is not a built-in profile.
const Profile* builtin_profile(std::string_view name);
std::string builtin_profile_names();

}  // namespace payretry
