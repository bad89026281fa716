// Prints the tables of operations.pml (refunds of one payment, issue 47) as a
// Promela include: `model_gen_tables operations`. As for the settlement
// model, every decision in them is the library's own, never restated here:
//
//   - the guard: operation_guard() (src/ledger/ledger_operations.cpp), which
//     every backend's create_operation_and_claim asks inside its
//     transaction: the ledger's rows mapped onto the rule's facts
//     (operation_parent, operation_sibling: how a row's state counts), then
//     operation_refused() (src/model/operation_rules.cpp). It is called on
//     real PaymentRows for every situation of the model's bounded ledger:
//     each payment situation the world reaches, each state and amount of
//     the payment's other refund row (or none), each amount asked.
//   - how the payment's row moves when a refund succeeded: the event
//     OperationFlow::move_payment_money records (money partly_refunded,
//     naming the payment's provider id), through event_moves_money(),
//     money_after() and event_moves() (src/ledger/ledger.cpp,
//     src/model/money_state.hpp), as the memory ledger's record_event
//     applies them.
//   - how an open payment's row settles (charged: money paid; declined:
//     failed): money_after() as Ledger settle applies it.
//
// The world's payment situations (which ones exist, what the provider
// really holds of each) are the model's; so is the bound: CAP units
// captured, amounts 1..CAP or "the rest", two refs.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ledger.hpp"
#include "money_state.hpp"
#include "operation_rules.hpp"

using namespace payretry;

namespace {

constexpr int kCap = 3;           // what the paid payment asked and captured
constexpr int kWhole = kCap + 1;  // the model's code for -1: asked "the rest", or stored "the whole, amount not known"
constexpr int kRowStates = 4;     // IN_FLIGHT, UNKNOWN, SUCCEEDED, FAILED (an operation row is made claimed: never PENDING)
constexpr int kSituations = 1 + kRowStates * kWhole;  // a row absent, or one of those states with one of the amounts

const PaymentState kRowState[kRowStates + 1] = {PaymentState::pending /* unused: absent */, PaymentState::in_flight,
                                                PaymentState::unknown, PaymentState::succeeded, PaymentState::failed};
const char* const kRowStateMacro[kRowStates + 1] = {"OS_ABSENT", "OS_IN_FLIGHT", "OS_UNKNOWN", "OS_SUCCEEDED",
                                                    "OS_FAILED"};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "gen_tables operations: %s\n", why.c_str());
  std::exit(2);
}

int64_t amount_of(int code) { return code == kWhole ? -1 : code; }

struct Parent {
  PaymentState state;
  MoneyState money;
  int64_t amount;
  bool operator<(const Parent& o) const {
    return std::tie(state, money, amount) < std::tie(o.state, o.money, o.amount);
  }
};

PaymentRow parent_row(const Parent& p) {
  PaymentRow r;
  r.order_id = "order_1";
  r.scope = "scope_1";
  r.operation = OperationKind::create;
  r.state = p.state;
  r.money_state = p.money;
  r.amount = p.amount;
  r.provider_payment_id = "pay_1";
  return r;
}

PaymentRow refund_row(const std::string& ref, int situation) {
  PaymentRow r;
  r.order_id = operation_row_id("order_1", OperationKind::refund, ref);
  r.scope = "scope_1";
  r.operation = OperationKind::refund;
  r.parent_order_id = "order_1";
  r.operation_ref = ref;
  r.state = kRowState[(situation - 1) / kWhole + 1];
  r.amount = amount_of((situation - 1) % kWhole + 1);
  return r;
}

// The payment after a refund of it succeeded: the event move_payment_money
// records, applied as record_event applies one (money first, judged on the
// row as it was; then the state, as event_moves() says).
Parent after_refund(const Parent& p) {
  const PaymentRow row = parent_row(p);
  LedgerEvent e;
  e.scope = row.scope;
  e.scheme = "operation";
  e.event_id = "operation:order_1:refund:r1";
  e.order_id = row.order_id;
  e.provider_payment_id = row.provider_payment_id;
  e.entry.kind = "webhook";
  e.entry.verdict = kEventNoted;
  e.entry.money_state = MoneyState::partly_refunded;
  Parent q = p;
  if (event_moves_money(row, e)) q.money = money_after(p.money, e.entry.money_state);
  if (const std::optional<PaymentState> to = event_moves(p.state, e.entry)) q.state = *to;
  return q;
}

