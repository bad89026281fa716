// Reading where the money is from a provider's answer or event, through a
// profile's "money" block (profile.hpp ProfileMoney). Pure: what moves a
// payment's money state, and whether an answer or event may move it at
// all, is decided by the callers (money_moves, event_moves_money).
#pragma once
#include <cJSON.h>

#include <string_view>
#include <vector>

#include "profile.hpp"

namespace payretry {

// The state the first of `readers` whose path yields a value says, through
// the reader's own map or else m.states; `unknown` when no reader yields a
// value or the word is in no map. `body` may be null (no answer, not JSON).
MoneyState money_in_answer(const ProfileMoney& m, const std::vector<MoneyReader>& readers, const cJSON* body);

// A create's answer (`success`: the create succeeded): money_in_answer over
// m.create, and for a success whose answer carries no word any reader
// finds (WeChat Pay's prepay_id), m.created.
MoneyState money_in_create(const ProfileMoney& m, const cJSON* body, bool success);

// An event's: its type through m.events first, else the webhook readers
// over `object` (what the notification's fields are read from: the body,
// an Adyen item, WeChat Pay's decrypted resource, form fields).
MoneyState money_in_event(const ProfileMoney& m, std::string_view event_type, const cJSON* object);

}  // namespace payretry
