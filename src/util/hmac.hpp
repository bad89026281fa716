// HMAC-SHA256 and the encodings webhook signatures travel in (hex, compared
// in constant time). The request fingerprint (fingerprint.hpp) keeps its own
// keyed context: it MACs every payment, these MAC one notification each.
#pragma once
#include <string>
#include <string_view>

namespace payretry {

// The 32 raw bytes of HMAC-SHA256(key, message); throws std::runtime_error
// only if OpenSSL fails.
std::string hmac_sha256(std::string_view key, std::string_view message);

// Lower-case hex of `bytes`.
std::string hex_encode(std::string_view bytes);
// Hex of either case, an even number of digits; false (and `out` empty)
// for anything else.
bool hex_decode(std::string_view text, std::string& out);

// Equal length and equal bytes, in time that depends only on the length:
// a signature compared byte by byte with an early exit tells a forger how
// many leading bytes were right.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace payretry
