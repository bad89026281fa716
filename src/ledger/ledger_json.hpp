// The ledger's rows as JSON, for pay_ledger_get / pay_ledger_list.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ledger.hpp"

namespace payretry {
std::string payment_json(const PaymentRow& row, const std::vector<AttemptEntry>& attempts);
std::string payments_json(const std::vector<PaymentRow>& rows);
}  // namespace payretry
