// payretry webhook verify / apply: a provider's notification captured as a raw
// HTTP/1.1 request, handed to pay_webhook_apply as the server received it.
#include <cctype>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client_setup.hpp"
#include "commands.hpp"
#include "output.hpp"

namespace cli {
namespace {

const char kHelp[] =
    "usage: payretry webhook verify --request FILE [--provider P] [--url URL] [--tolerance D] [options]\n"
    "       payretry webhook apply --request FILE [--provider P] [--url URL] [options]\n"
    "\n"
    "Hands payretry one notification (webhook) a provider sent, captured as a raw\n"
    "HTTP/1.1 request, and prints what payretry makes of it: verified or refused (and\n"
    "why), the events it names, and the reply the provider would get.\n"
    "\n"
    "  verify            verifies it with the config's \"webhook\" secrets and reads its\n"
    "                    events WITHOUT RECORDING ANYTHING: the client is opened on an\n"
    "                    in-memory ledger (\"ledger\": \"memory:\" replaces the config's), so\n"
    "                    no durable ledger is opened or touched. For debugging a secret.\n"
    "                    (Mollie's id-only notifications are verified by asking the\n"
    "                    provider: that lookup is sent.) Exit 0 verified, 1 refused.\n"
    "  apply             records it in the config's ledger, as pay_webhook_apply does\n"
    "                    for a live endpoint: each event once, settling the UNKNOWN\n"
    "                    payment it reports. Exit 0 accepted, 1 refused, 7 not stored\n"
    "                    (the ledger or a confirming lookup failed).\n"
    "  --request FILE    the captured request; - reads stdin (format below)\n"
    "  --provider P      the provider (profile) to read it as, instead of the config's\n"
    "  --url URL         the full URL the provider called, when the file's request line\n"
    "                    and Host header do not give it (Square signs it)\n"
    "  --tolerance D     verify only: accept a signed timestamp up to D old (30s, 10m,\n"
    "                    24h at most), e.g. to verify an old capture's signature\n"
    "  --config FILE, --json, --verbose   as for every command\n"
    "\n"
    "The request file is the request as it came over the wire: the request line,\n"
    "the headers one per line, an empty line, then the body bytes exactly as sent\n"
    "(lines may end in CRLF or LF):\n"
    "\n"
    "  POST /hooks/stripe HTTP/1.1\n"
    "  Host: shop.example\n"
    "  Content-Type: application/json\n"
    "  Stripe-Signature: t=1733490000,v1=5257a869...\n"
    "\n"
    "  {\"id\":\"evt_1\",\"type\":\"payment_intent.succeeded\",...}\n"
    "\n"
    "With a Content-Length header the body is that many bytes after the empty line;\n"
    "without one it is the rest of the file (mind an editor's final newline). The URL\n"
    "is the request line's when absolute, else https://HOST plus its path.\n"
    "\n"
    "Examples:\n"
    "  payretry webhook verify --config shop.json --request captured.http\n"
    "  payretry webhook verify --config shop.json --provider adyen --request - < adyen.http\n"
    "  payretry webhook apply --config shop.json --request captured.http --json\n";

struct CapturedRequest {
  std::string method;
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

bool same_name(const std::string& a, const char* b) {
  const std::string bs(b);
  if (a.size() != bs.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(bs[i]))) return false;
  return true;
}

// The raw HTTP/1.1 request in `text`; a usage error naming what is wrong.
CapturedRequest parse_request(const std::string& text) {
  CapturedRequest r;
  size_t at = 0;
  auto next_line = [&](std::string& line) -> bool {
    if (at >= text.size()) return false;
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    line = text.substr(at, nl - at);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    at = nl < text.size() ? nl + 1 : nl;
    return true;
  };
  std::string line;
  if (!next_line(line) || line.empty()) throw usage_error("the request file has no request line (METHOD TARGET HTTP/1.1)");
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? std::string::npos : line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos || line.compare(sp2 + 1, 5, "HTTP/") != 0)
    throw usage_error("the request file's first line is not METHOD TARGET HTTP/1.1: '" + line.substr(0, 80) + "'");
  r.method = line.substr(0, sp1);
  const std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  bool ended = false;
  while (next_line(line)) {
    if (line.empty()) {
      ended = true;
      break;
    }
    const size_t colon = line.find(':');
    if (colon == std::string::npos || colon == 0)
      throw usage_error("the request file has a header line without a name: '" + line.substr(0, 80) + "'");
    r.headers.emplace_back(line.substr(0, colon), trim(line.substr(colon + 1)));
  }
  if (!ended && at < text.size()) throw usage_error("the request file's headers do not end with an empty line");
  r.body = text.substr(at);
  std::string host;
  for (const auto& [name, value] : r.headers) {
    if (same_name(name, "Transfer-Encoding") && !same_name(value, "identity"))
      throw usage_error("the captured request is " + value + "-encoded: save its decoded body instead");
    if (same_name(name, "Host") && host.empty()) host = value;
    if (same_name(name, "Content-Length")) {
      size_t n = 0;
      if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos || value.size() > 15)
        throw usage_error("the request file's Content-Length is not a number: '" + value + "'");
      n = static_cast<size_t>(std::stoull(value));
      if (n > r.body.size())
        throw usage_error("the request file's body has " + std::to_string(r.body.size()) +
                          " bytes, fewer than its Content-Length " + value);
      r.body.resize(n);
    }
  }
  if (target.find("://") != std::string::npos) r.url = target;
  else if (!host.empty()) r.url = "https://" + host + target;
  else r.url = target;
  return r;
}

