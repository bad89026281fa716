// Prints the decision table of one built-in profile as a Promela include
// for settlement.pml: the profile's replay kind and lookup, and the verdict
// class the real classifier (payretry::classify) gives each observation the
// model can make. The model is then checked against what the code decides,
// not against a copy of it.
//
//   model_gen_tables <profile>      the include, on stdout
//   model_gen_tables --list         the built-in profile names, one a line
//
// Each observation is a sample answer shaped like that provider's own (a
// success is a 2xx for most, but code 10000 inside a 200 for Alipay; a
// decline is a 402 for most, but a 2xx for Checkout.com and Adyen). A
// verdict the model has no class for (mismatch) is an error: the table would
// not mean what the model assumes.
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "classify.hpp"
#include "profile.hpp"
#include "transport.hpp"

using namespace payretry;

namespace {

struct Answer {
  int status;
  std::string body;
};

// What each provider answers when it charged, when it declined, and (for a
// merchant reference that is permanent) when it refuses a duplicate.
struct Samples {
  Answer charged, declined, duplicate;
};

const std::map<std::string, Samples>& samples() {
  static const std::map<std::string, Samples> s = {
      {"generic",
       {{201, R"({"id":"pay_1","status":"succeeded"})"},
        {402, R"({"error":{"code":"card_declined"}})"},
        {409, R"({"error":{"code":"duplicate"}})"}}},
      {"stripe",
       {{200, R"({"id":"pi_1","object":"payment_intent","status":"succeeded"})"},
        {402, R"({"error":{"type":"card_error","code":"card_declined"}})"},
        {409, R"({"error":{"code":"duplicate"}})"}}},
      {"adyen",
       {{200, R"({"pspReference":"8815","resultCode":"Authorised"})"},
        {200, R"({"pspReference":"8815","resultCode":"Refused"})"},
        {409, R"({"status":409,"errorCode":"duplicate"})"}}},
      {"paypal",
       {{201, R"({"id":"5O190127TN364715T","status":"COMPLETED"})"},
        {422, R"({"name":"UNPROCESSABLE_ENTITY","details":[{"issue":"INSTRUMENT_DECLINED"}]})"},
        {409, R"({"name":"duplicate"})"}}},
      {"square",
       {{200, R"({"payment":{"id":"sq_1","status":"COMPLETED"}})"},
        {402, R"({"errors":[{"category":"PAYMENT_METHOD_ERROR","code":"CARD_DECLINED"}]})"},
        {409, R"({"errors":[{"code":"duplicate"}]})"}}},
      {"checkout_com",
       {{201, R"({"id":"pay_1","status":"Authorized"})"},
        {201, R"({"id":"pay_1","status":"Declined"})"},
        {409, R"({"error_type":"duplicate"})"}}},
      {"mollie",
       {{201, R"({"id":"tr_1","status":"open"})"},
        {422, R"({"status":422,"title":"Unprocessable Entity","detail":"The card was declined"})"},
        {409, R"({"status":409,"title":"duplicate"})"}}},
      {"wechatpay_v3",
       {{200, R"({"prepay_id":"wx201410272009395522657a690389285100"})"},
        {403, R"({"code":"NOTENOUGH","message":"insufficient balance"})"},
        {403, R"({"code":"ORDERPAID","message":"the order is already paid"})"}}},
      {"alipay",
       {{200, R"({"alipay_trade_pay_response":{"code":"10000","msg":"Success","trade_no":"2013112011001004330000121536"},"sign":"x"})"},
        {200, R"({"alipay_trade_pay_response":{"code":"40004","msg":"Business Failed","sub_code":"ACQ.PAYMENT_FAIL"},"sign":"x"})"},
        {200, R"({"alipay_trade_pay_response":{"code":"40004","msg":"Business Failed","sub_code":"ACQ.TRADE_HAS_SUCCESS"},"sign":"x"})"}}},
  };
  return s;
}

TransportResult answered(const Answer& a) {
  TransportResult t;
  t.request_written = true;
  t.response.status = a.status;
  t.response.headers = {{"Content-Type", "application/json"}};
  t.response.body = a.body;
  return t;
}

TransportResult failed(TransportFailure f) {
  TransportResult t;
  t.failure = f;
  t.request_written = true;  // after the request was written: the provider may have it
  return t;
}

const char* verdict_class(Verdict v, const std::string& profile, const char* obs) {
  switch (v) {
    case Verdict::success: return "V_SUCCESS";
    case Verdict::retry:
    case Verdict::retry_after_backoff:
    case Verdict::in_progress: return "V_RETRY";  // the profile sends again with the same key
    case Verdict::query: return "V_QUERY";
    case Verdict::fail: return "V_FAIL";
    case Verdict::mismatch: break;
  }
  std::fprintf(stderr, "gen_tables: profile %s classifies %s as %s, which the model has no class for\n",
               profile.c_str(), obs, verdict_name(v));
  std::exit(2);
}

const char* replay_macro(ReplayKind k) {
  switch (k) {
    case ReplayKind::none: return "RK_NONE";
    case ReplayKind::success_only: return "RK_SUCCESS_ONLY";
    case ReplayKind::all_answers: return "RK_ALL_ANSWERS";
    case ReplayKind::current_state: return "RK_CURRENT_STATE";
    case ReplayKind::reference: return "RK_REFERENCE";
  }
  return "RK_NONE";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <built-in profile> | --list\n", argv[0]);
    return 2;
  }
  if (std::strcmp(argv[1], "--list") == 0) {
    for (const std::string& n : builtin_profile_names()) std::printf("%s\n", n.c_str());
    return 0;
  }
  const std::string name = argv[1];
  const std::optional<Profile> found = builtin_profile(name);
  if (!found) {
    std::fprintf(stderr, "gen_tables: no built-in profile %s\n", name.c_str());
    return 2;
  }
  const auto s = samples().find(name);
  if (s == samples().end()) {
    std::fprintf(stderr, "gen_tables: no sample answers for profile %s: add them to gen_tables.cpp\n", name.c_str());
    return 2;
  }
  const Profile& p = *found;
  const bool by_reference = p.identity.mode == IdentityMode::reference;
  const bool carries = by_reference || !p.lookup.reference_path.empty();

