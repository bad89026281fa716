// The config is the caller's JSON: anything but a Config or a ConfigError
// (a crash, another exception, a config that breaks its own ranges) is a defect.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    const payretry::Config c = payretry::parse_config(json);
    // A parsed config keeps its promises.
    if (c.retry.max_attempts < 1 || c.retry.deadline_ms <= 0 || c.retry.backoff_base_ms < 0 ||
        c.retry.backoff_cap_ms < 0 || c.retry.retry_after_max_ms < 0)
      std::abort();
  } catch (const payretry::ConfigError& e) {
    // An error says which key is wrong. (That it never quotes a credential
    // is tests/unit/test_config.cpp's: here the fuzzer puts the secret's
    // text into key names too, which an error rightly names.)
    if (e.what()[0] == '\0') std::abort();
  }
  return 0;
}
