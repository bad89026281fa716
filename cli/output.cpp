#include "output.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "common.hpp"

namespace cli {

Json parse_json(const std::string& text) {
  Json j(cJSON_ParseWithLength(text.data(), text.size()));
  if (!j) throw Failure(kExitInternal, "the library returned a document that is not JSON");
  return j;
}

std::string jstr(const cJSON* obj, const char* key) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (cJSON_IsString(v) && v->valuestring) return v->valuestring;
  if (cJSON_IsNumber(v)) return std::to_string(static_cast<long long>(v->valuedouble));
  if (cJSON_IsBool(v)) return cJSON_IsTrue(v) ? "true" : "false";
  return "";
}

int64_t jint(const cJSON* obj, const char* key) {
  const cJSON* v = cJSON_GetObjectItemCaseSensitive(obj, key);
  return cJSON_IsNumber(v) ? static_cast<int64_t>(v->valuedouble) : 0;
}

bool jbool(const cJSON* obj, const char* key) { return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, key)); }

namespace {
bool printed_json = false;  // this process's one document is out
}

void print_json(const cJSON* doc) {
  char* s = cJSON_PrintUnformatted(doc);
  if (!s) throw Failure(kExitInternal, "out of memory printing JSON");
  std::fputs(s, stdout);
  std::fputc('\n', stdout);
  cJSON_free(s);
  printed_json = true;
}

void print_json_text(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  printed_json = true;
}

void print_error_json(int exit_code, const std::string& message) {
  if (printed_json) return;
  cJSON* doc = cJSON_CreateObject();
  cJSON* error = doc ? cJSON_AddObjectToObject(doc, "error") : nullptr;
  if (error && cJSON_AddNumberToObject(error, "exit_code", exit_code) &&
      cJSON_AddStringToObject(error, "message", message.c_str()))
    if (char* s = cJSON_PrintUnformatted(doc)) {
      std::fputs(s, stdout);
      std::fputc('\n', stdout);
      cJSON_free(s);
      printed_json = true;
    }
  cJSON_Delete(doc);  // out of memory: the message on stderr is all there is
}

void print_fields(const std::vector<std::pair<std::string, std::string>>& fields) {
  size_t w = 0;
  for (const auto& f : fields) w = std::max(w, f.first.size());
  for (const auto& [label, value] : fields)
    std::printf("%-*s  %s\n", static_cast<int>(w), label.c_str(), value.c_str());
}

void print_table(const std::vector<std::string>& header, const Rows& rows) {
  std::vector<size_t> w(header.size());
  for (size_t c = 0; c < header.size(); ++c) w[c] = header[c].size();
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], r[c].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < w.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      out += cell;
      if (c + 1 < w.size()) out += std::string(w[c] - cell.size() + 2, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    std::puts(out.c_str());
  };
  line(header);
  for (const auto& r : rows) line(r);
}