// The config with `ledger` (and `provider`, `webhook.tolerance_ms`) replaced;
// text that is not a JSON object is left for the library to refuse.
std::string override_config(const std::string& text, const std::string& ledger, const std::string& provider,
                            int64_t tolerance_ms) {
  Json doc(cJSON_ParseWithLength(text.data(), text.size()));
  if (!doc || !cJSON_IsObject(doc.get())) return text;
  auto set = [](cJSON* obj, const char* key, cJSON* value) {
    if (!value) throw Failure(kExitInternal, "out of memory");
    if (cJSON_GetObjectItemCaseSensitive(obj, key)) cJSON_ReplaceItemInObjectCaseSensitive(obj, key, value);
    else cJSON_AddItemToObject(obj, key, value);
  };
  if (!ledger.empty()) set(doc.get(), "ledger", cJSON_CreateString(ledger.c_str()));
  if (!provider.empty()) set(doc.get(), "provider", cJSON_CreateString(provider.c_str()));
  if (tolerance_ms > 0) {
    cJSON* w = cJSON_GetObjectItemCaseSensitive(doc.get(), "webhook");
    if (cJSON_IsObject(w)) set(w, "tolerance_ms", cJSON_CreateNumber(static_cast<double>(tolerance_ms)));
  }
  char* s = cJSON_PrintUnformatted(doc.get());
  if (!s) throw Failure(kExitInternal, "out of memory");
  std::string out(s);
  cJSON_free(s);
  return out;
}

