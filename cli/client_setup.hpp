// The config (--config FILE, or PAYRETRY_CONFIG as a path or as JSON text) and
// the library client built from it, with the library's errors turned into the
// CLI's exit codes.
#pragma once

#include <payretry/payretry.hpp>

#include <string>
#include <utility>

#include "args.hpp"
#include "common.hpp"

namespace cli {

// Flags every command that talks to the library accepts.
void add_client_flags(ArgSpec& spec);

// The config text; Failure(kExitConfig) when none is given or it cannot be read.
std::string load_config(const Args& args);

// A client for `config`; --verbose sends the library's redacted log lines to stderr.
pay::client open_client(const std::string& config, bool verbose);

// A pay::error as the Failure main prints, with the exit code of its PAY_E* code.
Failure failure_of(const pay::error& e);

// Runs a library call, turning pay::error into Failure.
template <class F>
auto call(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const pay::error& e) {
    throw failure_of(e);
  }
}

}  // namespace cli
