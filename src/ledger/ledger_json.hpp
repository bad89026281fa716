// The ledger's rows as JSON, for pay_ledger_get / pay_ledger_list.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ledger.hpp"

namespace payretry {
// One row and its history; with its operation rows (captures, refunds,
// cancels) as "operations" when `operations` is given (a payment's read).
std::string payment_json(const PaymentRow& row, const std::vector<AttemptEntry>& attempts,
                         const std::vector<PaymentRow>* operations = nullptr);
std::string payments_json(const std::vector<PaymentRow>& rows);
}  // namespace payretry