std::string parent_text(const Parent& p) {
  return std::string(state_name(p.state)) + ", money " + money_state_name(p.money) + ", amount " +
         (p.amount < 0 ? std::string("not known") : std::to_string(p.amount));
}

}  // namespace

int print_operation_tables() {
  // The payments the world starts from (operations.pml says what the
  // provider really holds of each), then every situation they reach.
  const std::vector<std::pair<const char*, Parent>> initial = {
      {"P_PAID", {PaymentState::succeeded, MoneyState::paid, kCap}},
      {"P_PAID_AMOUNT_UNKNOWN", {PaymentState::succeeded, MoneyState::paid, -1}},
      {"P_AUTHORIZED", {PaymentState::succeeded, MoneyState::authorized, kCap}},
      {"P_OPEN", {PaymentState::unknown, MoneyState::unknown, kCap}},
      // Open, its money already read as paid (a notification of the payment
      // can move its money and not its state: docs/model.md, "Where the money
      // is"): only the rule that a payment must be settled refuses a refund.
      {"P_OPEN_PAID", {PaymentState::unknown, MoneyState::paid, kCap}},
      {"P_RUNNING", {PaymentState::in_flight, MoneyState::unknown, kCap}},
      {"P_FAILED", {PaymentState::failed, MoneyState::failed, kCap}},
  };
  std::vector<Parent> parents;
  std::map<Parent, int> index;
  auto add = [&](const Parent& p) {
    auto [it, fresh] = index.emplace(p, static_cast<int>(parents.size()));
    if (fresh) parents.push_back(p);
    return it->second;
  };
  for (const auto& [name, p] : initial) add(p);
  std::vector<int> refunded, settled_charged, settled_declined;
  for (size_t i = 0; i < parents.size(); ++i) {  // grows while it runs: the closure
    const Parent p = parents[i];
    refunded.push_back(add(after_refund(p)));
    const bool open = p.state == PaymentState::unknown || p.state == PaymentState::in_flight;
    Parent charged = p, declined = p;
    if (open) {
      charged.state = PaymentState::succeeded;
      charged.money = money_after(p.money, MoneyState::paid);
      declined.state = PaymentState::failed;
      declined.money = money_after(p.money, MoneyState::failed);
    }
    settled_charged.push_back(add(charged));
    settled_declined.push_back(add(declined));
  }
  if (parents.size() > 255) die("too many payment situations for a byte");

  // Every comment is one line: run_spin.sh drops them when it compares tables.
  std::printf("/* Generated by model_gen_tables operations with operation_guard() (operation_parent, operation_sibling, */\n"
              "/* operation_refused()), event_moves_money(), event_moves() and money_after(). */\n");
  std::printf("#define CAP %d      /* what the payment captured, in the provider's units */\n", kCap);
  std::printf("#define WHOLE %d    /* an amount of -1: asked \"the rest\", or stored \"the whole, not known\" */\n", kWhole);
  for (int s = 0; s <= kRowStates; ++s) std::printf("#define %s %d\n", kRowStateMacro[s], s);
  std::printf("#define SIT(st, a) ((st) == OS_ABSENT -> 0 : ((st) - 1) * WHOLE + (a))  /* a refund row's situation */\n");
  std::printf("#define GIDX(p, s, a) (((p) * %d + (s)) * WHOLE + (a) - 1)\n", kSituations);
  for (size_t i = 0; i < parents.size(); ++i)
    std::printf("/* payment situation %zu: %s */\n", i, parent_text(parents[i]).c_str());
  for (const auto& [name, p] : initial) std::printf("#define %s %d\n", name, index[p]);
  // For the trail's story: the situation in words.
  std::printf("inline say_parent() {\n  if\n");
  for (size_t i = 0; i < parents.size(); ++i)
    std::printf("  :: parent == %zu -> printf(\"%s\")\n", i, parent_text(parents[i]).c_str());
  std::printf("  fi\n}\n");

  // Facts of each situation the model's checks read: whether the row is
  // SUCCEEDED, and whether it is open (a settle may still come).
  std::string succeeded, open;
  for (size_t i = 0; i < parents.size(); ++i) {
    const std::string t = "(p) == " + std::to_string(i);
    if (parents[i].state == PaymentState::succeeded) succeeded += (succeeded.empty() ? "" : " || ") + t;
    if (parents[i].state == PaymentState::unknown || parents[i].state == PaymentState::in_flight)
      open += (open.empty() ? "" : " || ") + t;
  }
  std::printf("#define PARENT_SUCCEEDED(p) (%s)\n", succeeded.empty() ? "0" : succeeded.c_str());
  std::printf("#define PARENT_OPEN(p) (%s)\n", open.empty() ? "0" : open.c_str());

  auto print_move = [&](const char* inline_name, const char* why, const std::vector<int>& to) {
    std::printf("/* %s */\ninline %s() {\n  if\n", why, inline_name);
    for (size_t i = 0; i < parents.size(); ++i)
      if (to[i] != static_cast<int>(i)) std::printf("  :: parent == %zu -> parent = %d\n", i, to[i]);
    std::printf("  :: else\n  fi\n}\n");
  };
  print_move("parent_after_refund", "a refund of the payment succeeded: move_payment_money's event, as record_event applies it",
             refunded);
  print_move("parent_settles_charged", "an open payment settles: the provider charged it", settled_charged);
  print_move("parent_settles_declined", "an open payment settles: the provider declined it", settled_declined);

  // The guard, for every situation of the bounded ledger: the situations
  // it allows, by the amount it gives; every other one is refused.
  std::printf("/* operation_guard(): the amount d a refund of asked amount a (WHOLE: the rest) is given, with the */\n"
              "/* payment in situation p and its other refund row in situation s, at g = GIDX(p, s, a); 0: refused */\n");
  std::map<int, std::string> by_amount;
  int allowed = 0, refused = 0;
  for (size_t pi = 0; pi < parents.size(); ++pi) {
    const PaymentRow parent = parent_row(parents[pi]);
    for (int s1 = 0; s1 < kSituations; ++s1)
      for (int a = 1; a <= kWhole; ++a) {
        std::vector<PaymentRow> family;  // the payment's operation rows, as the ledger reads them
        if (s1) family.push_back(refund_row("r_other", s1));
        PaymentRow proposed;
        proposed.order_id = operation_row_id("order_1", OperationKind::refund, "r_new");
        proposed.scope = "scope_1";
        proposed.operation = OperationKind::refund;
        proposed.parent_order_id = "order_1";
        proposed.operation_ref = "r_new";
        proposed.state = PaymentState::in_flight;
        proposed.amount = amount_of(a);
        int64_t amount = amount_of(a);
        const std::string why = operation_guard(proposed, parent, family, amount);
        if (!why.empty()) {
          // operation_refused(): "`amount` changes only when allowed".
          if (amount != amount_of(a)) die("a refusal changed the amount asked: " + why);
          ++refused;
          continue;
        }
        int code = 0;
        if (amount == -1 && a == kWhole) code = kWhole;
        else if (amount >= 1 && amount <= kCap) code = static_cast<int>(amount);
        else die("the guard allowed an amount the model has none for: " + std::to_string(amount));
        ++allowed;
        std::string& terms = by_amount[code];
        terms += (terms.empty() ? "" : " || ") + std::string("(g) == ") +
                 std::to_string((pi * kSituations + s1) * kWhole + a - 1);
      }
  }
  std::printf("inline guard_decides(g, d) {\n  if\n");
  for (const auto& [code, terms] : by_amount) std::printf("  :: %s -> d = %d\n", terms.c_str(), code);
  std::printf("  :: else -> d = 0\n  fi\n}\n");
  std::printf("/* %d situations allowed, %d refused */\n", allowed, refused);
  return 0;
}
