#include "args.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "common.hpp"

namespace cli {

Args Args::parse(const std::vector<std::string>& argv, const ArgSpec& spec) {
  Args a;
  bool flags_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string arg = argv[i];
    // "-" alone is a value (stdin), not a flag.
    if (flags_done || arg.size() < 2 || arg[0] != '-') {
      a.pos_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    std::optional<std::string> inline_value;
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (arg == "-h") arg = "--help";
    if (spec.flags.count(arg)) {
      if (inline_value) throw usage_error(arg + " takes no value");
      a.set_.insert(arg);
    } else if (spec.valued.count(arg)) {
      if (inline_value) {
        a.values_[arg] = *inline_value;
      } else if (i + 1 < argv.size()) {
        a.values_[arg] = argv[++i];
      } else {
        throw usage_error(arg + " needs a value");
      }
    } else {
      throw usage_error("unknown option " + arg);
    }
  }
  return a;
}

std::optional<std::string> Args::value(const std::string& flag) const {
  auto it = values_.find(flag);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

int64_t Args::integer(const std::string& flag, int64_t lo, int64_t hi, int64_t def) const {
  auto v = value(flag);
  if (!v) return def;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end || errno || n < lo || n > hi)
    throw usage_error(flag + " wants an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                      ", got '" + *v + "'");
  return n;
}

void Args::want_positional(const std::vector<std::string>& names) const {
  if (pos_.size() < names.size()) throw usage_error("missing " + names[pos_.size()]);
  if (pos_.size() > names.size()) throw usage_error("unexpected argument '" + pos_[names.size()] + "'");
}

int64_t parse_duration_ms(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double n = std::strtod(text.c_str(), &end);
  const std::string unit = end ? end : "";
  double scale = 0;  // a bare number has no unit: "10" could mean seconds or minutes
  if (unit == "s") scale = 1000;
  else if (unit == "ms") scale = 1;
  else if (unit == "m") scale = 60e3;
  else if (unit == "h") scale = 3600e3;
  else if (unit == "d") scale = 86400e3;
  if (text.empty() || end == text.c_str() || errno || scale == 0 || !(n >= 0) || n * scale > 4e15)
    throw usage_error(flag + " wants a duration such as 30s, 10m, 2h or 1d, got '" + text + "'");
  return static_cast<int64_t>(n * scale);
}

std::string read_file(const std::string& path, int exit_code, const std::string& what) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Failure(exit_code, "cannot read " + what + " " + path + ": " + std::strerror(errno));
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Failure(exit_code, "cannot read " + what + " " + path);
  return s;
}

}  // namespace cli
