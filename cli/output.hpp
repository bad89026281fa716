// Printing: the readable tables of every command, and the JSON helpers they
// read the library's documents with. Everything here writes to stdout only;
// messages and progress go to stderr elsewhere.
#pragma once

#include <cjson/cJSON.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cli {

struct JsonDeleter {
  void operator()(cJSON* p) const { cJSON_Delete(p); }
};
using Json = std::unique_ptr<cJSON, JsonDeleter>;

// Parses a document the library produced; throws Failure(internal) if it is not JSON.
Json parse_json(const std::string& text);

// Field readers that never throw: "" / 0 for a missing or null member.
std::string jstr(const cJSON* obj, const char* key);
int64_t jint(const cJSON* obj, const char* key);
bool jbool(const cJSON* obj, const char* key);

// One JSON document on stdout: compact, one line, so `| jq` and scripts both work.
void print_json(const cJSON* doc);
void print_json_text(const std::string& text);
// With --json, a call that fails before printing its document prints this one
// instead, {"error":{"exit_code":N,"message":"..."}}, so that stdout always
// holds exactly one document. Nothing when a document was printed already.
void print_error_json(int exit_code, const std::string& message);

using Rows = std::vector<std::vector<std::string>>;
// "label  value" lines, labels aligned.
void print_fields(const std::vector<std::pair<std::string, std::string>>& fields);
// A table with a header row; columns padded to their widest cell.
void print_table(const std::vector<std::string>& header, const Rows& rows);

// Unix milliseconds as "2026-11-30 21:14:05.123Z"; "-" for 0.
std::string format_time(int64_t unix_ms);
// Empty strings shown as "-" so that columns stay readable.
std::string or_dash(const std::string& s);

// A result document (pay_result_json) as fields plus its attempts.
void print_result(const cJSON* result);
// A ledger document (pay_ledger_get) as fields plus its attempts.
void print_ledger_payment(const cJSON* doc);
// A list of ledger rows (pay_ledger_list).
void print_ledger_rows(const cJSON* rows);
// A payment's operation rows (captures, refunds, cancels), under its ledger document.
void print_operation_rows(const cJSON* rows);

}  // namespace cli
