// A profile may come from a file or an inline object the application passes
// on: any bytes give a Profile or a ProfileError, and a Profile classifies.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "classify.hpp"
#include "profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    const payretry::Profile p = payretry::parse_profile(json);
    // Whatever rules it holds, classifying a few answers must not break.
    payretry::TransportResult t;
    t.request_written = true;
    for (int status : {200, 402, 409, 429, 500, 503}) {
      t.response.status = status;
      t.response.body = R"({"error":{"type":"api_error","code":"x"}})";
      (void)payretry::classify(p, t);
    }
    t.failure = payretry::TransportFailure::timeout;
    (void)payretry::classify(p, t);
  } catch (const payretry::ProfileError&) {
  }
  return 0;
}
