// Engine-side errors of a failed call. Errc is generated from PAY_ERROR_MAP
// (payretry/errors.h), one member per public code with the public name and
// number, so the C face returns the number as it is and a code appended to
// the public table can be thrown at once: there is no second list to forget.
#pragma once
#include <stdexcept>
#include <string>

#include "payretry/errors.h"

namespace payretry {

enum class Errc : int {
#define PAYRETRY_ERRC_(name, value, text) name = value,
  PAY_ERROR_MAP(PAYRETRY_ERRC_)
#undef PAYRETRY_ERRC_
};

class Error : public std::runtime_error {
 public:
  Error(Errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Errc code() const noexcept { return code_; }

 private:
  Errc code_;
};

}  // namespace payretry
