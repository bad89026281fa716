// A profile's "money" block (src/profiles/profile_money.cpp), its readers
// (money_reading.cpp) and the forward-only rule (money_moves), against what
// docs/providers.md "Where the money is" says: a map names real states, a
// reader has a map, the first reader that finds a word decides, an event's
// type comes before its object, and no read moves money back.
#include <gtest/gtest.h>

#include <cJSON.h>

#include <string>

#include "json_util.hpp"
#include "money_reading.hpp"
#include "money_state.hpp"
#include "profile.hpp"

namespace payretry {
namespace {

// The message parse_profile throws, or "" when it accepts the text.
std::string error_of(const std::string& json) {
  try {
    parse_profile(json);
  } catch (const ProfileError& e) {
    return e.what();
  }
  return "";
}

// A profile over `base` whose money block is `money` (JSON text).
std::string with_money(const std::string& money, const std::string& base = "stripe") {
  return R"({"name":"m","extends":")" + base + R"(","money":)" + money + "}";
}

MoneyState in_answer(const Profile& p, const std::vector<MoneyReader>& readers, const char* json) {
  JsonPtr doc(cJSON_Parse(json));
  EXPECT_TRUE(doc) << json;
  return money_in_answer(p.money, readers, doc.get());
}

Profile builtin(const char* name) {
  auto p = builtin_profile(name);
  if (!p) ADD_FAILURE() << "no built-in profile " << name;
  return p ? *p : Profile{};
}

// ---- the loader ---------------------------------------------------------------------------------

const char kStates[] = "(awaiting_customer, pending, authorized, paid, partly_refunded, refunded or failed)";

TEST(ProfileMoney, a_word_mapped_to_a_name_that_is_no_money_state_is_refused_where_it_stands) {
  EXPECT_EQ(error_of(with_money(R"({"states":{"succeeded":"captured"}})")),
            std::string("profile.money.states.succeeded: \"captured\" is not a money state ") + kStates);
  EXPECT_EQ(error_of(with_money(R"({"events":{"payment_intent.succeeded":"PAID"}})")),
            std::string("profile.money.events.payment_intent.succeeded: \"PAID\" is not a money state ") + kStates);
  EXPECT_EQ(error_of(with_money(R"({"create":[{"path":"$.status","states":{"ok":"fine"}}]})")),
            std::string("profile.money.create[0].states.ok: \"fine\" is not a money state ") + kStates);
  EXPECT_EQ(error_of(with_money(R"({"created":"done"})")),
            std::string("profile.money.created: \"done\" is not a money state ") + kStates);
  EXPECT_EQ(error_of(with_money(R"({"states":{"succeeded":4}})")), "profile.money.states.succeeded: must be a string");
}

TEST(ProfileMoney, unknown_is_no_target_since_an_unlisted_word_reads_it_already) {
  // A map entry to "unknown" says nothing a missing entry does not, and most
  // likely hides a typo: refused in every map and in "created".
  EXPECT_EQ(error_of(with_money(R"({"states":{"processing":"unknown"}})")),
            std::string("profile.money.states.processing: \"unknown\" is not a money state ") + kStates);
  EXPECT_EQ(error_of(with_money(R"({"events":{"charge.updated":"unknown"}})")),
            std::string("profile.money.events.charge.updated: \"unknown\" is not a money state ") + kStates);
  EXPECT_EQ(error_of(with_money(R"({"lookup":[{"path":"$.status","states":{"x":"unknown"}}]})")),
            std::string("profile.money.lookup[0].states.x: \"unknown\" is not a money state ") + kStates);
  EXPECT_EQ(error_of(with_money(R"({"created":"unknown"})")),
            std::string("profile.money.created: \"unknown\" is not a money state ") + kStates);
  // null is how a child says "nothing" for created.
  EXPECT_EQ(parse_profile(with_money(R"({"created":null})", "wechatpay_v3")).money.created, MoneyState::unknown);
}

TEST(ProfileMoney, a_reader_with_no_map_of_its_own_and_none_in_the_block_is_refused) {
  // generic maps nothing: a reader there has no words to read.
  const std::string why =
      ": reads words that no map lists: give the reader its own \"states\" or the block its \"states\"";
  EXPECT_EQ(error_of(with_money(R"({"create":[{"path":"$.status"}]})", "generic")), "profile.money.create[0]" + why);
  EXPECT_EQ(error_of(with_money(R"({"lookup":[{"path":"$.a","states":{"A":"paid"}},{"path":"$.b"}]})", "generic")),
            "profile.money.lookup[1]" + why);
  EXPECT_EQ(error_of(with_money(R"({"webhook":[{"path":"$.b"}]})", "generic")), "profile.money.webhook[0]" + why);
  // Emptying the block's map under readers that lean on it is the same mistake.
  EXPECT_EQ(error_of(with_money(R"({"states":{}})", "stripe")), "profile.money.create[0]" + why);
  // With its own map the reader stands alone.
  const Profile p = parse_profile(with_money(R"({"create":[{"path":"$.s","states":{"OK":"paid"}}]})", "generic"));
  ASSERT_EQ(p.money.create.size(), 1u);
  EXPECT_EQ(p.money.create[0].states.at("OK"), MoneyState::paid);
}

TEST(ProfileMoney, unknown_members_and_malformed_readers_are_refused_naming_the_field) {
  EXPECT_EQ(error_of(with_money(R"({"stats":{}})")).rfind("profile.money.stats: unknown key", 0), 0u)
      << error_of(with_money(R"({"stats":{}})"));
  EXPECT_NE(error_of(with_money(R"({"stats":{}})")).find("(known here: states, create, lookup, webhook, events, created)"),
            std::string::npos);
  EXPECT_EQ(error_of(with_money(R"({"create":[{"path":"$.status","map":{}}]})")).rfind("profile.money.create[0].map: unknown key", 0),
            0u);
  EXPECT_EQ(error_of(with_money(R"({"create":[{"states":{"a":"paid"}}]})")), "profile.money.create[0].path: missing");
  EXPECT_EQ(error_of(with_money(R"({"create":[{"path":"status"}]})")),
            "profile.money.create[0].path: \"status\" is not a JSON path ($, .name, .*, .pre*suf, [n], [*]; e.g. $.error.code)");
  EXPECT_EQ(error_of(with_money(R"({"lookup":{"path":"$.status"}})")),
            "profile.money.lookup: must be an array of readers ({\"path\": \"$.status\"}), tried in order");
  EXPECT_EQ(error_of(with_money(R"({"webhook":["$.status"]})")), "profile.money.webhook[0]: must be an object");
  EXPECT_EQ(error_of(with_money(R"({"states":{"":"paid"}})")), "profile.money.states.: a word must not be empty");
  EXPECT_EQ(error_of(with_money(R"({"events":{"":"paid"}})")).rfind("profile.money.events.: ", 0), 0u);
  EXPECT_EQ(error_of(with_money(R"({"states":{"a":"paid","a":"failed"}})")), "profile.money.states.a: given twice");
  EXPECT_EQ(error_of(with_money("[]")), "profile.money: must be an object");
}

TEST(ProfileMoney, extends_replaces_each_map_and_reader_list_whole_and_keeps_what_it_does_not_name) {
  const Profile stripe = builtin("stripe");
  ASSERT_GT(stripe.money.states.size(), 1u);
  ASSERT_EQ(stripe.money.create.size(), 2u);
  // states: the child's map is the whole map; the parent's readers stay.
  const Profile a = parse_profile(with_money(R"({"states":{"done":"paid"}})"));
  EXPECT_EQ(a.money.states, (std::map<std::string, MoneyState>{{"done", MoneyState::paid}}));
  EXPECT_EQ(a.money.create.size(), 2u);
  EXPECT_EQ(a.money.events, stripe.money.events);
  EXPECT_EQ(in_answer(a, a.money.create, R"({"status":"succeeded"})"), MoneyState::unknown);
  EXPECT_EQ(in_answer(a, a.money.create, R"({"status":"done"})"), MoneyState::paid);
  // A reader list: the child's list is the whole list (Stripe's second create
  // reader, the error's PaymentIntent, is gone), the maps stay.
  const Profile b = parse_profile(with_money(R"({"create":[{"path":"$.object.status"}]})"));
  ASSERT_EQ(b.money.create.size(), 1u);
  EXPECT_EQ(b.money.create[0].path, "$.object.status");
  EXPECT_EQ(b.money.states, stripe.money.states);
  EXPECT_EQ(b.money.lookup.size(), stripe.money.lookup.size());
  EXPECT_EQ(in_answer(b, b.money.create, R"({"error":{"payment_intent":{"status":"requires_payment_method"}}})"),
            MoneyState::unknown);
  // events: whole as well.
  const Profile c = parse_profile(with_money(R"({"events":{"payment_intent.succeeded":"pending"}})"));
  EXPECT_EQ(c.money.events, (std::map<std::string, MoneyState>{{"payment_intent.succeeded", MoneyState::pending}}));
  // An empty list empties: the profile reads nothing there any more.
  const Profile d = parse_profile(with_money(R"({"lookup":[]})"));
  EXPECT_TRUE(d.money.lookup.empty());
  EXPECT_EQ(d.money.create.size(), 2u);
  // created, by itself; null takes it back.
  EXPECT_EQ(builtin("wechatpay_v3").money.created, MoneyState::awaiting_customer);
  EXPECT_EQ(parse_profile(with_money(R"({"created":"pending"})", "wechatpay_v3")).money.created, MoneyState::pending);
  EXPECT_EQ(parse_profile(with_money("{}", "wechatpay_v3")).money.created, MoneyState::awaiting_customer);
  // A profile that extends another without a money block has its parent's.
  const Profile e = parse_profile(R"({"name":"m2","extends":"paypal"})");
  EXPECT_EQ(e.money.create.size(), builtin("paypal").money.create.size());
}

// ---- money_in_answer: the first reader that finds a word decides --------------------------------

TEST(MoneyInAnswer, paypal_reads_the_capture_before_the_authorization_before_the_order) {
  const Profile p = builtin("paypal");
  for (const auto* readers : {&p.money.create, &p.money.lookup}) {
    // An order COMPLETED whose capture is COMPLETED: paid, by the capture.
    EXPECT_EQ(in_answer(p, *readers,
                        R"({"status":"COMPLETED","purchase_units":[{"payments":{"captures":[{"status":"COMPLETED"}]}}]})"),
              MoneyState::paid);
    // The same order with a declined capture: failed, though the order says COMPLETED.
    EXPECT_EQ(in_answer(p, *readers,
                        R"({"status":"COMPLETED","purchase_units":[{"payments":{"captures":[{"status":"DECLINED"}]}}]})"),
              MoneyState::failed);
    // A pending capture is not paid.
    EXPECT_EQ(in_answer(p, *readers,
                        R"({"status":"COMPLETED","purchase_units":[{"payments":{"captures":[{"status":"PENDING"}]}}]})"),
              MoneyState::pending);
    // An authorization CREATED is a hold; CAPTURED says paid.
    EXPECT_EQ(in_answer(p, *readers,
                        R"({"status":"COMPLETED","purchase_units":[{"payments":{"authorizations":[{"status":"CREATED"}]}}]})"),
              MoneyState::authorized);
    // Capture and authorization both present: the capture speaks.
    EXPECT_EQ(in_answer(p, *readers,
                        R"({"status":"COMPLETED","purchase_units":[{"payments":{"authorizations":[{"status":"CAPTURED"}],"captures":[{"status":"REFUNDED"}]}}]})"),
              MoneyState::refunded);
    // No payments: the order's word, where COMPLETED alone is only pending.
    EXPECT_EQ(in_answer(p, *readers, R"({"status":"PAYER_ACTION_REQUIRED"})"), MoneyState::awaiting_customer);
    EXPECT_EQ(in_answer(p, *readers, R"({"status":"CREATED"})"), MoneyState::awaiting_customer);
    EXPECT_EQ(in_answer(p, *readers, R"({"status":"COMPLETED"})"), MoneyState::pending);
    EXPECT_EQ(in_answer(p, *readers, R"({"status":"VOIDED"})"), MoneyState::failed);
  }
}

// A PayPal order captured in parts reads every capture: a declined first
// capture beside a completed second one is an order that was paid (the
// outside money attack's case: captures[0] alone read it failed).
TEST(MoneyInAnswer, paypal_reads_every_capture_of_the_order_and_one_completed_makes_it_paid) {
  const Profile p = builtin("paypal");
  auto captures = [](const std::string& a, const std::string& b) {
    return R"({"status":"COMPLETED","purchase_units":[{"payments":{"captures":[{"status":")" + a +
           R"("},{"status":")" + b + R"("}]}}]})";
  };
  for (const auto* readers : {&p.money.create, &p.money.lookup}) {
    EXPECT_EQ(in_answer(p, *readers, captures("DECLINED", "COMPLETED").c_str()), MoneyState::paid);
    EXPECT_EQ(in_answer(p, *readers, captures("COMPLETED", "DECLINED").c_str()), MoneyState::paid);
    EXPECT_EQ(in_answer(p, *readers, captures("REFUNDED", "COMPLETED").c_str()), MoneyState::partly_refunded);
    EXPECT_EQ(in_answer(p, *readers, captures("REFUNDED", "REFUNDED").c_str()), MoneyState::refunded);
    EXPECT_EQ(in_answer(p, *readers, captures("REFUNDED", "DECLINED").c_str()), MoneyState::refunded);
    EXPECT_EQ(in_answer(p, *readers, captures("PENDING", "DECLINED").c_str()), MoneyState::pending);
    EXPECT_EQ(in_answer(p, *readers, captures("DECLINED", "FAILED").c_str()), MoneyState::failed);
    // A word the profile does not know beside a decline may be money: unknown, never failed.
    EXPECT_EQ(in_answer(p, *readers, captures("SOMETHING_NEW", "DECLINED").c_str()), MoneyState::unknown);
  }
}

