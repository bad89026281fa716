// Prints one profile's tables as a Promela include for settlement.pml. Every
// decision in them is computed by the library's own functions, never
// restated here, so that the model checks the code and not a copy of it:
//
//   - the decision table: the verdict class payretry::classify() gives each
//     observation the model can make, and whether it may have processed;
//   - the history fold: HistoryFold::add() (src/core/history.cpp) explored
//     from its initial state over every entry the model can record (a send
//     per observation, as the engine and PaymentFlow::entry_of_attempt()
//     write it; a takeover's unrecorded_send(); a lookup's finding), each
//     state with HistoryFold::reading()'s resend_safe and final_answer;
//   - "not found" as proof: read_not_found() (src/core/lookup_rules.cpp) in
//     every state of the fold, with the read-lag grace passed or not;
//   - what a found status settles: lookup_status_settles() for the status
//     words the profile's lookup answers with when the provider charged and
//     when it declined;
//   - webhooks (issue 46): what the provider's notification of a charge and
//     of a decline says, event_finding() (src/core/webhook_rules.cpp); what
//     it lands as on the row the receiver reads, event_finding_by_money()
//     then event_finding_on(), for
//     every row and key the model's world shows it; how a landed event moves
//     a row, event_moves() (src/ledger/ledger.cpp), and whether it gives the
//     row its provider id, event_teaches_id(), for every row state and
//     finding; whether a kept event lands on a row made after it was
//     received or before, kept_event_applies(); what becomes of an event
//     naming an order with no row, event_without_row(), and whether an
//     event made in another account lands, event_in_payment_account(); and
//     whether a read answer names its payment (the samples' ids, where the
//     profile reads them);
//   - where the money is (issue 47): what a run's deciding answer, a found
//     lookup and a notification say of it, money_in_answer() and
//     money_in_event() (src/profiles/money_reading.hpp) with
//     money_of_refusal(); how each read moves the row's money, money_moves()
//     (src/model/money_state.cpp), for every state the row reaches; and
//     whether a landing event moves it, event_moves_money(), for every row
//     state, finding, row the event meets and money it says.
//
//   model_gen_tables <profile>      the include, on stdout
//   model_gen_tables operations     operations.pml's include (gen_operation_tables.cpp)
//   model_gen_tables --list         the built-in profile names, one a line
//
// <profile> is a built-in profile or one of the model's variants below.
// Each observation is a sample answer shaped like that provider's own (a
// success is a 2xx for most, but code 10000 inside a 200 for Alipay; a
// decline is a 402 for most, but a 2xx for Checkout.com and Adyen). A
// verdict the model has no class for (mismatch) is an error: the table would
// not mean what the model assumes.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "classify.hpp"
#include "history.hpp"
#include "json_path.hpp"
#include "json_util.hpp"
#include "ledger.hpp"
#include "lookup_rules.hpp"
#include "money_reading.hpp"
#include "money_state.hpp"
#include "payment_flow.hpp"
#include "profile.hpp"
#include "transport.hpp"
#include "unauthorized_rule.hpp"
#include "webhook_rules.hpp"

// A generator built from a source file with one of the code's rules reverted
// (tests/model/reverts/, CMakeLists.txt): apply_revert.cmake defines this in
// the patched copy, empty when the patch applied, and otherwise says why.
#ifdef PAYRETRY_MODEL_REVERT
extern "C" const char* const payretry_model_revert_problem;
#endif

using namespace payretry;

// operations.pml's tables (gen_operation_tables.cpp).
int print_operation_tables();

namespace {

struct Answer {
  int status;
  std::string body;
};

// What each provider answers when it charged, when it declined, and (for a
// merchant reference that is permanent) when it refuses a duplicate; and,
// for a profile whose lookup the model uses, what that lookup answers for a
// charged and for a declined payment (the status word at lookup.status_path
// and the money word the profile's money.lookup readers find there).
struct Samples {
  Answer charged, declined, duplicate;
  std::string lookup_charged, lookup_declined;
};

const std::map<std::string, Samples>& samples() {
  static const std::map<std::string, Samples> s = {
      {"generic",
       {{201, R"({"id":"pay_1","status":"succeeded"})"},
        {402, R"({"error":{"code":"card_declined"}})"},
        {409, R"({"error":{"code":"duplicate"}})"},
        "", ""}},
      {"stripe",
       {{200, R"({"id":"pi_1","object":"payment_intent","status":"succeeded"})"},
        {402, R"({"error":{"type":"card_error","code":"card_declined","payment_intent":{"id":"pi_1","status":"requires_payment_method"}}})"},
        {409, R"({"error":{"code":"duplicate"}})"},
        "", ""}},
      {"adyen",
       {{200, R"({"pspReference":"8815","resultCode":"Authorised"})"},
        {200, R"({"pspReference":"8815","resultCode":"Refused"})"},
        {409, R"({"status":409,"errorCode":"duplicate"})"},
        "", ""}},
      {"paypal",
       {{201, R"({"id":"5O190127TN364715T","status":"COMPLETED"})"},
        {422, R"({"name":"UNPROCESSABLE_ENTITY","details":[{"issue":"INSTRUMENT_DECLINED"}]})"},
        {409, R"({"name":"duplicate"})"},
        "", ""}},
      {"square",
       {{200, R"({"payment":{"id":"sq_1","status":"COMPLETED"}})"},
        {402, R"({"errors":[{"category":"PAYMENT_METHOD_ERROR","code":"CARD_DECLINED"}],"payment":{"id":"sq_1","status":"FAILED"}})"},
        {409, R"({"errors":[{"code":"duplicate"}]})"},
        "", ""}},
      {"checkout_com",
       {{201, R"({"id":"pay_1","status":"Authorized"})"},
        {201, R"({"id":"pay_1","status":"Declined"})"},
        {409, R"({"error_type":"duplicate"})"},
        R"({"total_count":1,"data":[{"id":"pay_1","reference":"order_1","status":"Authorized"}]})",
        R"({"total_count":1,"data":[{"id":"pay_1","reference":"order_1","status":"Declined"}]})"}},
      {"mollie",
       {{201, R"({"id":"tr_1","status":"open"})"},
        {422, R"({"status":422,"title":"Unprocessable Entity","detail":"The card was declined"})"},
        {409, R"({"status":409,"title":"duplicate"})"},
        "", ""}},
      {"wechatpay_v3",
       {{200, R"({"prepay_id":"wx201410272009395522657a690389285100"})"},
        {403, R"({"code":"NOTENOUGH","message":"insufficient balance"})"},
        {403, R"({"code":"ORDERPAID","message":"the order is already paid"})"},
        R"({"mchid":"1230000109","out_trade_no":"order_1","transaction_id":"4200000001","trade_state":"SUCCESS"})",
        R"({"mchid":"1230000109","out_trade_no":"order_1","transaction_id":"4200000001","trade_state":"PAYERROR"})"}},
      {"alipay",
       {{200, R"({"alipay_trade_pay_response":{"code":"10000","msg":"Success","trade_no":"2013112011001004330000121536"},"sign":"x"})"},
        {200, R"({"alipay_trade_pay_response":{"code":"40004","msg":"Business Failed","sub_code":"ACQ.PAYMENT_FAIL"},"sign":"x"})"},
        {200, R"({"alipay_trade_pay_response":{"code":"40004","msg":"Business Failed","sub_code":"ACQ.TRADE_HAS_SUCCESS"},"sign":"x"})"},
        // A trade that was declined is closed unpaid: TRADE_CLOSED, which the
        // profile leaves unlisted (it also means "refunded after payment").
        R"({"alipay_trade_query_response":{"code":"10000","out_trade_no":"order_1","trade_no":"2013112011001004330000121536","trade_status":"TRADE_SUCCESS"},"sign":"x"})",
        R"({"alipay_trade_query_response":{"code":"10000","out_trade_no":"order_1","trade_no":"2013112011001004330000121536","trade_status":"TRADE_CLOSED"},"sign":"x"})"}},
  };
  return s;
}

// The notification each provider sends when it charged and when it
// declined, as the event type and status word its webhook block reads
// (sim/webhook_notice.cpp sends the same): sent = false where the provider
// sends none (WeChat Pay notifies only successes; PayPal's declined create
// makes no order to notify). Mollie's is an id, confirmed by the provider's
// lookup, whose status is the event (WebhookReceiver::apply_hint: hint).
// And the object the receiver reads the money from (money_in_event): the
// body, Adyen's notification item, WeChat Pay's decrypted resource,
// Alipay's form fields as an object; for Mollie the confirming lookup's
// answer, read through money.lookup as apply_hint reads it.
struct EventSample {
  bool sent;
  std::string type, status, object;
};
struct EventSamples {
  EventSample charged, declined;
  bool hint = false;
};

const std::map<std::string, EventSamples>& event_samples() {
  static const std::map<std::string, EventSamples> s = {
      {"stripe",
       {{true, "payment_intent.succeeded", "succeeded",
         R"({"type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","status":"succeeded"}}})"},
        {true, "payment_intent.payment_failed", "requires_payment_method",
         R"({"type":"payment_intent.payment_failed","data":{"object":{"id":"pi_1","object":"payment_intent","status":"requires_payment_method"}}})"}}},
      {"adyen",
       {{true, "AUTHORISATION:true", "", R"({"eventCode":"AUTHORISATION","success":"true","pspReference":"8815"})"},
        {true, "AUTHORISATION:false", "", R"({"eventCode":"AUTHORISATION","success":"false","pspReference":"8815"})"}}},
      {"paypal",
       {{true, "PAYMENT.CAPTURE.COMPLETED", "",
         R"({"event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{"id":"3C679366HH908993F","status":"COMPLETED"}})"},
        {false, "", "", ""}}},
      {"square",
       {{true, "payment.updated", "COMPLETED",
         R"({"type":"payment.updated","data":{"type":"payment","object":{"payment":{"id":"sq_1","status":"COMPLETED"}}}})"},
        {true, "payment.updated", "FAILED",
         R"({"type":"payment.updated","data":{"type":"payment","object":{"payment":{"id":"sq_1","status":"FAILED"}}}})"}}},
      {"checkout_com",
       {{true, "payment_approved", "Authorized", R"({"type":"payment_approved","data":{"id":"pay_1","status":"Authorized"}})"},
        {true, "payment_declined", "Declined", R"({"type":"payment_declined","data":{"id":"pay_1","status":"Declined"}})"}}},
      {"mollie",
       {{true, "", "paid", R"({"resource":"payment","id":"tr_1","status":"paid"})"},
        {true, "", "failed", R"({"resource":"payment","id":"tr_1","status":"failed"})"},
        true}},
      {"wechatpay_v3",
       {{true, "SUCCESS", "SUCCESS",
         R"({"mchid":"1230000109","out_trade_no":"order_1","transaction_id":"4200000001","trade_state":"SUCCESS"})"},
        {false, "", "", ""}}},
      {"alipay",
       {{true, "TRADE_SUCCESS", "TRADE_SUCCESS",
         R"({"out_trade_no":"order_1","trade_no":"2013112011001004330000121536","trade_status":"TRADE_SUCCESS"})"},
        {true, "TRADE_CLOSED", "TRADE_CLOSED",
         R"({"out_trade_no":"order_1","trade_no":"2013112011001004330000121536","trade_status":"TRADE_CLOSED"})"}}},
  };
  return s;
}

