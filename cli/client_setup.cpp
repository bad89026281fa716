#include "client_setup.hpp"

#include <cstdio>
#include <cstdlib>

namespace cli {

void add_client_flags(ArgSpec& spec) {
  spec.valued.insert("--config");
  spec.flags.insert("--verbose");
  spec.flags.insert("--json");
  spec.flags.insert("--help");
}

std::string load_config(const Args& args) {
  if (auto path = args.value("--config")) return read_file(*path, kExitConfig, "config file");
  const char* env = std::getenv("PAYRETRY_CONFIG");
  if (!env || !*env)
    throw Failure(kExitConfig, "no config: give --config FILE or set PAYRETRY_CONFIG (a path, or the JSON itself)");
  std::string v = env;
  const size_t first = v.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && v[first] == '{') return v;
  return read_file(v, kExitConfig, "config file (PAYRETRY_CONFIG)");
}

pay::client open_client(const std::string& config, bool verbose) {
  try {
    if (!verbose) return pay::client(config);
    // The library redacts every line before the callback sees it.
    return pay::client(config, [](int, std::string_view line) {
      std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
    });
  } catch (const pay::error& e) {
    throw failure_of(e);
  }
}

Failure failure_of(const pay::error& e) {
  std::string what;
  switch (e.code()) {
    case PAY_ECONFIG: what = "config: "; break;
    case PAY_ELEDGER:
    case PAY_EIO: what = "ledger: "; break;
    case PAY_EMISMATCH: what = "mismatch: "; break;
    case PAY_ENOTFOUND: what = "not found: "; break;
    default: what = std::string(pay_strerror(e.code())) + ": "; break;
  }
  // The library's messages often name their subject already ("config:
  // ...", "ledger: ..."): said once, not twice.
  const std::string message = e.what();
  if (!what.empty() && message.rfind(what.substr(0, what.size() - 2), 0) == 0) what.clear();
  return Failure(exit_for_error(e.code()), what + message);
}

}  // namespace cli