void print_reply(const pay::webhook_reply& reply, const cJSON* outcome, bool verify) {
  const std::string verdict = jstr(outcome, "verdict");
  std::string shown = verdict;
  if (verify) shown = verdict == "accepted" ? "verified" : verdict == "refused" ? "refused (not verified)" : verdict;
  std::string answer = std::to_string(reply.status);
  if (!reply.content_type.empty()) answer += " " + reply.content_type;
  answer += reply.body.empty() ? ", no body" : ", body " + reply.body;
  print_fields({
      {"verdict", shown},
      {"scheme", or_dash(jstr(outcome, "scheme"))},
      {"why", or_dash(jstr(outcome, "why"))},
      {"reply", answer},
  });
  const cJSON* events = cJSON_GetObjectItemCaseSensitive(outcome, "events");
  if (cJSON_GetArraySize(events) == 0) return;
  std::puts("");
  Rows rows;
  const cJSON* e = nullptr;
  cJSON_ArrayForEach(e, events) {
    std::vector<std::string> row = {jstr(e, "event_id"), or_dash(jstr(e, "type")), or_dash(jstr(e, "order_id")),
                                    or_dash(jstr(e, "provider_payment_id")), jstr(e, "finding")};
    if (!verify) {
      row.push_back(jstr(e, "effect"));
      std::string states = jstr(e, "state_before");
      if (!states.empty() || !jstr(e, "state_after").empty()) states = or_dash(states) + " -> " + or_dash(jstr(e, "state_after"));
      row.push_back(or_dash(states));
      row.push_back(or_dash(jstr(e, "money_state")));
    }
    rows.push_back(std::move(row));
  }
  if (verify) print_table({"event", "type", "order", "provider id", "finding"}, rows);
  else print_table({"event", "type", "order", "provider id", "finding", "effect", "state", "money"}, rows);
}

}  // namespace

int cmd_webhook(const Argv& argv) {
  ArgSpec spec;
  add_client_flags(spec);
  spec.valued.insert({"--request", "--provider", "--url", "--tolerance"});
  const Args a = Args::parse(argv, spec);
  if (a.has("--help") || a.positional().empty()) {
    if (!a.has("--help")) throw usage_error("webhook wants a subcommand: verify or apply (try --help)");
    std::printf("%s\n%s\n%s", kHelp, kConfigHelp, kExitCodesHelp);
    return kExitOk;
  }
  const std::string sub = a.positional()[0];
  if (sub != "verify" && sub != "apply") throw usage_error("unknown webhook subcommand '" + sub + "' (verify or apply)");
  if (a.positional().size() > 1) throw usage_error("unexpected argument '" + a.positional()[1] + "'");
  const bool verify = sub == "verify";
  const std::optional<std::string> request_path = a.value("--request");
  if (!request_path) throw usage_error("webhook " + sub + " wants --request FILE (- for stdin)");
  int64_t tolerance_ms = 0;
  if (auto d = a.value("--tolerance")) {
    if (!verify) throw usage_error("--tolerance is for webhook verify only: apply keeps the provider's window");
    tolerance_ms = parse_duration_ms("--tolerance", *d);
    if (tolerance_ms < 1000 || tolerance_ms > 86400000) throw usage_error("--tolerance wants 1s to 24h");
  }
  const std::string config = override_config(load_config(a), verify ? "memory:" : "",
                                             a.value("--provider").value_or(""), tolerance_ms);
  CapturedRequest req = parse_request(read_file(*request_path, kExitUsage, "request file"));
  if (auto url = a.value("--url")) req.url = *url;
  const pay::client client = open_client(config, a.has("--verbose"));
  const pay::webhook_reply reply = call([&] { return client.apply_webhook(req.method, req.url, req.headers, req.body); });
  const Json outcome = parse_json(reply.outcome);
  const std::string verdict = jstr(outcome.get(), "verdict");
  if (a.has("--json")) {
    Json doc(cJSON_CreateObject());
    cJSON_AddBoolToObject(doc.get(), "verified", verdict != "refused");
    cJSON_AddBoolToObject(doc.get(), "recorded", !verify && verdict == "accepted");
    cJSON* r = cJSON_AddObjectToObject(doc.get(), "reply");
    cJSON_AddNumberToObject(r, "status", reply.status);
    cJSON_AddStringToObject(r, "content_type", reply.content_type.c_str());
    cJSON_AddStringToObject(r, "body", reply.body.c_str());
    cJSON_AddItemToObject(doc.get(), "outcome", cJSON_Duplicate(outcome.get(), true));
    print_json(doc.get());
  } else {
    print_reply(reply, outcome.get(), verify);
  }
  if (verdict == "accepted") return kExitOk;
  if (verdict == "refused") return kExitFailed;
  return kExitLedger;  // retry: verified, not stored
}

}  // namespace cli
