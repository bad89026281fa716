// A provider drawn at random from the profile schema, and a truthful profile
// for it. The wire is drawn first (the world); the profile is then written
// from it and loaded with the library's own parse_profile(), so it passes the
// loader's checks. Truthful: the profile never claims more than the wire
// does (a replay it does not have, a retention longer than the wire's, a
// status word mapped to the wrong outcome, a re-send after an answer the
// wire may hide an unstored error behind); it may claim less (replay none,
// a shorter retention, a status left PENDING or unlisted, no replay marker,
// lookups that query where they could retry), and must still hold.
#pragma once
#include <string>

#include "rng.hpp"
#include "wire.hpp"

namespace payretry::dst {

struct RandomProvider {
  Wire wire;
  std::string profile_json;  // for parse_profile()
  std::string summary;       // one line, for --verbose
};

// `auth`, when given, draws whether the provider takes OAuth2 tokens (and
// whether a 401 may come after processing) from a stream of its own, so
// that the rest of the wire is the same with or without it.
RandomProvider draw_random_provider(Rng& r, Rng* auth = nullptr);

}  // namespace payretry::dst
