#include "answer_names.hpp"

#include <optional>

#include "json_path.hpp"

namespace payretry {
namespace {

std::string_view value_of(const std::string& placeholder, const RequestNames& r) {
  if (placeholder == "{order_id}") return r.order_id;
  if (placeholder == "{merchant_id}") return r.merchant_id;
  if (placeholder == "{provider_id}") return r.provider_id;
  if (placeholder == "{amount}") return r.amount;
  return r.key;  // "{key}": the loader admits no other
}

}  // namespace

std::string answer_names_other(const AnswerNames& names, const cJSON* answer, const RequestNames& request,
                               bool must_carry) {
  for (const auto& [path, placeholder] : names) {
    const std::string_view want = value_of(placeholder, request);
    if (placeholder == "{amount}" && want.empty()) continue;  // not known: nothing to hold the answer to
    const std::optional<std::string> got = answer ? json_path_first_string(answer, path) : std::nullopt;
    if (!got) {
      if (must_carry) return "the answer does not name its request at " + path;
      continue;
    }
    if (*got != want) return "the answer names another request at " + path + " (" + *got + ")";
  }
  return {};
}

}  // namespace payretry
