// Command-line parsing: one small parser for every command, so flags behave
// the same everywhere (--flag VALUE, --flag=VALUE, "--" ends the flags).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace cli {

struct ArgSpec {
  std::set<std::string> valued;  // flags that take a value, e.g. "--config"
  std::set<std::string> flags;   // switches, e.g. "--json"
};

class Args {
 public:
  // Throws cli::Failure (usage) for an unknown flag or a missing value.
  static Args parse(const std::vector<std::string>& argv, const ArgSpec& spec);

  const std::vector<std::string>& positional() const { return pos_; }
  bool has(const std::string& flag) const { return set_.count(flag) > 0 || values_.count(flag) > 0; }
  std::optional<std::string> value(const std::string& flag) const;
  // An integer flag within [lo, hi], or `def` when absent; a usage error otherwise.
  int64_t integer(const std::string& flag, int64_t lo, int64_t hi, int64_t def) const;
  // Exactly `n` positional arguments named in `names` (for the message).
  void want_positional(const std::vector<std::string>& names) const;

 private:
  std::vector<std::string> pos_;
  std::map<std::string, std::string> values_;
  std::set<std::string> set_;
};

// "500ms", "30s", "10m", "2h", "1d" (a bare number is seconds) -> milliseconds.
// Throws a usage error naming `flag` otherwise.
int64_t parse_duration_ms(const std::string& flag, const std::string& text);

// Reads a whole file ("-" is stdin). Throws Failure with `exit_code` naming the path.
std::string read_file(const std::string& path, int exit_code, const std::string& what);

}  // namespace cli
