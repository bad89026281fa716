// Engine-side errors of a failed call. The C face maps each kind to its
// PAY_E* code; the engine itself knows nothing of the C API.
#pragma once
#include <stdexcept>
#include <string>

namespace payretry {

enum class Errc { invalid, config, mismatch, too_big, key, version, hook, io, not_found };

class Error : public std::runtime_error {
 public:
  Error(Errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Errc code() const noexcept { return code_; }

 private:
  Errc code_;
};

}  // namespace payretry