std::string format_time(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  // Far-future sentinels (a key that never expires) read better as words.
  if (unix_ms >= INT64_C(253402300800000)) return "never";
  const time_t secs = static_cast<time_t>(unix_ms / 1000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(unix_ms % 1000));
  return buf;
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

namespace {

std::string status_of(const cJSON* a) {
  const int64_t st = jint(a, "http_status");
  if (st) return std::to_string(st);
  return or_dash(jstr(a, "transport_error"));
}

}  // namespace

void print_result(const cJSON* r) {
  print_fields({
      {"order", jstr(r, "order_id")},
      {"outcome", jstr(r, "outcome")},
      {"delivery", jstr(r, "delivery")},
      // Where the money is: SUCCEEDED says the request took effect, not that
      // money moved. Fulfil on paid (or authorized where you capture later).
      {"money state", or_dash(jstr(r, "money_state"))},
      {"idempotency key", jstr(r, "idempotency_key")},
      {"http status", jint(r, "http_status") ? std::to_string(jint(r, "http_status")) : "-"},
      {"provider id", or_dash(jstr(r, "provider_payment_id"))},
      {"provider status", or_dash(jstr(r, "provider_status"))},
      {"error", or_dash(jstr(r, "error"))},
      {"from ledger", jbool(r, "from_ledger") ? "yes (nothing sent)" : "no"},
      {"elapsed", std::to_string(jint(r, "elapsed_ms")) + " ms"},
  });
  const cJSON* attempts = cJSON_GetObjectItemCaseSensitive(r, "attempts");
  if (cJSON_GetArraySize(attempts) == 0) return;
  std::puts("");
  Rows rows;
  const cJSON* a = nullptr;
  cJSON_ArrayForEach(a, attempts) {
    const cJSON* delay = cJSON_GetObjectItemCaseSensitive(a, "delay_ms");
    rows.push_back({std::to_string(jint(a, "attempt")), status_of(a), jstr(a, "verdict"), or_dash(jstr(a, "reason")),
                    std::to_string(jint(a, "elapsed_ms")),
                    delay ? std::to_string(jint(a, "delay_ms")) + " (" + jstr(a, "delay_source") + ")" : "-",
                    jbool(a, "replayed") ? "yes" : "no"});
  }
  print_table({"#", "status", "verdict", "reason", "ms", "then wait ms", "replayed"}, rows);
}

void print_ledger_payment(const cJSON* doc) {
  const cJSON* p = cJSON_GetObjectItemCaseSensitive(doc, "payment");
  print_fields({
      {"order", jstr(p, "order_id")},
      {"state", jstr(p, "state")},
      {"delivery", or_dash(jstr(p, "delivery"))},
      {"money state", or_dash(jstr(p, "money_state"))},
      {"detail", or_dash(jstr(p, "detail"))},
      {"idempotency key", jstr(p, "idempotency_key")},
      {"provider id", or_dash(jstr(p, "provider_payment_id"))},
      {"provider status", or_dash(jstr(p, "provider_status"))},
      {"http status", jint(p, "http_status") ? std::to_string(jint(p, "http_status")) : "-"},
      {"attempts", std::to_string(jint(p, "attempts"))},
      {"created", format_time(jint(p, "created_at"))},
      {"updated", format_time(jint(p, "updated_at"))},
      {"key expires", format_time(jint(p, "key_expires_at"))},
      {"lease", jstr(p, "lease_owner").empty() ? "-"
                                               : jstr(p, "lease_owner") + " until " + format_time(jint(p, "lease_until"))},
  });
  const cJSON* attempts = cJSON_GetObjectItemCaseSensitive(doc, "attempts");
  if (cJSON_GetArraySize(attempts) == 0) return;
  std::puts("");
  Rows rows;
  const cJSON* a = nullptr;
  cJSON_ArrayForEach(a, attempts) {
    const cJSON* delay = cJSON_GetObjectItemCaseSensitive(a, "delay_ms");
    rows.push_back({std::to_string(jint(a, "attempt")), format_time(jint(a, "started_at")), status_of(a),
                    jstr(a, "verdict"), or_dash(jstr(a, "reason")), or_dash(jstr(a, "money_state")),
                    delay ? std::to_string(jint(a, "delay_ms")) : "-", jbool(a, "replayed") ? "yes" : "no"});
  }
  print_table({"#", "started", "status", "verdict", "reason", "money", "then wait ms", "replayed"}, rows);
}

void print_ledger_rows(const cJSON* rows_doc) {
  Rows rows;
  const cJSON* p = nullptr;
  cJSON_ArrayForEach(p, rows_doc) {
    rows.push_back({jstr(p, "order_id"), jstr(p, "state"), or_dash(jstr(p, "money_state")),
                    or_dash(jstr(p, "delivery")), std::to_string(jint(p, "attempts")),
                    or_dash(jstr(p, "provider_payment_id")), format_time(jint(p, "updated_at")),
                    or_dash(jstr(p, "detail"))});
  }
  print_table({"order", "state", "money", "delivery", "attempts", "provider id", "updated", "detail"}, rows);
  std::printf("%zu payment%s\n", rows.size(), rows.size() == 1 ? "" : "s");
}

void print_operation_rows(const cJSON* rows_doc) {
  Rows rows;
  const cJSON* p = nullptr;
  cJSON_ArrayForEach(p, rows_doc) {
    // amount -1: the ledger does not know it (docs/internals.md, "Operations").
    const int64_t amount = jint(p, "amount");
    rows.push_back({jstr(p, "operation"), jstr(p, "operation_ref"), amount < 0 ? "-" : std::to_string(amount),
                    jstr(p, "state"), or_dash(jstr(p, "money_state")), std::to_string(jint(p, "attempts")),
                    or_dash(jstr(p, "provider_payment_id")), format_time(jint(p, "updated_at")),
                    or_dash(jstr(p, "detail"))});
  }
  print_table({"operation", "ref", "amount", "state", "money", "attempts", "provider id", "updated", "detail"}, rows);
  std::printf("%zu operation%s\n", rows.size(), rows.size() == 1 ? "" : "s");
}

}  // namespace cli
