// payretry-sim: runs the simulated payment provider until SIGINT/SIGTERM.
#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "server.hpp"
#include "spelling.hpp"

namespace {

const char kUsage[] =
    "usage: payretry-sim [options]\n"
    "\n"
    "A local payment provider that injects faults at the socket level from a seeded\n"
    "schedule, with the idempotency semantics of the provider it plays (--profile).\n"
    "Listens on 127.0.0.1 only.\n"
    "\n"
    "  --port N            TCP port (default 0: pick a free one)\n"
    "  --profile NAME      the provider it plays (default stripe): stripe checkout_com\n"
    "                      paypal square wechatpay_v3 adyen mollie alipay\n"
    "  --threads N         worker threads (default 1)\n"
    "  --seed N            seed of the fault schedule (default 1)\n"
    "  --fault NAME=P      probability of a fault, repeatable; the rest is 'none'\n"
    "                      names: refuse reset_before lost_response slow 429 429_date\n"
    "                             502 503 500 decline malformed 401_after\n"
    "                             401_after_forgetting\n"
    "  --mix realistic     the fault mix of `payretry demo` (lost_response 5%, reset_before\n"
    "                      3%, slow 2%, 429 3%, 503 5%, 500 3%, malformed 2%, decline 3%);\n"
    "                      a later --fault overrides one of its entries\n"
    "  --latency-ms N      answer every create and lookup N ms after it arrived (default 0)\n"
    "  --slow-ms N         how long 'slow' holds a request (default 2000)\n"
    "  --retry-after-s N   Retry-After sent with 429 (default 1)\n"
    "  --refuse-ms N       how long 'refuse' keeps the listeners closed (default 100)\n"
    "  --api-key K         require 'Authorization: Bearer K' (the bearer modes: stripe\n"
    "                      checkout_com square adyen mollie); repeatable: each key is\n"
    "                      then its own merchant account (keys, payments, lookups)\n"
    "  --scope-header H    any mode: keys, payments and lookups are partitioned by the\n"
    "                      value of request header H (as Stripe-Account at Stripe)\n"
    "  --keys DIR          a key directory laid out like tests/keys/: wechatpay_v3 and\n"
    "                      alipay then verify request signatures (and timestamps) and\n"
    "                      sign every answer; without it they check only the form\n"
    "  --hmac-secret S     any mode: every create and lookup carries 'X-Signature: v1=<hex\n"
    "                      HMAC-SHA256(S, METHOD \\n TARGET \\n BODY)>', else 401 (a signing\n"
    "                      scheme no client builds in: what a request hook is for)\n"
    "  --oauth2-client ID:SECRET\n"
    "                      paypal's OAuth2 client (default test-client-id:test-client-secret)\n"
    "  --oauth2-ttl-s N    expires_in of paypal's tokens (default 32400)\n"
    "  --oauth2-delay-ms N paypal's token endpoint answers N ms late (default 0; -1:\n"
    "                      never, the request is held until the client closes)\n"
    "  --key-header H      idempotency key header (default: the profile's, e.g.\n"
    "                      Idempotency-Key for stripe)\n"
    "  --host ADDR         listen address; loopback only (default 127.0.0.1)\n"
    "  --webhook-url URL   send a notification (webhook) for every payment whose final state\n"
    "                      the provider decides, in its format, signed its way, to this\n"
    "                      http:// URL (absent: none sent); GET /__admin/webhooks lists them\n"
    "  --webhook-secret S  the HMAC key of stripe, square and checkout_com notifications;\n"
    "                      adyen: the HMAC key in hex (wechatpay_v3 and alipay sign with\n"
    "                      --keys; paypal with --keys DIR/paypal_webhook_key.pem)\n"
    "  --webhook-api-v3-key K\n"
    "                      wechatpay_v3: the 32-byte APIv3 key that seals `resource`\n"
    "  --webhook-id ID     paypal: the webhook id in the signed message\n"
    "  --webhook-faults dup=P,reorder=P,delay_ms=N,forge=P,replay=P,stale=P,early=P\n"
    "                      per notification, seeded from --seed: sent twice; held back\n"
    "                      behind later ones; every one N ms late; a badly signed copy\n"
    "                      beside it; an earlier one sent again; a copy signed outside the\n"
    "                      time window (stripe, wechatpay_v3); sent before the create is\n"
    "                      answered. Also POST /__admin/config {\"webhook_faults\":\"...\"}\n"
    "  --list              print the profiles and fault names, then exit\n"
    "  --help              this text\n"
    "\n"
    "Authentication per mode (docs/simulator.md, \"Authentication\"):\n"
    "  wechatpay_v3  every create and lookup carries 'Authorization: WECHATPAY2-SHA256-RSA2048\n"
    "                mchid=..,nonce_str=..,signature=..,timestamp=..,serial_no=..', else 401\n"
    "                SIGN_ERROR; with --keys signed answers (Wechatpay-* headers)\n"
    "  alipay        POST /gateway.do only: common parameters in the query (or form body),\n"
    "                biz_content in a form body, sign; else code 40001/40002; with --keys\n"
    "                a \"sign\" in every answer\n"
    "  paypal        POST /v1/oauth2/token (Basic ID:SECRET, grant_type=client_credentials)\n"
    "                gives a token; creates and lookups need 'Authorization: Bearer <it>',\n"
    "                else 401 invalid_token\n"
    "\n"
    "Every profile also takes its provider's captures, refunds and cancels, whose money\n"
    "movements the truth counts per operation key (docs/simulator.md, \"Operations\").\n"
    "\n"
    "Prints 'listening on 127.0.0.1:<port>' once ready. Admin endpoints under /__admin/:\n"
    "truth, stats, config, script, outage, reset, customer, clock, oauth2/revoke, health,\n"
    "webhooks (docs/simulator.md).\n"
    "\n"
    "Examples:\n"
    "  payretry-sim --port 8080 --seed 7 --mix realistic\n"
    "  payretry-sim --profile checkout_com --fault 500=0.1 --latency-ms 150\n"
    "  payretry-sim --profile wechatpay_v3 --keys tests/keys\n"
    "  curl -s localhost:8080/__admin/truth\n";

// The mix `payretry demo` runs: common production failures, at rates that
// make every retry path show up in a few hundred payments.
const std::pair<const char*, double> kRealisticMix[] = {
    {"lost_response", 0.05}, {"reset_before", 0.03}, {"slow", 0.02},      {"429", 0.03},
    {"503", 0.05},           {"500", 0.03},          {"malformed", 0.02}, {"decline", 0.03}};

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "payretry-sim: %s\n(try --help)\n", msg.c_str());
  std::exit(2);
}

