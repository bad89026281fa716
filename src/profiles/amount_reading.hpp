// Reading the amount a request body asks for (a create's, or a capture's or
// refund's), through a profile's "amount" reader (profile.hpp AmountField).
// Pure; what an amount allows (a refund never above what was captured) is
// the ledger's guard (src/model/operation_rules.hpp), not this reader's.
//
// Units: for "minor" the provider's own minor units, as the body says them
// (Stripe's 1000 for 10.00 EUR, 100 for 100 JPY); for "decimal" hundredths
// of the major unit ("10.00" -> 1000, and "100" JPY -> 10000). The two are
// not the same unit across currencies, and need not be: an amount is only
// ever compared with the amounts of the same payment, which one profile
// reads with one reader format.
#pragma once
#include <cJSON.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "profile.hpp"

namespace payretry {

// Whether `path` names one place by members and indexes only ("$.a.b",
// "$.purchase_units[0].amount.value"): no wildcard, so it reads one value.
bool concrete_json_path(std::string_view path);

// The amount `field` reads in `body`. A string met where the path goes on
// is read as JSON text when it holds an object: Alipay's biz_content may be
// given as an object (form_flat sends its JSON text) or as that text. Minor: a non-negative integer (a
// JSON integer, or a string of digits: Stripe's form fields make the two the
// same bytes); decimal, a string of digits with at most two decimals
// ("10", "10.5", "10.00"), or a JSON number that is exactly such a value,
// as hundredths. nullopt with `error` saying why for anything else: no
// body, no value at the path, a sign, an exponent, a third decimal, a value
// beyond 2^53.
std::optional<int64_t> read_amount(const AmountField& field, const cJSON* body, std::string& error);

}  // namespace payretry
