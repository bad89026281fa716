#include "money_reading.hpp"

#include <optional>
#include <string>

#include "json_path.hpp"

namespace payretry {

namespace {

// The state the first reader that finds a word says; nullopt when no
// reader finds one.
std::optional<MoneyState> first_word(const ProfileMoney& m, const std::vector<MoneyReader>& readers,
                                     const cJSON* body) {
  if (!body) return std::nullopt;
  for (const MoneyReader& r : readers) {
    const std::vector<std::string> words = json_path_strings(body, r.path);
    if (words.empty()) continue;
    // The first reader that finds a word decides, even when it does not
    // know the word: a capture PayPal reports in a status this profile has
    // no name for says nothing about the money, and the order's status
    // behind it must not speak for the capture.
    const std::map<std::string, MoneyState>& states = r.states.empty() ? m.states : r.states;
    // A path with a wildcard reads every part of the payment (each of a
    // PayPal order's captures): the whole is what money_of_parts says.
    std::vector<MoneyState> parts;
    for (const std::string& word : words) {
      const auto it = states.find(word);
      parts.push_back(it == states.end() ? MoneyState::unknown : it->second);
    }
    return money_of_parts(parts);
  }
  return std::nullopt;
}

}  // namespace

MoneyState money_in_answer(const ProfileMoney& m, const std::vector<MoneyReader>& readers, const cJSON* body) {
  return first_word(m, readers, body).value_or(MoneyState::unknown);
}

MoneyState money_in_create(const ProfileMoney& m, const cJSON* body, bool success) {
  const std::optional<MoneyState> read = first_word(m, m.create, body);
  // `created` speaks only for an answer that carries no word at all: a word
  // the profile does not map is unknown, never what `created` says.
  if (!read) return success ? m.created : MoneyState::unknown;
  return *read;
}

MoneyState money_in_event(const ProfileMoney& m, std::string_view event_type, const cJSON* object) {
  if (!event_type.empty()) {
    const auto it = m.events.find(std::string(event_type));
    if (it != m.events.end()) return it->second;
  }
  return money_in_answer(m, m.webhook, object);
}

}  // namespace payretry