TEST(MoneyOfParts, what_is_true_of_the_whole_payment) {
  using M = MoneyState;
  EXPECT_EQ(money_of_parts({}), M::unknown);
  for (M m : {M::unknown, M::awaiting_customer, M::pending, M::authorized, M::paid, M::partly_refunded, M::refunded,
              M::failed})
    EXPECT_EQ(money_of_parts({m}), m) << money_state_name(m);
  EXPECT_EQ(money_of_parts({M::failed, M::paid}), M::paid);
  EXPECT_EQ(money_of_parts({M::pending, M::refunded}), M::partly_refunded) << "refunded is final; a pending part is not";
  EXPECT_EQ(money_of_parts({M::partly_refunded, M::failed}), M::partly_refunded);
  EXPECT_EQ(money_of_parts({M::refunded, M::failed, M::refunded}), M::refunded);
  EXPECT_EQ(money_of_parts({M::authorized, M::failed}), M::authorized);
  EXPECT_EQ(money_of_parts({M::authorized, M::unknown}), M::authorized);
  EXPECT_EQ(money_of_parts({M::pending, M::unknown}), M::unknown);
  EXPECT_EQ(money_of_parts({M::awaiting_customer, M::pending}), M::pending);
  EXPECT_EQ(money_of_parts({M::awaiting_customer, M::failed}), M::awaiting_customer);
  EXPECT_EQ(money_of_parts({M::failed, M::failed}), M::failed);
}