long long parse_int(const std::string& opt, const std::string& v, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || n < lo || n > hi) usage_error("bad value for " + opt + ": " + v);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  payretry_sim::Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--list") {
      std::fputs("profiles:", stdout);
      for (const std::string& p : payretry_sim::profiles()) std::printf(" %s", p.c_str());
      std::fputs("\nfaults:", stdout);
      for (const std::string& f : payretry_sim::fault_names()) std::printf(" %s", f.c_str());
      std::fputs("\n", stdout);
      return 0;
    }
    // An option the simulator does not have is named as such, before its
    // value is looked for ("missing value for --bogus" sent people looking
    // for a value), with the one it most likely meant. Each of these takes
    // one; the chain below reads it.
    static const std::vector<std::string> kValueOptions = {
        "--api-key",  "--fault",           "--hmac-secret", "--host",       "--key-header", "--keys",
        "--latency-ms", "--mix",           "--oauth2-client", "--oauth2-delay-ms", "--oauth2-ttl-s", "--port",
        "--profile",  "--refuse-ms",       "--retry-after-s", "--scope-header", "--seed",   "--slow-ms",
        "--threads",  "--webhook-api-v3-key", "--webhook-faults", "--webhook-id", "--webhook-secret",
        "--webhook-url"};
    {
      const std::string name = arg.substr(0, arg.find('='));
      if (std::find(kValueOptions.begin(), kValueOptions.end(), name) == kValueOptions.end()) {
        std::vector<std::string> all = kValueOptions;
        all.insert(all.end(), {"--help", "--list"});
        usage_error("unknown option " + name + payretry::did_you_mean(name, all));
      }
    }
    std::string value;
    const auto eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      usage_error("missing value for " + arg);
    }
    if (arg == "--port") {
      opt.port = static_cast<uint16_t>(parse_int(arg, value, 0, 65535));
    } else if (arg == "--threads") {
      opt.threads = static_cast<int>(parse_int(arg, value, 1, 256));
    } else if (arg == "--seed") {
      char* end = nullptr;
      errno = 0;
      opt.seed = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end || errno || value[0] == '-') usage_error("bad value for --seed: " + value);
    } else if (arg == "--fault") {
      const auto e = value.find('=');
      if (e == std::string::npos) usage_error("--fault wants NAME=P, got " + value);
      char* end = nullptr;
      const std::string p = value.substr(e + 1);
      const double prob = std::strtod(p.c_str(), &end);
      if (p.empty() || *end) usage_error("bad probability in --fault " + value);
      opt.faults[value.substr(0, e)] = prob;
    } else if (arg == "--mix") {
      if (value != "realistic") usage_error("--mix knows only 'realistic', got " + value);
      // Explicit --fault flags win, whichever side of --mix they are on.
      for (const auto& [name, p] : kRealisticMix) opt.faults.emplace(name, p);
    } else if (arg == "--latency-ms") {
      opt.latency_ms = static_cast<int>(parse_int(arg, value, 0, 3600 * 1000));
    } else if (arg == "--slow-ms") {
      opt.slow_ms = static_cast<int>(parse_int(arg, value, 0, 3600 * 1000));
    } else if (arg == "--retry-after-s") {
      opt.retry_after_s = static_cast<int>(parse_int(arg, value, 0, 86400));
    } else if (arg == "--refuse-ms") {
      opt.refuse_ms = static_cast<int>(parse_int(arg, value, 0, 3600 * 1000));
    } else if (arg == "--api-key") {
      if (value.empty()) usage_error("--api-key wants a non-empty key");
      if (opt.api_key.empty()) opt.api_key = value;
      else opt.api_keys.push_back(value);
    } else if (arg == "--scope-header") {
      if (value.empty()) usage_error("--scope-header wants a header name");
      opt.scope_header = value;
    } else if (arg == "--oauth2-delay-ms") {
      opt.oauth2_delay_ms = static_cast<int>(parse_int(arg, value, -1, 3600 * 1000));
    } else if (arg == "--profile") {
      opt.profile = value;
    } else if (arg == "--key-header") {
      opt.key_header = value;
    } else if (arg == "--keys") {
      opt.keys_dir = value;
    } else if (arg == "--hmac-secret") {
      if (value.empty()) usage_error("--hmac-secret wants a non-empty secret");
      opt.hmac_secret = value;
    } else if (arg == "--oauth2-client") {
      const auto colon = value.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == value.size()) {
        usage_error("--oauth2-client wants ID:SECRET, got " + value);
      }
      opt.oauth2_client_id = value.substr(0, colon);
      opt.oauth2_client_secret = value.substr(colon + 1);
    } else if (arg == "--oauth2-ttl-s") {
      opt.oauth2_ttl_s = static_cast<int>(parse_int(arg, value, 1, 10LL * 365 * 86400));
    } else if (arg == "--host") {
      opt.host = value;
    } else if (arg == "--webhook-url") {
      opt.webhook_url = value;
    } else if (arg == "--webhook-secret") {
      if (value.empty()) usage_error("--webhook-secret wants a non-empty key");
      opt.webhook_secret = value;
    } else if (arg == "--webhook-api-v3-key") {
      opt.webhook_api_v3_key = value;
    } else if (arg == "--webhook-id") {
      opt.webhook_id = value;
    } else if (arg == "--webhook-faults") {
      opt.webhook_faults = value;
    } else {
      usage_error("unknown option " + arg);
    }
  }

  // Block the signals before the workers start so only sigwait() below sees them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  try {
    payretry_sim::Server server(opt);
    std::printf("listening on 127.0.0.1:%u\n", static_cast<unsigned>(server.port()));
    std::fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    server.stop();
  } catch (const std::invalid_argument& e) {
    usage_error(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "payretry-sim: %s\n", e.what());
    return 1;
  }
  return 0;
}
