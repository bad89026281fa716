// payretry check: is this config good to run payments with? Everything short
// of a payment: the library parses it (every key, type and range; secrets
// read from their *_env / *_file), resolves the provider profile and opens
// the ledger; check then reads the ledger, and with --probe asks the
// provider's host for any HTTP answer.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client_setup.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "probe.hpp"

namespace cli {
namespace {

const char kHelp[] =
    "usage: payretry check [CONFIG] [--probe] [--timeout-ms N] [--config FILE] [--json] [--verbose]\n"
    "\n"
    "Checks a config without making a payment: every key, type and range; the\n"
    "secrets it names in *_env variables and *_file files; the provider profile;\n"
    "the ledger, opened and read. Warnings (a memory: ledger, no create path, TLS\n"
    "checks off, a SQLite file that did not exist and was created) are printed and\n"
    "do not fail the check.\n"
    "\n"
    "  CONFIG          the config file (else --config FILE or PAYRETRY_CONFIG)\n"
    "  --probe         also send one GET to base_url, with no credentials and no\n"
    "                  body: any HTTP answer (even 404) means the provider is reachable\n"
    "  --timeout-ms N  bound on the probe (default 5000)\n"
    "\n"
    "Exit: 0 good to go, 3 config error (the message names the key), 7 the ledger\n"
    "cannot be opened or read, 11 --probe got no HTTP answer from base_url.\n"
    "\n"
    "Examples:\n"
    "  payretry check /etc/shop/payretry.json\n"
    "  payretry check --config shop.json --probe --json | jq .probe\n";

// A URL with any password between "://user:" and "@" masked.
std::string masked_url(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t query = url.find('?', scheme + 3);
  const size_t at = url.rfind('@', query == std::string::npos ? std::string::npos : query);
  if (at == std::string::npos || at < scheme) return url;
  const size_t colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

// The provider the config names, in words: the library resolved it already.
std::string provider_text(const cJSON* cfg) {
  const cJSON* p = cJSON_GetObjectItemCaseSensitive(cfg, "provider");
  if (!p) return "generic";
  if (cJSON_IsString(p)) return p->valuestring;
  const std::string name = jstr(p, "name"), base = jstr(p, "extends");
  return "inline profile" + (name.empty() ? "" : " " + name) + " (extends " + (base.empty() ? "generic" : base) + ")";
}

// Where the ledger is, without its password.
std::string ledger_text(const cJSON* cfg) {
  const cJSON* l = cJSON_GetObjectItemCaseSensitive(cfg, "ledger");
  if (cJSON_IsString(l)) return masked_url(l->valuestring);
  if (const std::string url = jstr(l, "url"); !url.empty()) return masked_url(url);
  if (const std::string var = jstr(l, "url_env"); !var.empty()) return "from $" + var;
  return "from " + jstr(l, "url_file");
}

// The proxy the library will take, read the way it reads it.
std::string proxy_of(const cJSON* cfg) {
  if (std::string inline_url = jstr(cfg, "proxy"); !inline_url.empty()) return inline_url;
  if (std::string var = jstr(cfg, "proxy_env"); !var.empty()) {
    const char* v = std::getenv(var.c_str());
    return v ? v : "";
  }
  if (std::string path = jstr(cfg, "proxy_file"); !path.empty()) {
    std::ifstream f(path, std::ios::binary);
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!s.empty() && s.back() == '\n') s.pop_back();
    if (!s.empty() && s.back() == '\r') s.pop_back();
    return s;
  }
  return "";
}

// The config as check hands it to the library: the same, except that a
// log.level of "error" becomes "warn", so that the library's warnings about
// the config reach check whatever level the service logs at. Text that is not
// a JSON object goes as it is, for the library to refuse.
std::string with_warnings_logged(const std::string& text) {
  Json cfg(cJSON_Parse(text.c_str()));
  cJSON* log = cJSON_GetObjectItemCaseSensitive(cfg.get(), "log");
  const cJSON* level = cJSON_GetObjectItemCaseSensitive(log, "level");
  if (!cJSON_IsString(level) || std::string(level->valuestring) != "error") return text;
  cJSON_ReplaceItemInObjectCaseSensitive(log, "level", cJSON_CreateString("warn"));
  std::unique_ptr<char, void (*)(void*)> out(cJSON_PrintUnformatted(cfg.get()), cJSON_free);
  return out ? std::string(out.get()) : text;
}

// The file a sqlite:/// ledger URL names ("" for other ledgers), read the way
// the library reads the URL: opening a missing file creates an empty ledger,
// which check must say, since a mistyped path would otherwise pass.
std::string sqlite_path(const cJSON* cfg) {
  const cJSON* l = cJSON_GetObjectItemCaseSensitive(cfg, "ledger");
  std::string url = cJSON_IsString(l) ? l->valuestring : jstr(l, "url");
  if (url.empty() && !jstr(l, "url_env").empty()) {
    const char* v = std::getenv(jstr(l, "url_env").c_str());
    url = v ? v : "";
  }
  if (url.empty() && !jstr(l, "url_file").empty()) {
    std::ifstream f(jstr(l, "url_file"), std::ios::binary);
    std::getline(f, url);
    if (!url.empty() && url.back() == '\r') url.pop_back();
  }
  const std::string scheme = "sqlite://";
  return url.rfind(scheme, 0) == 0 ? url.substr(scheme.size()) : "";
}

}  // namespace

int cmd_check(const Argv& argv) {
  ArgSpec spec;
  add_client_flags(spec);
  spec.flags.insert("--probe");
  spec.valued.insert("--timeout-ms");
  const Args a = Args::parse(argv, spec);
  if (a.has("--help")) {
    std::printf("%s\n%s\n%s", kHelp, kConfigHelp, kExitCodesHelp);
    return kExitOk;
  }
  if (a.positional().size() > 1) throw usage_error("unexpected argument '" + a.positional()[1] + "'");
  if (!a.positional().empty() && a.value("--config"))
    throw usage_error("give the config once: CONFIG or --config FILE");
  const int64_t timeout_ms = a.integer("--timeout-ms", 1, 600000, 5000);
  const std::string text =
      a.positional().empty() ? load_config(a) : read_file(a.positional()[0], kExitConfig, "config file");

  // The library's own warnings about the config, as it opens the client.
  std::mutex lock;
  std::vector<std::string> warnings;
  {
    const Json parsed(cJSON_Parse(text.c_str()));
    const std::string db = parsed ? sqlite_path(parsed.get()) : "";
    struct stat st {};
    if (!db.empty() && ::stat(db.c_str(), &st) != 0 && errno == ENOENT)
      warnings.push_back("ledger: " + db + " did not exist: check created an empty ledger there (a wrong path?)");
  }
  const bool verbose = a.has("--verbose");
  const pay::client client = [&] {
    try {
      return pay::client(with_warnings_logged(text), [&](int, std::string_view line) {
        if (verbose) std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
        Json doc(cJSON_ParseWithLength(line.data(), line.size()));
        if (doc && jstr(doc.get(), "event") == "config_warning") {
          std::lock_guard<std::mutex> g(lock);
          warnings.push_back(jstr(doc.get(), "message"));
        }
      });
    } catch (const pay::error& e) {
      throw failure_of(e);
    }
  }();
  // Opening may be lazy for some stores: a read proves the ledger answers.
  call([&] { return client.ledger_list(std::nullopt, 0, 1); });

  const Json cfg = parse_json(text);  // the library accepted it: it is JSON
  const std::string base_url = jstr(cfg.get(), "base_url");
  ProbeResult pr;
  const bool probing = a.has("--probe");
  if (probing) {
    ProbeTarget t;
    t.url = base_url;
    while (!t.url.empty() && t.url.back() == '/') t.url.pop_back();
    const cJSON* tls = cJSON_GetObjectItemCaseSensitive(cfg.get(), "tls");
    const cJSON* verify = cJSON_GetObjectItemCaseSensitive(tls, "verify");
    t.tls_verify = !cJSON_IsFalse(verify);
    t.ca_file = jstr(tls, "ca_file");
    t.proxy = proxy_of(cfg.get());
    t.timeout_ms = timeout_ms;
    pr = probe(t);
  }
  std::vector<std::string> snapshot;
  {
    std::lock_guard<std::mutex> g(lock);
    snapshot = warnings;
  }

  if (a.has("--json")) {
    Json doc(cJSON_CreateObject());
    cJSON_AddBoolToObject(doc.get(), "ok", !probing || pr.reachable);
    cJSON_AddStringToObject(doc.get(), "provider", provider_text(cfg.get()).c_str());
    cJSON_AddStringToObject(doc.get(), "base_url", base_url.c_str());
    cJSON_AddStringToObject(doc.get(), "ledger", ledger_text(cfg.get()).c_str());
    cJSON* w = cJSON_AddArrayToObject(doc.get(), "warnings");
    for (const std::string& s : snapshot) cJSON_AddItemToArray(w, cJSON_CreateString(s.c_str()));
    if (probing) {
      cJSON* p = cJSON_AddObjectToObject(doc.get(), "probe");
      cJSON_AddBoolToObject(p, "reachable", pr.reachable);
      cJSON_AddNumberToObject(p, "http_status", static_cast<double>(pr.http_status));
      cJSON_AddNumberToObject(p, "elapsed_ms", static_cast<double>(pr.elapsed_ms));
      if (!pr.reachable) cJSON_AddStringToObject(p, "error", pr.error.c_str());
    } else {
      cJSON_AddNullToObject(doc.get(), "probe");
    }
    print_json(doc.get());
  } else {
    std::vector<std::pair<std::string, std::string>> fields = {
        {"config", "valid"},
        {"provider", provider_text(cfg.get())},
        {"base_url", base_url},
        {"ledger", ledger_text(cfg.get()) + " (opened and read)"},
    };
    if (probing)
      fields.emplace_back("probe", pr.reachable ? "reachable: HTTP " + std::to_string(pr.http_status) + " in " +
                                                      std::to_string(pr.elapsed_ms) + " ms"
                                                : "unreachable: " + pr.error);
    for (const std::string& s : snapshot) fields.emplace_back("warning", s);
    print_fields(fields);
  }
  if (probing && !pr.reachable) {
    // The document (with --json) is printed; the message goes to stderr.
    std::fprintf(stderr, "payretry: provider unreachable: %s: %s\n", base_url.c_str(), pr.error.c_str());
    return kExitUnreachable;
  }
  return kExitOk;
}

}  // namespace cli