TEST(MoneyInAnswer, an_unmapped_word_in_the_first_reader_that_finds_one_reads_unknown_and_never_falls_through) {
  const Profile p = builtin("paypal");
  // A capture status the profile has no name for: the order's COMPLETED
  // behind it must not speak for the capture (it would say pending; an
  // APPROVED order would even say awaiting_customer).
  EXPECT_EQ(in_answer(p, p.money.create,
                      R"({"status":"COMPLETED","purchase_units":[{"payments":{"captures":[{"status":"IN_REVIEW"}]}}]})"),
            MoneyState::unknown);
  EXPECT_EQ(in_answer(p, p.money.create,
                      R"({"status":"VOIDED","purchase_units":[{"payments":{"authorizations":[{"status":"EXPIRED"}]}}]})"),
            MoneyState::unknown);
  // A reader whose path yields nothing is skipped: a capture list that is
  // empty, or a status that is an object.
  EXPECT_EQ(in_answer(p, p.money.create, R"({"status":"APPROVED","purchase_units":[{"payments":{"captures":[]}}]})"),
            MoneyState::awaiting_customer);
  EXPECT_EQ(in_answer(p, p.money.create,
                      R"({"status":"APPROVED","purchase_units":[{"payments":{"captures":[{"status":{"v":1}}]}}]})"),
            MoneyState::awaiting_customer);
  // Stripe: the PaymentIntent's own status first, then an error's.
  const Profile s = builtin("stripe");
  EXPECT_EQ(in_answer(s, s.money.create, R"({"error":{"payment_intent":{"status":"requires_payment_method"}}})"),
            MoneyState::awaiting_customer);
  EXPECT_EQ(in_answer(s, s.money.create, R"({"status":"blocked","error":{"payment_intent":{"status":"succeeded"}}})"),
            MoneyState::unknown);
  // No word anywhere, no answer at all, or a reader over a profile that maps nothing.
  EXPECT_EQ(in_answer(s, s.money.create, R"({"id":"pi_1"})"), MoneyState::unknown);
  EXPECT_EQ(money_in_answer(s.money, s.money.create, nullptr), MoneyState::unknown);
  const Profile g = builtin("generic");
  EXPECT_EQ(in_answer(g, g.money.create, R"({"status":"succeeded"})"), MoneyState::unknown);
}

