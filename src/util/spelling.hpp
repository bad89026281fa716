// "Did you mean": the closest of the names valid at a place to a name that is
// not, for error messages about hand-written JSON (a config, a profile), where
// a typo must be refused and the refusal should point at the fix.
#pragma once
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace payretry {

// Edit distance (optimal string alignment: insert, delete, replace, or swap
// two neighbours, the commonest typo), ASCII case folded (a key written
// "Base_URL" differs from base_url only in case: distance 0).
inline size_t edit_distance(std::string_view a, std::string_view b) {
  auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  };
  const size_t w = b.size() + 1;
  std::vector<size_t> d((a.size() + 1) * w);
  for (size_t i = 0; i <= a.size(); ++i) d[i * w] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t best = std::min({d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1,
                              d[(i - 1) * w + j - 1] + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]))
        best = std::min(best, d[(i - 2) * w + j - 2] + 1);
      d[i * w + j] = best;
    }
  return d[a.size() * w + b.size()];
}

// The candidate closest to `given`, or "" when none is close enough to be a
// likely typo: at most 2 edits, and at most a third of the longer name (so
// that "tls" is not "suggested" for "url").
inline std::string closest_name(std::string_view given, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 0;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(given, c);
    const size_t longer = std::max(given.size(), c.size());
    if (d > 2 || d * 3 > longer) continue;
    if (best.empty() || d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

// "; did you mean \"x\"?" for a message, or "" when nothing is close.
inline std::string did_you_mean(std::string_view given, const std::vector<std::string>& candidates) {
  const std::string best = closest_name(given, candidates);
  return best.empty() ? "" : "; did you mean \"" + best + "\"?";
}

}  // namespace payretry