// Profiles that are not built in, which a user may write and the library
// accepts: where one of the code's rules makes the difference that no
// built-in profile shows. Each takes its samples from the profile it extends.
struct Variant {
  const char* name;
  const char* json;
};
const Variant kVariants[] = {
    // Checkout.com's lookup searches by the payment's reference. Without
    // lookup.reference_path, submit neither writes the order id there nor
    // checks it, so a request need not carry what the lookup searches by
    // (the built-in profile as it was before D12, docs/reliability.md):
    // only read_not_found() keeps its "not found" from counting as proof.
    {"checkout_com_without_reference_path",
     R"({"name":"checkout_com_without_reference_path","extends":"checkout_com","lookup":{"reference_path":""}})"},
    // A provider of unknown replay behind OAuth2 client credentials (the
    // config may name a token endpoint for any profile): a token may expire
    // or be revoked on the way, and a gateway may then refuse the request
    // after the provider acted. Only read_unauthorized() keeps that 401 from
    // reading as "nothing processed".
    {"generic_oauth2",
     R"({"name":"generic_oauth2","extends":"generic","auth":{"scheme":"oauth2_client_credentials","token_path":"/oauth/token"}})"},
};

std::optional<Profile> load(const std::string& name) {
  if (std::optional<Profile> p = builtin_profile(name)) return p;
  for (const Variant& v : kVariants)
    if (name == v.name) return parse_profile(v.json);
  return std::nullopt;
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

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "gen_tables: %s\n", why.c_str());
  std::exit(2);
}

// ---------------------------------------------------------------- the fold
//
// Times in the fold are unix ms. Every entry of a state's representative
// history ends at kAt; an entry probed for its effect on the last possible
// send ends later (kLater) or earlier (kEarlier) than that.
constexpr int64_t kAt = 1000000, kLater = 2000000, kEarlier = 500000;

// One kind of history entry the model records.
struct EntryClass {
  std::string name;  // E_..., a Promela mtype
  std::string what;  // in words, for the comment
  AttemptEntry entry;
};

AttemptEntry at_time(AttemptEntry e, int64_t t) {
  e.started_at = t;
  e.ended_at = t;
  return e;
}

// What adding an entry does to the last possible send (h_last in the
// model): keeps it, raises it to the entry's time, or clears it.
enum class TimeEffect { keep, raise, clear };

struct FoldState {
  HistoryFold fold;
  std::vector<int> next;  // per entry class
};

struct Bits {
  bool maybe, forbidding, final_answer;
  bool operator<(const Bits& o) const {
    return std::tie(maybe, forbidding, final_answer) < std::tie(o.maybe, o.forbidding, o.final_answer);
  }
};
Bits bits_of(const HistoryFold& f) { return {f.may_have_processed(), f.forbidding(), f.final_answer()}; }

// What the model reads of a state: the outputs that two states must share
// to be one state of the model.
struct Outputs {
  bool maybe, resend_safe, final_answer, absent_in_grace, absent_after_grace;
  bool operator==(const Outputs& o) const {
    return maybe == o.maybe && resend_safe == o.resend_safe && final_answer == o.final_answer &&
           absent_in_grace == o.absent_in_grace && absent_after_grace == o.absent_after_grace;
  }
};

// read_not_found() for a lookup asked just inside, or just after, the
// read-lag grace from the state's last possible send.
bool proves_absence(const Profile& p, const HistoryReading& h, bool grace_passed, bool in_scope) {
  const int64_t grace = 60000;
  const int64_t asked_at = h.last_possible_send + grace - (grace_passed ? 0 : 1);
  return read_not_found(p, h, asked_at, grace, in_scope).proves_absence;
}

// The status word a lookup answer carries at the profile's lookup.status_path.
std::string lookup_status(const Profile& p, const std::string& body) {
  JsonPtr doc(cJSON_Parse(body.c_str()));
  const std::optional<std::string> word = json_path_first_string(doc.get(), p.lookup.status_path);
  if (!word) die("a sample lookup answer of profile " + p.name + " has no status at " + p.lookup.status_path);
  return *word;
}

// What a notification says of the money, as the receiver reads it
// (WebhookReceiver::apply_event, apply_hint): money_in_event() over its
// object, or for a notification that is only an id the confirming lookup's
// answer through money.lookup; one event_finding() reads as failed through
// money_of_refusal().
MoneyState event_money(const Profile& p, const EventSamples& es, const EventSample& sample) {
  if (!sample.sent) return MoneyState::unknown;
  JsonPtr doc(cJSON_Parse(sample.object.c_str()));
  if (!doc) die("a sample notification object of profile " + p.name + " is not JSON");
  const MoneyState m = es.hint ? money_in_answer(p.money, p.money.lookup, doc.get())
                               : money_in_event(p.money, sample.type, doc.get());
  return std::strcmp(event_finding(p, sample.type, sample.status), kEventFailed) == 0 ? money_of_refusal(m) : m;
}

std::string list_of(const std::vector<int>& v, const char* var) {
  if (v.empty()) return "0";
  std::string s;
  for (int x : v) s += std::string(s.empty() ? "" : " || ") + "(" + var + ") == " + std::to_string(x);
  return "(" + s + ")";
}

}  // namespace