TEST(MoneyInAnswer, a_readers_own_map_replaces_the_blocks_for_it_alone) {
  const Profile p = parse_profile(with_money(
      R"({"states":{"OK":"paid","HELD":"authorized"},"create":[{"path":"$.a","states":{"OK":"pending"}},{"path":"$.b"}]})",
      "generic"));
  EXPECT_EQ(in_answer(p, p.money.create, R"({"a":"OK"})"), MoneyState::pending);
  EXPECT_EQ(in_answer(p, p.money.create, R"({"a":"HELD"})"), MoneyState::unknown);  // not in its own map
  EXPECT_EQ(in_answer(p, p.money.create, R"({"b":"HELD"})"), MoneyState::authorized);
  EXPECT_EQ(in_answer(p, p.money.create, R"({"b":"OK"})"), MoneyState::paid);
  // Alipay: the create's code through its own map, the lookup through the block's.
  const Profile a = builtin("alipay");
  EXPECT_EQ(in_answer(a, a.money.create, R"({"alipay_trade_pay_response":{"code":"10003"}})"), MoneyState::awaiting_customer);
  EXPECT_EQ(in_answer(a, a.money.create, R"({"alipay_trade_pay_response":{"code":"10000"}})"), MoneyState::paid);
  EXPECT_EQ(in_answer(a, a.money.create, R"({"alipay_trade_pay_response":{"code":"40004"}})"), MoneyState::unknown);
  EXPECT_EQ(in_answer(a, a.money.lookup, R"({"alipay_trade_query_response":{"trade_status":"WAIT_BUYER_PAY"}})"),
            MoneyState::awaiting_customer);
}