  std::printf("/* Generated by model_gen_tables from the built-in profile %s with payretry::classify(). */\n",
              name.c_str());
  std::printf("#define PROFILE_NAME %s\n", name.c_str());
  std::printf("#define REPLAY %s  /* replay: %s */\n", replay_macro(p.replay), replay_kind_name(p.replay));
  // Only a lookup by order id can settle a payment whose answer was never
  // read: a provider id is known only from a read answer, which settles it.
  std::printf("#define LOOKUP_USABLE %d  /* lookup.by: %s */\n", p.lookup.by == LookupBy::order_id ? 1 : 0,
              lookup_by_name(p.lookup.by));
  std::printf("#define IDENTITY_REFERENCE %d  /* identity.mode: %s */\n", by_reference ? 1 : 0,
              by_reference ? "reference" : p.identity.mode == IdentityMode::body ? "body" : "header");
  std::printf("#define CARRIES_REF %d  /* the request carries what the lookup searches by (reference_path: \"%s\") */\n",
              carries ? 1 : 0, p.lookup.reference_path.c_str());
  std::printf("#define REPLAY_MARKER %d  /* replay_header: \"%s\" */\n", p.replay_header.empty() ? 0 : 1,
              p.replay_header.c_str());

  const Samples& sm = s->second;
  const std::pair<const char*, TransportResult> observations[] = {
      {"TIMEOUT", failed(TransportFailure::timeout)},
      {"LOST", failed(TransportFailure::connection_lost)},
      {"500", answered({500, R"({"error":{"code":"internal_error","message":"An internal error occurred"}})"})},
      {"2XX", answered(sm.charged)},
      {"DECLINE", answered(sm.declined)},
      {"4XX", answered({401, R"({"message":"unauthorized"})"})},
      {"DUP", answered(sm.duplicate)},
  };
  const char* what[] = {"timeout after the request was written", "connection lost after the request was written",
                        "500 after processing", "the provider's charge answer", "the provider's decline answer",
                        "a 4xx from a layer in front of the provider (nothing processed)",
                        "a duplicate refused (reference kinds only)"};
  std::string timeout_class, lost_class;
  bool timeout_p = false, lost_p = false;
  int i = 0;
  for (const auto& [obs, t] : observations) {
    const Classification c = classify(p, t);
    const char* cls = verdict_class(c.verdict, name, obs);
    std::printf("/* %s: %s%s%s -> %s (%s), %s */\n", what[i], t.failure == TransportFailure::none ? "HTTP " : "",
                t.failure == TransportFailure::none ? std::to_string(t.response.status).c_str() : "",
                t.failure == TransportFailure::none ? "" : transport_failure_name(t.failure), verdict_name(c.verdict),
                c.reason.c_str(), c.may_have_processed ? "may have processed" : "not processed");
    std::printf("#define V_OF_%s %s\n#define P_OF_%s %d\n", obs, cls, obs, c.may_have_processed ? 1 : 0);
    if (i == 0) timeout_class = cls, timeout_p = c.may_have_processed;
    if (i == 1) lost_class = cls, lost_p = c.may_have_processed;
    ++i;
  }
  // Two observations the profile treats alike need not be told apart: fewer states.
  std::printf("#define SAME_TIMEOUT_LOST %d\n", timeout_class == lost_class && timeout_p == lost_p ? 1 : 0);
  return 0;
}
