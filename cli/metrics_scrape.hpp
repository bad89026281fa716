// Reading back the Prometheus text of pay_client_metrics, as a scraper
// would: the demo checks that the metrics agree with its own counts.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace cli {

// Sums the samples of `metric` (exactly that name, any labels) by the value
// of their label `label`: payretry_payments_total by "outcome", say.
std::map<std::string, double> sum_by_label(std::string_view text, std::string_view metric, std::string_view label);
// The sum of every sample of `metric`; 0 when it has none.
double sum_of(std::string_view text, std::string_view metric);

}  // namespace cli