// ---- money_in_event: the event's type first, then the readers over its object -------------------

MoneyState in_event(const Profile& p, const char* type, const char* object) {
  JsonPtr doc(cJSON_Parse(object));
  EXPECT_TRUE(doc) << object;
  return money_in_event(p.money, type, doc.get());
}

TEST(MoneyInEvent, the_events_map_speaks_before_the_objects_status) {
  const Profile s = builtin("stripe");
  // payment_failed leaves the PaymentIntent payable: its event says so even
  // when the object's status would say otherwise.
  EXPECT_EQ(in_event(s, "payment_intent.payment_failed", R"({"data":{"object":{"status":"canceled"}}})"),
            MoneyState::awaiting_customer);
  EXPECT_EQ(in_event(s, "payment_intent.amount_capturable_updated", R"({"data":{"object":{"status":"succeeded"}}})"),
            MoneyState::authorized);
  // A type the map does not list: the object's status through the webhook readers.
  EXPECT_EQ(in_event(s, "payment_intent.updated", R"({"data":{"object":{"status":"requires_capture"}}})"),
            MoneyState::authorized);
  EXPECT_EQ(in_event(s, "", R"({"data":{"object":{"status":"succeeded"}}})"), MoneyState::paid);
  EXPECT_EQ(in_event(s, "charge.dispute.created", R"({"data":{"object":{"status":"needs_response"}}})"),
            MoneyState::unknown);
  // Checkout.com has events and no webhook readers: an unlisted type reads nothing.
  const Profile c = builtin("checkout_com");
  EXPECT_EQ(in_event(c, "payment_captured", R"({"data":{"status":"Declined"}})"), MoneyState::paid);
  EXPECT_EQ(in_event(c, "payment_capture_declined", R"({"data":{"status":"Captured"}})"), MoneyState::unknown);
  // Adyen: the "{eventCode}:{success}" pair.
  const Profile a = builtin("adyen");
  EXPECT_EQ(in_event(a, "AUTHORISATION:true", "{}"), MoneyState::authorized);
  EXPECT_EQ(in_event(a, "AUTHORISATION:false", "{}"), MoneyState::failed);
  EXPECT_EQ(in_event(a, "CAPTURE:true", "{}"), MoneyState::paid);
  EXPECT_EQ(in_event(a, "CAPTURE:false", "{}"), MoneyState::unknown);  // a refused capture leaves the hold
  // Square and WeChat Pay: the object's status alone.
  const Profile q = builtin("square");
  EXPECT_EQ(in_event(q, "payment.updated", R"({"data":{"object":{"payment":{"status":"APPROVED"}}}})"),
            MoneyState::authorized);
  const Profile w = builtin("wechatpay_v3");
  EXPECT_EQ(in_event(w, "SUCCESS", R"({"trade_state":"SUCCESS"})"), MoneyState::paid);
}