int main(int argc, char** argv) {
#ifdef PAYRETRY_MODEL_REVERT
  if (payretry_model_revert_problem[0]) die(payretry_model_revert_problem);
#endif
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <built-in profile> | operations | --list\n", argv[0]);
    return 2;
  }
  if (std::strcmp(argv[1], "operations") == 0) {
    // The name of the operations model's tables, never a profile's.
    if (builtin_profile("operations")) die("a built-in profile is named operations: rename the operations tables");
    return print_operation_tables();
  }
  if (std::strcmp(argv[1], "--list") == 0) {
    for (const std::string& n : builtin_profile_names()) std::printf("%s\n", n.c_str());
    return 0;
  }
  const std::string name = argv[1];
  const std::optional<Profile> found = load(name);
  if (!found) die("no built-in profile or model variant " + name);
  const Profile& p = *found;
  auto s = samples().find(name);
  if (s == samples().end()) s = samples().find(p.extends);
  if (s == samples().end()) die("no sample answers for profile " + name + ": add them to gen_tables.cpp");
  const Samples& sm = s->second;
  const bool by_reference = p.identity.mode == IdentityMode::reference;
  const bool carries = by_reference || !p.lookup.reference_path.empty();
  const bool lookup_usable = p.lookup.by == LookupBy::order_id;

  // Every comment is one line: run_spin.sh drops them when it compares tables.
  std::printf("/* Generated by model_gen_tables from profile %s with payretry::classify(), HistoryFold, */\n"
              "/* read_not_found(), lookup_status_settles(), event_finding(), event_finding_on(), event_moves(), */\n"
              "/* event_teaches_id(), kept_event_applies(), event_without_row(), event_in_payment_account(), */\n"
              "/* money_in_answer(), money_in_event(), money_moves() and event_moves_money(). */\n",
              name.c_str());
  std::printf("#define PROFILE_NAME %s\n", name.c_str());
  std::printf("#define REPLAY %s  /* replay: %s */\n", replay_macro(p.replay), replay_kind_name(p.replay));
  // Only a lookup by order id can settle a payment whose answer was never
  // read: a provider id is known only from a read answer, which settles it.
  std::printf("#define LOOKUP_USABLE %d  /* lookup.by: %s */\n", lookup_usable ? 1 : 0, lookup_by_name(p.lookup.by));
  std::printf("#define IDENTITY_REFERENCE %d  /* identity.mode: %s */\n", by_reference ? 1 : 0,
              by_reference ? "reference" : p.identity.mode == IdentityMode::body ? "body" : "header");
  // A fact of the world, not a rule: submit writes or checks the reference
  // at reference_path, and a reference identity is the reference itself.
  std::printf("#define CARRIES_REF %d  /* the request carries what the lookup searches by (reference_path: \"%s\") */\n",
              carries ? 1 : 0, p.lookup.reference_path.c_str());
  std::printf("#define LOOKUP_FINDS %d  /* a lookup can find the payment: usable, and by what the request carried */\n",
              lookup_usable && carries ? 1 : 0);
  std::printf("#define REPLAY_MARKER %d  /* replay_header: \"%s\" */\n", p.replay_header.empty() ? 0 : 1,
              p.replay_header.c_str());

  // ------------------------------------------------ the decision table
  struct Observation {
    const char* obs;
    const char* what;
    TransportResult t;
    Classification c;
  };
  std::vector<Observation> observations = {
      {"TIMEOUT", "timeout after the request was written", failed(TransportFailure::timeout), {}},
      {"LOST", "connection lost after the request was written", failed(TransportFailure::connection_lost), {}},
      {"500", "500 after processing",
       answered({500, R"({"error":{"code":"internal_error","message":"An internal error occurred"}})"}), {}},
      {"2XX", "the provider's charge answer", answered(sm.charged), {}},
      {"DECLINE", "the provider's decline answer", answered(sm.declined), {}},
      {"4XX", "a 4xx from a layer in front of the provider (nothing processed)",
       answered({401, R"({"message":"unauthorized"})"}), {}},
      {"DUP", "a duplicate refused (reference kinds only)", answered(sm.duplicate), {}},
  };
  for (Observation& o : observations) {
    o.c = classify(p, o.t);
    const char* cls = verdict_class(o.c.verdict, name, o.obs);
    const TransportResult& t = o.t;
    std::printf("/* %s: %s%s%s -> %s (%s), %s */\n", o.what, t.failure == TransportFailure::none ? "HTTP " : "",
                t.failure == TransportFailure::none ? std::to_string(t.response.status).c_str() : "",
                t.failure == TransportFailure::none ? "" : transport_failure_name(t.failure), verdict_name(o.c.verdict),
                o.c.reason.c_str(), o.c.may_have_processed ? "may have processed" : "not processed");
    std::printf("#define V_OF_%s %s\n#define P_OF_%s %d\n", o.obs, cls, o.obs, o.c.may_have_processed ? 1 : 0);
  }

  // ------------------------------------------------ a 401 under a renewable credential
  // AttemptRun::unauthorized: the first 401 of a run under OAuth2 renews the
  // token and reads the answer with read_unauthorized() (a later 401 of the
  // same run is classified as any answer: the 4XX row above). The world's
  // fact beside it: a gateway may answer that 401 after the provider acted,
  // unless the profile states that a 401 processed nothing.
  const bool renews = p.auth.scheme == AuthScheme::oauth2_client_credentials;
  const UnauthorizedReading u_left = read_unauthorized(p, false, true), u_last = read_unauthorized(p, false, false);
  if (read_unauthorized(p, true, false).then == UnauthorizedReading::Then::failed)
    die("read_unauthorized() answers FAILED after a send that may have been processed: the model has no rule for it");
  auto then_class = [&](const UnauthorizedReading& u) {
    switch (u.then) {
      case UnauthorizedReading::Then::resend: return "V_RETRY";
      case UnauthorizedReading::Then::failed: return "V_FAIL";  // the model's V_FAIL: FAILED unless an earlier send may have been processed
      case UnauthorizedReading::Then::unknown: break;
    }
    return "V_QUERY";
  };
  std::printf("#define RENEWS_CREDENTIAL %d  /* auth.scheme: %s */\n", renews ? 1 : 0, auth_scheme_name(p.auth.scheme));
  std::printf("#define UNAUTH_AFTER_PROCESSING %d  /* the world: a 401 may follow processing (auth.unauthorized_not_processed: %s) */\n",
              renews && !p.auth.unauthorized_not_processed ? 1 : 0, p.auth.unauthorized_not_processed ? "true" : "false");
  for (const auto& [u, last] : {std::pair{u_left, ""}, std::pair{u_last, "_LAST"}})
    std::printf("/* read_unauthorized() (src/engine/unauthorized_rule.cpp)%s: may have processed %d, re-send safe %d */\n"
                "#define V_OF_401R%s %s\n#define P_OF_401R%s %d\n",
                *last ? " on the last attempt" : " with attempts left", u.may_have_processed ? 1 : 0,
                u.resend_safe ? 1 : 0, last, then_class(u), last, u.may_have_processed ? 1 : 0);

  // ------------------------------------------------ the history fold
  // Every entry the model records: a send per observation, written as the
  // engine (AttemptRun) fills its attempt record and PaymentFlow writes it;
  // the takeover's entry for a dead run's possible last send; each finding
  // of a lookup.
  std::vector<EntryClass> classes;
  for (const Observation& o : observations) {
    AttemptRecord a;
    a.number = 1;
    a.started_unix_ms = kAt;
    a.http_status = o.t.failure == TransportFailure::none ? o.t.response.status : 0;
    if (o.t.failure != TransportFailure::none) a.transport_error = transport_failure_name(o.t.failure);
    a.verdict = verdict_name(o.c.verdict);
    a.reason = o.c.reason;
    a.may_have_processed = o.c.may_have_processed;
    classes.push_back({std::string("E_") + o.obs,
                       std::string("a send observed as ") + o.obs + " (verdict " + a.verdict + ", " +
                           (a.http_status ? "HTTP " + std::to_string(a.http_status) : a.transport_error) + ", " +
                           (a.may_have_processed ? "may have processed" : "not processed") + ")",
                       PaymentFlow::entry_of_attempt(a)});
  }
  for (const auto& [u, last] : {std::pair{u_left, ""}, std::pair{u_last, "_LAST"}}) {
    // The 401's own entry, as AttemptRun::unauthorized records it.
    AttemptRecord a;
    a.number = 1;
    a.started_unix_ms = kAt;
    a.http_status = 401;
    a.verdict = verdict_name(u.resend_safe ? Verdict::retry : Verdict::query);
    a.reason = "unauthorized_credential_renewed";
    a.may_have_processed = u.may_have_processed;
    classes.push_back({std::string("E_401R") + last,
                       std::string("the first 401 of a run under a renewable credential") +
                           (*last ? ", on the last attempt" : "") + " (verdict " + a.verdict + ", " +
                           (a.may_have_processed ? "may have processed" : "not processed") + ")",
                       PaymentFlow::entry_of_attempt(a)});
  }
  classes.push_back({"E_UNRECORDED", "a takeover's entry for the dead run's possible last send (unrecorded_send)",
                     unrecorded_send(1, kAt)});
  const std::pair<const char*, const char*> findings[] = {
      {kLookupAbsent, "E_LOOKUP_ABSENT"},
      {kLookupNotFound, "E_LOOKUP_NOT_FOUND"},
      {kLookupFound, "E_LOOKUP_FOUND"},
      {kLookupFailed, "E_LOOKUP_FAILED"},
  };
  for (const auto& [verdict, cname] : findings) {
    AttemptEntry e;
    e.number = 1;
    e.kind = "lookup";
    e.started_at = e.ended_at = kAt;
    e.verdict = verdict;
    e.processed = false;  // a read acts on nothing (settle.cpp lookup_entry)
    classes.push_back({cname, std::string("a lookup that wrote \"") + verdict + "\"", e});
  }
  // A webhook event that landed on the row: its entry as WebhookReceiver::record
  // writes it (kind "webhook", the finding as verdict, nothing processed).
  const std::pair<const char*, const char*> event_entries[] = {
      {kEventSucceeded, "E_EVENT_SUCCEEDED"},
      {kEventFailed, "E_EVENT_FAILED"},
      {kEventNoted, "E_EVENT_NOTED"},
  };
  for (const auto& [verdict, cname] : event_entries) {
    AttemptEntry e;
    e.number = 1;
    e.kind = "webhook";
    e.started_at = e.ended_at = kAt;
    e.verdict = verdict;
    e.processed = false;
    classes.push_back({cname, std::string("a webhook event that landed, \"") + verdict + "\"", e});
  }
  const int nc = static_cast<int>(classes.size());

  // Every state of the fold reachable from the initial one; a state is its
  // accessor bits, each with the first history that reached it.
  std::vector<FoldState> states;
  std::map<Bits, int> index;
  states.push_back({HistoryFold(p), {}});
  index[bits_of(states[0].fold)] = 0;
  for (std::size_t i = 0; i < states.size(); ++i) {
    for (int c = 0; c < nc; ++c) {
      HistoryFold f = states[i].fold;
      f.add(at_time(classes[c].entry, kAt));
      const Bits b = bits_of(f);
      auto it = index.find(b);
      if (it == index.end()) {
        it = index.emplace(b, static_cast<int>(states.size())).first;
        states.push_back({f, {}});
      }
      states[i].next.push_back(it->second);
    }
  }
  const int ns = static_cast<int>(states.size());

  // What each entry class does to the last possible send, the same in every
  // state (the model keeps that time itself, as h_last).
  std::vector<TimeEffect> effect(nc);
  for (int c = 0; c < nc; ++c) {
    bool can_keep = true, can_raise = true, can_clear = true;
    for (const FoldState& st : states) {
      const int64_t before = st.fold.reading().last_possible_send;
      HistoryFold later = st.fold, earlier = st.fold;
      later.add(at_time(classes[c].entry, kLater));
      earlier.add(at_time(classes[c].entry, kEarlier));
      const int64_t l = later.reading().last_possible_send, e = earlier.reading().last_possible_send;
      can_keep = can_keep && l == before && e == before;
      can_raise = can_raise && l == std::max(before, kLater) && e == std::max(before, kEarlier);
      can_clear = can_clear && l == 0 && e == 0;
    }
    if (can_keep) effect[c] = TimeEffect::keep;
    else if (can_raise) effect[c] = TimeEffect::raise;
    else if (can_clear) effect[c] = TimeEffect::clear;
    else
      die(classes[c].name + " moves the last possible send in a way the model has no rule for (keep, raise, clear)");
  }

  // The model's states: fold states it cannot tell apart are one (the
  // coarsest partition with the same outputs and the same successors), so
  // that the search does not split on what nothing reads.
  std::vector<Outputs> out(ns);
  for (int i = 0; i < ns; ++i) {
    const HistoryReading h = states[i].fold.reading();
    if (h.may_have_processed != states[i].fold.may_have_processed()) die("reading() and the fold's state disagree");
    out[i] = {h.may_have_processed, h.resend_safe, h.final_answer, proves_absence(p, h, false, true),
              proves_absence(p, h, true, true)};
  }
  std::vector<int> block(ns);
  for (int i = 0; i < ns; ++i) {
    block[i] = i;
    for (int j = 0; j < i; ++j)
      if (out[i] == out[j]) {
        block[i] = block[j];
        break;
      }
  }
  for (bool split = true; split;) {
    split = false;
    std::vector<int> refined(ns);
    for (int i = 0; i < ns; ++i) {
      refined[i] = i;
      for (int j = 0; j < i; ++j) {
        if (block[j] != block[i]) continue;
        bool same = true;
        for (int c = 0; c < nc && same; ++c) same = block[states[i].next[c]] == block[states[j].next[c]];
        if (same) {
          refined[i] = refined[j];
          break;
        }
      }
    }
    std::set<int> a(block.begin(), block.end()), b(refined.begin(), refined.end());
    split = b.size() != a.size();
    block = refined;
  }
  // Number the model's states 0.. in the order the fold reached them (the
  // initial state is 0).
  std::map<int, int> number;
  for (int i = 0; i < ns; ++i)
    if (!number.count(block[i])) {
      const int k = static_cast<int>(number.size());
      number[block[i]] = k;
    }
  auto hs = [&](int fold_state) { return number.at(block[fold_state]); };
  const int nhs = static_cast<int>(number.size());

  std::printf("/* The history fold: HistoryFold::add() (src/core/history.cpp) from its initial state over every */\n"
              "/* entry the model records: %d states of the fold, %d for the model (states that nothing the */\n"
              "/* model reads tells apart are one). */\n",
              ns, nhs);
  std::printf("mtype = {");
  for (int c = 0; c < nc; ++c) std::printf("%s %s", c ? "," : "", classes[c].name.c_str());
  std::printf(" };\n");
  for (int c = 0; c < nc; ++c) {
    const char* t = effect[c] == TimeEffect::keep    ? "keeps the last possible send"
                    : effect[c] == TimeEffect::raise ? "raises the last possible send to its own time"
                                                     : "clears the last possible send";
    std::printf("/* %s: %s; %s */\n", classes[c].name.c_str(), classes[c].what.c_str(), t);
  }
  for (const Observation& o : observations) std::printf("#define E_OF_%s E_%s\n", o.obs, o.obs);
  std::printf("#define E_OF_401R E_401R\n#define E_OF_401R_LAST E_401R_LAST\n");
  for (int i = 0; i < ns; ++i) {
    const Bits b = bits_of(states[i].fold);
    const HistoryReading h = states[i].fold.reading();
    std::printf("/* fold state %d (model state %d): may_have_processed %d, forbidding %d, final_answer %d -> reading: "
                "resend_safe %d, final_answer %d; \"not found\" proves absence: %s within the grace, %s after it; "
                "asked out of scope: %s */\n",
                i, hs(i), b.maybe, b.forbidding, b.final_answer, h.resend_safe, h.final_answer,
                out[i].absent_in_grace ? "yes" : "no", out[i].absent_after_grace ? "yes" : "no",
                proves_absence(p, h, true, false) ? "proves absence" : "proves nothing");
  }
  std::vector<int> maybe, safe, final_answer, nf_in, nf_after;
  std::vector<bool> done(nhs);
  for (int i = 0; i < ns; ++i) {
    const int k = hs(i);
    if (done[k]) continue;
    done[k] = true;
    if (out[i].maybe) maybe.push_back(k);
    if (out[i].resend_safe) safe.push_back(k);
    if (out[i].final_answer) final_answer.push_back(k);
    if (out[i].absent_in_grace) nf_in.push_back(k);
    if (out[i].absent_after_grace) nf_after.push_back(k);
  }
  std::printf("#define HS_COUNT %d\n", nhs);
  std::printf("#define HS_MAYBE(s) %s  /* reading().may_have_processed */\n", list_of(maybe, "s").c_str());
  std::printf("#define HS_RESEND_SAFE(s) %s  /* reading().resend_safe */\n", list_of(safe, "s").c_str());
  std::printf("#define HS_FINAL(s) %s  /* reading().final_answer */\n", list_of(final_answer, "s").c_str());
  // read_not_found(profile, reading, asked_at, grace, asked_in_scope = true):
  // the model's rows were all written with their scope.
  std::printf("/* read_not_found() (src/core/lookup_rules.cpp): a lookup's \"not found\" proves absence in state s, */\n"
              "/* asked within the read-lag grace from the last possible send (lag = 0) or after it (lag = 1) */\n");
  std::printf("#define NF_PROVES(s, lag) ((!(lag) && %s) || ((lag) && %s))\n", list_of(nf_in, "s").c_str(),
              list_of(nf_after, "s").c_str());
  // The transitions, and what each entry does to h_last.
  std::printf("inline hist_add(ent, at) {\n  if\n");
  for (int c = 0; c < nc; ++c) {
    std::string moves;
    std::set<int> seen;
    for (int i = 0; i < ns; ++i) {
      const int from = hs(i), to = hs(states[i].next[c]);
      if (from == to || seen.count(from)) continue;
      seen.insert(from);
      moves += " :: hs == " + std::to_string(from) + " -> hs = " + std::to_string(to);
    }
    std::string time;
    if (effect[c] == TimeEffect::raise) time = "; if :: at > h_last -> h_last = at :: else fi";
    if (effect[c] == TimeEffect::clear) time = "; h_last = 0";
    std::printf("  :: ent == %s -> %s%s\n", classes[c].name.c_str(),
                moves.empty() ? "skip" : ("if" + moves + " :: else fi").c_str(), time.c_str());
  }
  std::printf("  fi\n}\n");
  // A send that may have been processed can be followed by another under
  // the key (the profile retries it, or its replay kind makes a re-send
  // safe): only then can a run meet the provider's final answer after it.
  bool resend_after_maybe = false;
  for (const Observation& o : observations) {
    if (std::strcmp(o.obs, "TIMEOUT") && std::strcmp(o.obs, "LOST") && std::strcmp(o.obs, "500")) continue;
    const int c = static_cast<int>(&o - observations.data());
    if (o.c.may_have_processed && out[states[0].next[c]].resend_safe) resend_after_maybe = true;
  }
  std::printf("#define RESEND_AFTER_MAYBE %d  /* a send that may have been processed can be followed by another */\n",
              resend_after_maybe ? 1 : 0);
  // Two observations the profile treats alike need not be told apart: fewer states.
  const int timeout_c = 0, lost_c = 1;
  bool same_timeout_lost = observations[0].c.verdict == observations[1].c.verdict &&
                           observations[0].c.may_have_processed == observations[1].c.may_have_processed &&
                           effect[timeout_c] == effect[lost_c];
  for (int i = 0; i < ns && same_timeout_lost; ++i)
    same_timeout_lost = hs(states[i].next[timeout_c]) == hs(states[i].next[lost_c]);
  std::printf("#define SAME_TIMEOUT_LOST %d\n", same_timeout_lost ? 1 : 0);

  // ------------------------------------------------ what a lookup settles
  if (!lookup_usable) {
    std::printf("/* lookup_status_settles(): not used, no lookup by order id (lookup.by: %s) */\n",
                lookup_by_name(p.lookup.by));
  } else {
    if (sm.lookup_charged.empty() || sm.lookup_declined.empty())
      die("no sample lookup answers for profile " + name + ": add them to gen_tables.cpp");
    auto settles = [&](const std::string& word) {
      const std::optional<PaymentState> st = lookup_status_settles(p, word);
      if (!st) return "UNKNOWN";
      if (*st == PaymentState::succeeded) return "SUCCEEDED";
      if (*st == PaymentState::failed) return "FAILED";
      die("lookup_status_settles gives a state the model has no name for");
    };
    std::printf("/* lookup_status_settles() (src/core/lookup_rules.cpp) for the status words this lookup answers */\n"
                "/* with; UNKNOWN: the status settles nothing, the payment stays UNKNOWN */\n");
    const std::string charged = lookup_status(p, sm.lookup_charged), declined = lookup_status(p, sm.lookup_declined);
    std::printf("#define LS_CHARGED %s  /* charged: \"%s\" */\n", settles(charged), charged.c_str());
    std::printf("#define LS_DECLINED %s  /* declined: \"%s\" */\n", settles(declined), declined.c_str());
  }

  // ------------------------------------------------ webhooks
  // What the provider's notification of a charge and of a decline says
  // (event_finding), what it lands as on the row (event_finding_on), how a
  // landed event moves the row (event_moves) and whether it gives the row
  // its id (event_teaches_id), and whether a kept event lands on the row
  // (kept_event_applies). A notification that, whatever it lands as, can
  // neither move a row nor give it an id cannot change anything the model
  // reads (the fold ignores an event's entry: E_EVENT_* above), so the model
  // leaves it out (EV_LANDING_MATTERS).
  const bool webhooks = !p.webhook.scheme.empty();
  std::printf("#define WEBHOOKS %d  /* webhook.scheme: \"%s\" */\n", webhooks ? 1 : 0, p.webhook.scheme.c_str());
  auto finding_macro = [](const char* f) {
    if (std::strcmp(f, kEventSucceeded) == 0) return "EV_SUCCEEDED";
    if (std::strcmp(f, kEventFailed) == 0) return "EV_FAILED";
    if (std::strcmp(f, kEventNoted) == 0) return "EV_NOTED";
    die(std::string("event_finding() gives a verdict the model has no name for: ") + f);
  };
  const char* foreign = "EV_NONE";  // what the foreign notification (a decline) says
  std::set<std::string> sent;       // what the provider's notifications say
  std::map<std::string, MoneyState> money_of_finding;  // and what each says of the money
  if (!webhooks) {
    std::printf("#define EV_OF_CHARGED EV_NONE  /* no notifications */\n#define EV_OF_DECLINED EV_NONE\n");
  } else {
    auto es = event_samples().find(name);
    if (es == event_samples().end()) es = event_samples().find(p.extends);
    if (es == event_samples().end()) die("no sample notifications for profile " + name + ": add them to gen_tables.cpp");
    for (const auto& [sample, macro] : {std::pair{es->second.charged, "CHARGED"}, std::pair{es->second.declined, "DECLINED"}}) {
      if (!sample.sent) {
        std::printf("#define EV_OF_%s EV_NONE  /* the provider sends no notification when it %s */\n", macro,
                    *macro == 'C' ? "charged" : "declined");
        continue;
      }
      const char* f = event_finding(p, sample.type, sample.status);
      if (*macro == 'D') foreign = finding_macro(f);
      sent.insert(finding_macro(f));
      const MoneyState m = event_money(p, es->second, sample);
      if (!money_of_finding.emplace(f, m).second && money_of_finding[f] != m)
        die("two notifications of profile " + name + " say " + f + " with different money: the model has one EV_LANDS");
      std::printf("#define EV_OF_%s %s  /* event_finding() (src/core/webhook_rules.cpp), type \"%s\", status \"%s\": %s */\n",
                  macro, finding_macro(f), sample.type.c_str(), sample.status.c_str(), f);
    }
  }
  std::printf("/* The foreign notification: another system's payment under the same order id, made before the row */\n"
              "/* existed, which the provider declined: its decline notification. */\n"
              "#define EV_OF_FOREIGN EV_OF_DECLINED\n");

  // What a notification lands as (event_finding_on), for every row and key
  // the model's world can show the receiver: no row yet; a row that knows no
  // provider id; one that knows the id the event names; one that knows
  // another. And the key the event carries, as the profile's webhook reads
  // it (webhook.idempotency_key; an event whose key is not read carries none
  // for the receiver) and as key_as_proof() lets it prove: the row's own (a
  // payment of the row's sends, made after the row), another request's (the
  // foreign payment, made just before the row: inside any key window; one
  // made longer ago carries a key that proves nothing, which is K_NONE's
  // case), none.
  const bool reads_key = !p.webhook.idempotency_key.empty();
  std::printf("#define READS_KEY %d  /* webhook.idempotency_key read: %s */\n", reads_key ? 1 : 0,
              reads_key ? p.webhook.idempotency_key.front().c_str() : "no");
  const std::pair<const char*, const char*> kFindings[] = {
      {kEventSucceeded, "EV_SUCCEEDED"}, {kEventFailed, "EV_FAILED"}, {kEventNoted, "EV_NOTED"}};
  const char* const kRowSeen[] = {"R_NOROW", "R_NOID", "R_SAMEID", "R_OTHERID"};
  const char* const kKeys[] = {"K_ROW", "K_OTHER", "K_NONE"};
  const char* const kRowKey = "key_of_the_row";
  auto lands_as = [&](const char* finding, int seen, int key) {
    PaymentRow row;
    row.order_id = "order_1";
    row.idempotency_key = kRowKey;
    row.state = PaymentState::unknown;
    row.created_at = kAt;
    row.provider_payment_id = seen >= 2 ? "pay_row" : "";
    const std::string event_id = seen == 3 ? "pay_other" : "pay_row";
    const std::string sent_key = key == 0 ? kRowKey : key == 1 ? "key_of_another_request" : "";
    const std::string read_key = reads_key ? sent_key : "";
    // The payment's creation, where the profile reads it (created_path).
    const int64_t made_s = p.webhook.created_path.empty() ? 0 : kAt / 1000 + (key == 0 ? 1 : -1);
    // A success whose words say no money moved is first held back unless
    // the row knows its id (event_finding_by_money), as the receiver does.
    const auto money = money_of_finding.find(finding);
    const char* f = event_finding_by_money(finding, money == money_of_finding.end() ? MoneyState::unknown : money->second,
                                           seen == 0 ? nullptr : &row, event_id);
    if (seen == 0) return event_finding_on(f, nullptr, event_id, "");
    return event_finding_on(f, &row, event_id, key_as_proof(row, read_key, made_s, p.retention_ms));
  };
  std::printf("/* event_finding_on() with the key key_as_proof() lets prove (src/core/webhook_rules.cpp), as the */\n"
              "/* receiver asks them: what a notification lands as, by what it says, the */\n"
              "/* row the receiver reads (R_NOROW none yet, R_NOID one that knows no provider id, R_SAMEID one that */\n"
              "/* knows the id the event names, R_OTHERID one that knows another) and the key it carries (K_ROW the */\n"
              "/* row's, K_OTHER another request's, K_NONE none; as read: %s) */\n",
              reads_key ? "the profile reads it" : "the profile reads none, so every event carries none for it");
  std::string lands_succeeded, lands_failed;
  bool id_decides = false;  // what a notification the provider sends lands as depends on the id the row knows
  std::map<std::string, std::set<std::string>> landings;  // finding -> what it may land as
  bool foreign_key_matters = false;
  for (const auto& [finding, fmacro] : kFindings) {
    std::string line = std::string("/*   ") + finding + ":";
    std::set<std::string> every;
    for (int r = 0; r < 4; ++r)
      for (int k = 0; k < 3; ++k) every.insert(finding_macro(lands_as(finding, r, k)));
    if (every.size() == 1) {  // the same wherever it lands: one term
      const std::string to = *every.begin();
      landings[fmacro].insert(to);
      std::printf("%s %s everywhere */\n", line.c_str(), to.c_str() + 3);
      if (to == "EV_SUCCEEDED" || to == "EV_FAILED") {
        std::string& out = to == "EV_SUCCEEDED" ? lands_succeeded : lands_failed;
        out += std::string(out.empty() ? "" : " || ") + "(f) == " + fmacro;
      }
      continue;
    }
    for (int r = 0; r < 4; ++r) {
      std::set<std::string> per_key;
      std::string keys_to[2];  // the keys for which it lands as succeeded, failed
      for (int k = 0; k < 3; ++k) {
        const char* to = finding_macro(lands_as(finding, r, k));
        landings[fmacro].insert(to);
        per_key.insert(to);
        line += std::string(" ") + kRowSeen[r] + "/" + kKeys[k] + " " + (to + 3) + ";";
        const int slot = std::strcmp(to, "EV_SUCCEEDED") == 0 ? 0 : std::strcmp(to, "EV_FAILED") == 0 ? 1 : -1;
        if (slot >= 0) keys_to[slot] += std::string(keys_to[slot].empty() ? "" : " || ") + "(k) == " + kKeys[k];
      }
      if (std::strcmp(fmacro, foreign) == 0 && std::strcmp(lands_as(finding, r, 1), lands_as(finding, r, 2)) != 0)
        foreign_key_matters = true;
      for (int k = 0; k < 3 && r >= 2 && sent.count(fmacro); ++k)
        if (std::strcmp(lands_as(finding, r, k), lands_as(finding, 1, k)) != 0) id_decides = true;
      for (int slot = 0; slot < 2; ++slot) {
        if (keys_to[slot].empty()) continue;
        std::string& out = slot == 0 ? lands_succeeded : lands_failed;
        const bool every_key = per_key.size() == 1;
        out += std::string(out.empty() ? "" : " || ") + "((f) == " + fmacro + " && (r) == " + kRowSeen[r] +
               (every_key ? "" : " && (" + keys_to[slot] + ")") + ")";
      }
    }
    std::printf("%s */\n", line.c_str());
  }
  std::printf("#define EV_LANDS(f, r, k) ((%s) -> EV_SUCCEEDED : ((%s) -> EV_FAILED : EV_NOTED))\n",
              lands_succeeded.empty() ? "0" : lands_succeeded.c_str(), lands_failed.empty() ? "0" : lands_failed.c_str());
  // The foreign payment's request carried a key of its own or none (a
  // dashboard's): the model tells the two apart only where a row would.
  std::printf("#define FOREIGN_KEY_MATTERS %d  /* the foreign event lands differently under another key and under none */\n",
              foreign_key_matters ? 1 : 0);

  // event_moves(from, entry) for every state a row can have and every finding.
  const std::pair<PaymentState, const char*> row_states[] = {
      {PaymentState::unknown, "UNKNOWN"},     {PaymentState::pending, "PENDING"}, {PaymentState::in_flight, "IN_FLIGHT"},
      {PaymentState::succeeded, "SUCCEEDED"}, {PaymentState::failed, "FAILED"},
  };
  std::printf("/* event_moves() (src/ledger/ledger.cpp): the state a landed event moves a row to; '-' it stays. */\n"
              "/* (PENDING is no state of the model's row; an IN_FLIGHT row gets no event: Ledger::record_event keeps it.) */\n");
  std::string moves, moves_when, moving_final;
  std::set<std::string> changing;  // findings whose landing moves a row or gives it its id
  for (const auto& [finding, fmacro] : event_entries) {
    std::string line = "/*   " + std::string(finding) + ":";
    for (const auto& [from, sname] : row_states) {
      AttemptEntry e;
      e.kind = "webhook";
      e.verdict = finding;
      const std::optional<PaymentState> to = event_moves(from, e);
      const char* tname = !to                                ? "-"
                          : *to == PaymentState::succeeded   ? "SUCCEEDED"
                          : *to == PaymentState::failed      ? "FAILED"
                          : *to == PaymentState::unknown     ? "UNKNOWN"
                          : *to == PaymentState::in_flight   ? "IN_FLIGHT"
                                                             : "PENDING";
      line += std::string(" ") + sname + " -> " + tname + ";";
      if (!to || *to == from) continue;
      if (*to == PaymentState::pending) die("event_moves() moves a row to PENDING, which the model has no state for");
      changing.insert(finding_macro(finding));
      if (from == PaymentState::succeeded || from == PaymentState::failed)
        if (moving_final.find(finding_macro(finding)) == std::string::npos)
          moving_final += std::string(moving_final.empty() ? "" : " || ") + "(f) == " + finding_macro(finding);
      if (from == PaymentState::pending) continue;  // no row of the model is PENDING
      moves += std::string("  :: row == ") + sname + " && fnd == " + finding_macro(finding) + " -> row = " + tname + "\n";
      moves_when += std::string(moves_when.empty() ? "" : " || ") + "((s) == " + sname + " && (f) == " + finding_macro(finding) + ")";
    }
    std::printf("%s */\n", line.c_str());
  }
  std::printf("inline ev_moves(fnd) {\n  if\n%s  :: else\n  fi\n}\n", moves.c_str());
  std::printf("#define EV_MOVES(s, f) (%s)\n", moves_when.empty() ? "0" : moves_when.c_str());
  std::printf("#define EV_MOVES_FINAL(f) (%s)\n", moving_final.empty() ? "0" : moving_final.c_str());

  // event_teaches_id(row, event): whether a landing event gives the row the
  // provider id it names, for a row that knows none, in each state an event
  // lands on, per finding. A row that knows an id is asked too: the model
  // never replaces a known id by an event's, so the code must not either.
  std::printf("/* event_teaches_id() (src/ledger/ledger.cpp): a landing event gives a row that knows no id the one */\n"
              "/* it names, by the row's state and what the event lands as */\n");
  std::string teaches;
  for (const auto& [finding, fmacro] : event_entries) {
    std::string line = "/*   " + std::string(finding) + ":";
    for (const auto& [from, sname] : row_states) {
      if (from == PaymentState::pending || from == PaymentState::in_flight) continue;  // no event lands on them here
      PaymentRow row;
      row.state = from;
      LedgerEvent e;
      e.provider_payment_id = "pay_event";
      e.entry.kind = "webhook";
      e.entry.verdict = finding;
      const bool t = event_teaches_id(row, e);
      row.provider_payment_id = "pay_row";
      if (event_teaches_id(row, e))
        die(std::string("event_teaches_id() replaces the id a ") + sname + " row knows: the model has no rule for it");
      line += std::string(" ") + sname + (t ? " learns it;" : " does not;");
      if (!t) continue;
      changing.insert(finding_macro(finding));
      teaches += std::string(teaches.empty() ? "" : " || ") + "((s) == " + sname + " && (f) == " + finding_macro(finding) + ")";
    }
    std::printf("%s */\n", line.c_str());
  }
  std::printf("#define EV_TEACHES(s, f) (%s)\n", teaches.empty() ? "0" : teaches.c_str());
  // A notification that, whatever it lands as, can neither move a row nor
  // give it an id changes nothing the model reads (the fold ignores an
  // event's entry: E_EVENT_* above): the model leaves it out.
  std::string changing_any;
  for (const std::string& f : changing) changing_any += std::string(changing_any.empty() ? "" : " || ") + "(f) == " + f;
  std::printf("#define EV_LANDING_MATTERS(f) (%s)  /* landing as f can move a row or give it its id */\n",
              changing_any.empty() ? "0" : changing_any.c_str());
  bool foreign_matters = false;
  for (const std::string& g : landings[foreign]) foreign_matters = foreign_matters || changing.count(g);
  std::printf("#define FOREIGN_EVENT %d  /* the foreign decline is sent and may land as something that matters */\n",
              foreign_matters ? 1 : 0);
  // The id the row knows is read only to judge a notification (where what
  // one the provider sends lands as depends on it), whether a landing event
  // moves the row's money (below), and by the check that the row never
  // takes the foreign id: elsewhere the model does not keep it. Printed
  // with the money tables, which it depends on.
  const bool id_matters_for_events = webhooks && (id_decides || foreign_matters);

  // event_without_row(): what becomes of a notification that names an order
  // with no row yet and a provider id (every notification of the model's
  // world names one). And event_in_payment_account(): whether one made in
  // another account lands on the row, where the profile keeps accounts in
  // one store (webhook.account_header).
  {
    const EventWithoutRow w = event_without_row("pay_elsewhere");
    const int keeps = w == EventWithoutRow::ignored ? 0 : w == EventWithoutRow::kept_by_id ? 1 : 2;
    std::printf("/* event_without_row() (src/core/webhook_rules.cpp): a notification naming an order with no row and */\n"
                "/* a provider id is ignored (0), kept by that id alone (1) or kept under the order's name (2) */\n");
    std::printf("#define NOROW_KEEPS %d\n", keeps);
    const bool accounts = !p.webhook.account_header.empty();
    std::printf("#define ACCOUNTS %d  /* webhook.account_header: \"%s\" */\n", accounts ? 1 : 0,
                p.webhook.account_header.c_str());
    std::printf("/* event_in_payment_account() (src/core/webhook_rules.cpp): a notification made in another account */\n"
                "/* lands on the row of a payment made in the platform's own, or in another one */\n");
    std::printf("#define OTHER_ACCOUNT_LANDS %d\n",
                event_in_payment_account(p, "", "acct_elsewhere") || event_in_payment_account(p, "acct_row", "acct_elsewhere")
                    ? 1
                    : 0);
  }

  // Whether a read answer names the payment, which a run's settlement then
  // writes on the row: the sample's id where the engine reads it (the
  // charge's at response.id_path, a decline's at response.error_id_path).
  auto names_id = [&](const Answer& a, bool success) {
    const std::string& path = success ? p.id_path : p.error_id_path;
    if (path.empty()) return false;
    JsonPtr doc(cJSON_Parse(a.body.c_str()));
    const std::optional<std::string> id = json_path_first_string(doc.get(), path);
    return id && !id->empty();
  };
  std::printf("#define ID_OF_2XX %s  /* the charge answer names its payment at \"%s\" */\n",
              names_id(sm.charged, true) ? "ID_C" : "ID_NONE", p.id_path.c_str());
  std::printf("#define ID_OF_DECLINE %s  /* the decline answer names its payment at \"%s\" */\n",
              names_id(sm.declined, false) ? "ID_D" : "ID_NONE", p.error_id_path.c_str());
  std::printf("#define LOOKUP_NAMES_ID %d  /* lookup.id_path: \"%s\" */\n", p.lookup.id_path.empty() ? 0 : 1,
              p.lookup.id_path.c_str());
  // kept_event_applies(row, event): an event kept for later, received before
  // the row was made or after it.
  {
    PaymentRow row;
    row.created_at = kAt;
    row.state = PaymentState::unknown;
    LedgerEvent before, after;
    before.received_at = kAt - 1;
    after.received_at = kAt + 1;
    std::printf("/* kept_event_applies() (src/core/webhook_rules.cpp): a kept event lands on the row at the next */\n"
                "/* query or reconcile if it was received before the row was made (BEFORE), or after it (AFTER) */\n");
    std::printf("#define KEPT_APPLIES_BEFORE %d\n#define KEPT_APPLIES_AFTER %d\n", kept_event_applies(row, before) ? 1 : 0,
                kept_event_applies(row, after) ? 1 : 0);
  }

  // ------------------------------------------------ where the money is
  // What each read the model makes says about the money, through the
  // profile's money block (money_in_answer, money_in_event), as the engine,
  // the settler and the receiver take it; which reads move the row's money
  // (money_moves) for every state the model's row can reach; and whether
  // an event that lands moves it (event_moves_money).
  const MoneyState kMoney[] = {MoneyState::unknown,    MoneyState::awaiting_customer, MoneyState::pending,
                               MoneyState::authorized, MoneyState::paid,              MoneyState::partly_refunded,
                               MoneyState::refunded,   MoneyState::failed};
  auto mname = [](MoneyState m) {
    std::string n = std::string("M_") + money_state_name(m);
    for (char& c : n) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return n;
  };
  std::printf("/* Where the money is (src/model/money_state.hpp): the states by their C ABI values */\n");
  for (MoneyState m : kMoney) std::printf("#define %s %d\n", mname(m).c_str(), static_cast<int>(m));
  std::set<MoneyState> reads;  // every money state a read of the model's world says
  auto read = [&](const char* macro, MoneyState m, const std::string& how) {
    reads.insert(m);
    std::printf("#define %s %s  /* %s */\n", macro, mname(m).c_str(), how.c_str());
  };
  // A run's answer (engine.cpp read_provider_fields, AttemptRun::finish):
  // money_in_create() over the answer that decided; a final refusal through
  // money_of_refusal(). Any other outcome reads nothing. A 401 read by read_unauthorized() carries no words of its own
  // (AttemptRun::unauthorized reads none). An observation whose verdict
  // never decides that way reads nothing there.
  std::printf("/* A run's deciding answer: money_in_create() when it decides SUCCEEDED (MS_OF_*) and */\n"
              "/* money_of_refusal() of it when FAILED (MF_OF_*) */\n");
  for (const Observation& o : observations) {
    JsonPtr doc(o.t.failure == TransportFailure::none ? cJSON_Parse(o.t.response.body.c_str()) : nullptr);
    const bool success = o.c.verdict == Verdict::success, fail = o.c.verdict == Verdict::fail;
    const MoneyState ms = money_in_create(p.money, doc.get(), true), mf = money_in_create(p.money, doc.get(), false);
    read(("MS_OF_" + std::string(o.obs)).c_str(), success ? ms : MoneyState::unknown,
         success ? "a success: money_in_create()" : "never decides a success");
    read(("MF_OF_" + std::string(o.obs)).c_str(), fail ? money_of_refusal(mf) : MoneyState::unknown,
         fail ? std::string("a refusal saying ") + money_state_name(mf) : "never decides a refusal");
  }
  for (const auto& [u, last] : {std::pair{u_left, ""}, std::pair{u_last, "_LAST"}}) {
    const bool fail = u.then == UnauthorizedReading::Then::failed;
    std::printf("#define MS_OF_401R%s M_UNKNOWN  /* never decides a success */\n", last);
    read(("MF_OF_401R" + std::string(last)).c_str(), fail ? money_of_refusal(MoneyState::unknown) : MoneyState::unknown,
         fail ? "a refused credential, no words" : "never decides a refusal");
  }
  // A found lookup (Settler::settle_from): money.lookup over its answer, a
  // status that settles FAILED through money_of_refusal.
  if (lookup_usable) {
    for (const auto& [body, macro] : {std::pair{sm.lookup_charged, "ML_OF_CHARGED"}, std::pair{sm.lookup_declined, "ML_OF_DECLINED"}}) {
      JsonPtr doc(cJSON_Parse(body.c_str()));
      MoneyState m = money_in_answer(p.money, p.money.lookup, doc.get());
      const std::optional<PaymentState> st = lookup_status_settles(p, lookup_status(p, body));
      if (st && *st == PaymentState::failed) m = money_of_refusal(m);
      read(macro, m, "money_in_answer(money.lookup) of the lookup's answer for a payment " + std::string(macro + 6));
    }
  } else {
    std::printf("#define ML_OF_CHARGED M_UNKNOWN  /* no lookup by order id */\n#define ML_OF_DECLINED M_UNKNOWN\n");
  }
  // An event (event_money above). The foreign events are the same
  // notifications.
  std::set<MoneyState> event_reads;
  if (webhooks) {
    auto es = event_samples().find(name);
    if (es == event_samples().end()) es = event_samples().find(p.extends);
    for (const auto& [sample, macro] : {std::pair{es->second.charged, "MEV_OF_CHARGED"}, std::pair{es->second.declined, "MEV_OF_DECLINED"}}) {
      if (!sample.sent) {
        std::printf("#define %s M_UNKNOWN  /* none sent */\n", macro);
        continue;
      }
      const MoneyState m = event_money(p, es->second, sample);
      event_reads.insert(m);
      read(macro, m, std::string(es->second.hint ? "money.lookup of the confirming lookup" : "money_in_event()") +
                         ", type \"" + sample.type + "\"");
    }
  } else {
    std::printf("#define MEV_OF_CHARGED M_UNKNOWN  /* no notifications */\n#define MEV_OF_DECLINED M_UNKNOWN\n");
  }

  // money_moves(from, read) for every state the row can reach from
  // M_UNKNOWN through the reads above.
  std::set<MoneyState> drawn = {MoneyState::unknown};
  for (bool grew = true; grew;) {
    grew = false;
    for (MoneyState from : std::set<MoneyState>(drawn))
      for (MoneyState r : reads)
        if (const std::optional<MoneyState> to = money_moves(from, r); to && drawn.insert(*to).second) grew = true;
  }
  std::string drawn_names, moves_inline, money_when;
  for (MoneyState m : drawn) drawn_names += std::string(drawn_names.empty() ? "" : ", ") + money_state_name(m);
  std::printf("/* money_moves() (src/model/money_state.cpp) for the states the row reaches: %s */\n", drawn_names.c_str());
  for (MoneyState from : drawn)
    for (MoneyState r : reads)
      if (const std::optional<MoneyState> to = money_moves(from, r)) {
        moves_inline += "  :: row_m == " + mname(from) + " && (rd) == " + mname(r) + " -> row_m = " + mname(*to) + "\n";
        money_when += std::string(money_when.empty() ? "" : " || ") + "((m) == " + mname(from) + " && (rd) == " + mname(r) + ")";
      }
  std::printf("inline money_to(rd) {\n  if\n%s  :: else\n  fi\n}\n", moves_inline.c_str());
  std::printf("#define MONEY_MOVES(m, rd) (%s)\n", money_when.empty() ? "0" : money_when.c_str());
  std::printf("#define MONEY %d  /* some read moves the row's money */\n", drawn.size() > 1 ? 1 : 0);

  // event_moves_money(row, event) for every row an event lands on (its
  // state; no id, the event's, another), what it lands as, and what it says.
  std::printf("/* event_moves_money() (src/ledger/ledger.cpp): a landing event moves the row's money, by the row's */\n"
              "/* state, what the event lands as, the row it meets (R_*) and the money the event says */\n");
  std::string moves_money;
  std::set<std::string> money_matters[2];  // on a row that knows the event's id; on one that does not
  bool money_id_decides = false;  // the id the row knows decides whether an event moves its money
  for (const auto& [finding, fmacro] : event_entries) {
    for (const auto& [from, sname] : row_states) {
      if (from == PaymentState::pending || from == PaymentState::in_flight) continue;  // no event lands on them here
      std::string seen_terms[4];
      for (int r = 1; r <= 3; ++r) {
        std::string ms;
        for (MoneyState m : event_reads) {
          PaymentRow row;
          row.state = from;
          row.provider_payment_id = r == 1 ? "" : r == 2 ? "pay_event" : "pay_other";
          LedgerEvent e;
          e.provider_payment_id = "pay_event";
          e.entry.kind = "webhook";
          e.entry.verdict = finding;
          e.entry.money_state = m;
          if (!event_moves_money(row, e)) continue;
          ms += std::string(ms.empty() ? "" : " || ") + "(m) == " + mname(m);
          if (m != MoneyState::unknown)
            money_matters[r == 2 ? 0 : 1].insert("((f) == " + std::string(finding_macro(finding)) + " && (m) == " + mname(m) + ")");
        }
        seen_terms[r] = ms;
        if (ms.empty()) continue;
        std::printf("/*   %s on a %s row, %s: moves it if it says %s */\n", finding, sname, kRowSeen[r], ms.c_str());
        moves_money += std::string(moves_money.empty() ? "" : " || ") + "((s) == " + sname + " && (f) == " + finding_macro(finding) +
                       " && (r) == " + kRowSeen[r] + " && (" + ms + "))";
      }
      if (seen_terms[1] != seen_terms[2] || seen_terms[1] != seen_terms[3]) money_id_decides = true;
    }
  }
  std::printf("#define EV_MOVES_MONEY(s, f, r, m) (%s)\n", moves_money.empty() ? "0" : moves_money.c_str());
  std::string matters[2];
  for (int i = 0; i < 2; ++i)
    for (const std::string& t : money_matters[i]) matters[i] += (matters[i].empty() ? "" : " || ") + t;
  std::printf("#define EV_MONEY_MATTERS_SAMEID(f, m) (%s)  /* landing as f, saying m, can move the money of a row that knows its id */\n",
              matters[0].empty() ? "0" : matters[0].c_str());
  std::printf("#define EV_MONEY_MATTERS_OTHER(f, m) (%s)  /* ... of a row that knows none, or another */\n",
              matters[1].empty() ? "0" : matters[1].c_str());
  std::printf("#define EVENT_MONEY %d  /* a landing event can move the row's money */\n",
              webhooks && !(matters[0].empty() && matters[1].empty()) ? 1 : 0);
  std::printf("#define ID_MATTERS %d  /* the row's provider id decides a landing or its money, or the foreign event exists */\n",
              id_matters_for_events || (webhooks && money_id_decides) ? 1 : 0);
  return 0;
}
