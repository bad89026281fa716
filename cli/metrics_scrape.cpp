#include "metrics_scrape.hpp"

#include <cstdlib>

namespace cli {

namespace {

// Calls `each(labels, value)` for every sample line of `metric`. Label
// values here never hold '"' or ',' (outcome, delivery, verdict and reason
// names), so the simple split is exact for this text.
template <class Each>
void for_samples(std::string_view text, std::string_view metric, Each&& each) {
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.empty() || line.front() == '#' || line.substr(0, metric.size()) != metric) continue;
    std::string_view rest = line.substr(metric.size());
    std::string_view labels;
    if (!rest.empty() && rest.front() == '{') {
      const std::size_t close = rest.find('}');
      if (close == std::string_view::npos) continue;
      labels = rest.substr(1, close - 1);
      rest = rest.substr(close + 1);
    }
    if (rest.empty() || rest.front() != ' ') continue;  // another metric sharing the prefix
    each(labels, std::strtod(std::string(rest.substr(1)).c_str(), nullptr));
  }
}

}  // namespace

std::map<std::string, double> sum_by_label(std::string_view text, std::string_view metric, std::string_view label) {
  std::map<std::string, double> out;
  const std::string key = std::string(label) + "=\"";
  for_samples(text, metric, [&](std::string_view labels, double v) {
    const std::size_t k = labels.find(key);
    if (k == std::string_view::npos || (k > 0 && labels[k - 1] != ',')) return;
    const std::size_t from = k + key.size();
    const std::size_t to = labels.find('"', from);
    out[std::string(labels.substr(from, to - from))] += v;
  });
  return out;
}

double sum_of(std::string_view text, std::string_view metric) {
  double total = 0;
  for_samples(text, metric, [&](std::string_view, double v) { total += v; });
  return total;
}

}  // namespace cli