// ---- money_moves: all 64 pairs against docs/providers.md's rules --------------------------------

// Row: the stored state; column: the state read. '.' nothing moves, else the
// letter of the state the row takes (u a p h P r R f: unknown,
// awaiting_customer, pending, autHorized, Paid, partly refunded, Refunded,
// failed). Written from the rules in docs/providers.md: forward only along
// unknown < awaiting_customer < pending < authorized < paid < partly_refunded
// < refunded; failed reached from unknown, awaiting_customer, pending and
// authorized, never from paid or later; failed and refunded terminal; a read
// of unknown moves nothing.
//                            read: u a p h P r R f
constexpr const char* kMoves[8] = {/* unknown           */ ". a p h P r R f",
                                   /* awaiting_customer */ ". . p h P r R f",
                                   /* pending           */ ". . . h P r R f",
                                   /* authorized        */ ". . . . P r R f",
                                   /* paid              */ ". . . . . r R .",
                                   /* partly_refunded   */ ". . . . . . R .",
                                   /* refunded          */ ". . . . . . . .",
                                   /* failed            */ ". . . . . . . ."};

MoneyState of_letter(char c) {
  switch (c) {
    case 'u': return MoneyState::unknown;
    case 'a': return MoneyState::awaiting_customer;
    case 'p': return MoneyState::pending;
    case 'h': return MoneyState::authorized;
    case 'P': return MoneyState::paid;
    case 'r': return MoneyState::partly_refunded;
    case 'R': return MoneyState::refunded;
    case 'f': return MoneyState::failed;
  }
  ADD_FAILURE() << "no state letter " << c;
  return MoneyState::unknown;
}

TEST(MoneyMoves, every_pair_of_stored_and_read_state_moves_as_the_documented_table_says) {
  int moves = 0;
  for (int from = 0; from < 8; ++from) {
    for (int read = 0; read < 8; ++read) {
      const char cell = kMoves[from][2 * read];
      const auto f = static_cast<MoneyState>(from), r = static_cast<MoneyState>(read);
      const std::optional<MoneyState> got = money_moves(f, r);
      if (cell == '.') {
        EXPECT_FALSE(got.has_value()) << money_state_name(f) << " read " << money_state_name(r) << " moved to "
                                      << money_state_name(got.value_or(MoneyState::unknown));
        EXPECT_EQ(money_after(f, r), f);
      } else {
        ++moves;
        EXPECT_EQ(got, std::optional<MoneyState>(of_letter(cell)))
            << money_state_name(f) << " read " << money_state_name(r);
        EXPECT_EQ(money_after(f, r), of_letter(cell));
      }
    }
  }
  EXPECT_EQ(moves, 7 + 6 + 5 + 4 + 2 + 1);  // the table's own count, so a typo in it shows
}

TEST(MoneyMoves, a_refusal_reads_failed_unless_the_profile_mapped_its_words) {
  // money_of_refusal: a Stripe decline's PaymentIntent is payable, a refusal
  // with words no profile maps moved no money.
  EXPECT_EQ(money_of_refusal(MoneyState::unknown), MoneyState::failed);
  EXPECT_EQ(money_of_refusal(MoneyState::awaiting_customer), MoneyState::awaiting_customer);
  EXPECT_EQ(money_of_refusal(MoneyState::failed), MoneyState::failed);
}

}  // namespace
}  // namespace payretry
