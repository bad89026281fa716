#include "profile_money.hpp"

#include <utility>

#include "json_path.hpp"
#include "profile_fields.hpp"

namespace payretry {

using namespace profile_fields;

namespace {

MoneyState money_state_at(const cJSON* v, const std::string& path) {
  const std::string s = string_at(v, path);
  const std::optional<MoneyState> m = parse_money_state(s);
  // "unknown" is what an unlisted word reads already; a map that names it
  // says nothing and most likely hides a typo.
  if (!m || *m == MoneyState::unknown)
    fail(path, quoted(s) + " is not a money state (awaiting_customer, pending, authorized, paid, partly_refunded, "
                           "refunded or failed)");
  return *m;
}

// word -> state; the child's map is the whole answer.
std::map<std::string, MoneyState> states_at(const cJSON* v, const std::string& path, const char* what) {
  object_at(v, path);
  std::map<std::string, MoneyState> out;
  for (const cJSON* c = v->child; c; c = c->next) {
    const std::string word = c->string ? c->string : "";
    const std::string wp = path + "." + word;
    if (word.empty()) fail(wp, std::string("a ") + what + " must not be empty");
    if (out.count(word)) fail(wp, "given twice");
    out.emplace(word, money_state_at(c, wp));
  }
  return out;
}

std::vector<MoneyReader> readers_at(const cJSON* v, const std::string& path) {
  if (!cJSON_IsArray(v)) fail(path, "must be an array of readers ({\"path\": \"$.status\"}), tried in order");
  std::vector<MoneyReader> out;
  int i = 0;
  for (const cJSON* c = v->child; c; c = c->next, ++i) {
    const std::string rp = element(path, i);
    object_at(c, rp);
    check_members(c, rp, {"path", "states"});
    MoneyReader r;
    const cJSON* at = cJSON_GetObjectItemCaseSensitive(c, "path");
    if (!at) fail(member(rp, "path"), "missing");
    r.path = json_path_at(at, member(rp, "path"), false);
    if (const cJSON* st = cJSON_GetObjectItemCaseSensitive(c, "states"))
      r.states = states_at(st, member(rp, "states"), "word");
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

void apply_money(ProfileMoney& m, const cJSON* v, const std::string& path) {
  object_at(v, path);
  check_members(v, path, {"states", "create", "lookup", "webhook", "events", "created"});
  if (const cJSON* s = cJSON_GetObjectItemCaseSensitive(v, "states"))
    m.states = states_at(s, member(path, "states"), "word");
  if (const cJSON* e = cJSON_GetObjectItemCaseSensitive(v, "events"))
    m.events = states_at(e, member(path, "events"), "event type");
  const std::pair<const char*, std::vector<MoneyReader>*> lists[] = {
      {"create", &m.create}, {"lookup", &m.lookup}, {"webhook", &m.webhook}};
  for (const auto& [name, slot] : lists)
    if (const cJSON* r = cJSON_GetObjectItemCaseSensitive(v, name)) *slot = readers_at(r, member(path, name));
  if (const cJSON* c = cJSON_GetObjectItemCaseSensitive(v, "created")) {
    const std::string cp = member(path, "created");
    if (cJSON_IsNull(c)) m.created = MoneyState::unknown;
    else m.created = money_state_at(c, cp);
  }
}

void check_money(const ProfileMoney& m, const std::string& path) {
  const std::pair<const char*, const std::vector<MoneyReader>*> lists[] = {
      {"create", &m.create}, {"lookup", &m.lookup}, {"webhook", &m.webhook}};
  for (const auto& [name, readers] : lists)
    for (size_t i = 0; i < readers->size(); ++i)
      if ((*readers)[i].states.empty() && m.states.empty())
        fail(element(member(path, name), static_cast<int>(i)),
             "reads words that no map lists: give the reader its own \"states\" or the block its \"states\"");
}

}  // namespace payretry
