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
//   - a refund's own notifications (operations.pml -DEVENTS), as
//     WebhookReceiver::apply_operation_event reads them: what each built-in
//     profile's refund notifications say, operation_event_finding()
//     (src/core/webhook_rules.cpp); the row an event lands on,
//     operation_event_row(), for every pair of rows the model's payment may
//     have; how it moves that row and whether it gives it its id,
//     event_moves() and event_teaches_id() (src/ledger/ledger.cpp).
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
#include "profile.hpp"
#include "webhook_rules.hpp"

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

// ---- a refund's own notifications (operations.pml, -DEVENTS) ----------------

// The model's names for what an event says (kEvent*).
constexpr int kFindSucceeded = 1, kFindFailed = 2, kFindNoted = 3;
const char* const kFindMacro[4] = {"", "OPF_SUCCEEDED", "OPF_FAILED", "OPF_NOTED"};
const char* const kFindVerdict[4] = {"", kEventSucceeded, kEventFailed, kEventNoted};

int finding_code(const char* f) {
  for (int c = kFindSucceeded; c <= kFindNoted; ++c)
    if (std::string(f) == kFindVerdict[c]) return c;
  die(std::string("operation_event_finding() gives a verdict the model has no name for: ") + f);
}

const char* state_macro(PaymentState s) {
  for (int i = 1; i <= kRowStates; ++i)
    if (kRowState[i] == s) return kRowStateMacro[i];
  die(std::string("an event moves an operation row to ") + state_name(s) + ", a state the model has no name for");
}

// The notifications each provider sends about a refund of a payment, as the
// event type and status word its refund webhook block reads: for a refund
// that moved money (refunded) and for one that did not (declined, failed,
// canceled). Stripe: refund.created, refund.updated, refund.failed
// (docs.stripe.com/api/refunds, "Events"; sent for every refund since API
// version 2024-10-28.acacia) with the Refund object's status (pending,
// requires_action, succeeded, failed, canceled); one created pending or
// waiting for an action may end either way. Adyen: REFUND with success true
// or false. Checkout.com: payment_refunded or payment_refund_declined (its
// refund block reads no status word). The model draws any of them for a
// refund in that state. A refund reported succeeded that later fails
// (Adyen's REFUND_FAILED or REFUNDED_REVERSED, which the profile maps to
// nothing) is not in the model: each key's outcome is final there.
struct OpEventSample {
  const char* type;
  const char* status;
};
struct OpEventSamples {
  std::vector<OpEventSample> refunded, declined;
};

const std::map<std::string, OpEventSamples>& refund_event_samples() {
  static const std::map<std::string, OpEventSamples> s = {
      {"stripe",
       {{{"refund.created", "succeeded"}, {"refund.created", "pending"}, {"refund.created", "requires_action"},
         {"refund.updated", "pending"}, {"refund.updated", "succeeded"}},
        {{"refund.created", "pending"}, {"refund.created", "requires_action"}, {"refund.updated", "pending"},
         {"refund.updated", "failed"}, {"refund.updated", "canceled"}, {"refund.failed", "failed"}}}},
      {"adyen", {{{"REFUND:true", ""}}, {{"REFUND:false", ""}}}},
      {"checkout_com", {{{"payment_refunded", ""}}, {{"payment_refund_declined", ""}}}},
  };
  return s;
}

// Runs of consecutive indexes as a Promela condition on `var`.
std::string ranges_of(const std::vector<int>& sorted, const char* var) {
  std::string out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    out += out.empty() ? "" : " || ";
    if (i == j) out += "(" + std::string(var) + ") == " + std::to_string(sorted[i]);
    else
      out += "((" + std::string(var) + ") >= " + std::to_string(sorted[i]) + " && (" + var +
             ") <= " + std::to_string(sorted[j]) + ")";
    i = j + 1;
  }
  return out.empty() ? "0" : out;
}

// The receiver's decisions about a refund's notification, from the code:
//   - what it says: operation_event_finding() (src/core/webhook_rules.cpp)
//     on every built-in profile's refund notifications (the samples above),
//     gathered by what the provider did: the findings the model may draw for
//     a refund that moved money and for one that did not;
//   - how it moves the row it lands on, event_moves(), and whether it gives
//     that row its id, event_teaches_id() (src/ledger/ledger.cpp), for every
//     row state and finding;
//   - which row it lands on: operation_event_row() on every pair of rows the
//     payment may have besides its own (each absent, or of the event's kind
//     or another, in each state, knowing no id, the event's or another, and
//     holding the event's key or another), the event naming an id or not, a
//     key or not. The rows are given in the order operations_of() lists
//     them (by order id: r0's before r1's).
void print_operation_event_tables() {
  std::printf("/* A refund's own notifications: operation_event_finding(), event_moves(), event_teaches_id(), */\n"
              "/* operation_event_row() */\n");
  bool may[2][4] = {};  // [refunded?][finding]
  int readers = 0;
  for (const std::string& name : builtin_profile_names()) {
    const std::optional<Profile> p = builtin_profile(name);
    if (!p) die("built-in profile " + name + " does not load");
    const auto op = p->operations.find("refund");
    if (op == p->operations.end() || op->second.webhook.events.empty()) continue;
    auto found = refund_event_samples().find(name);
    if (found == refund_event_samples().end()) found = refund_event_samples().find(p->extends);
    if (found == refund_event_samples().end())
      die("profile " + name + " reads refund notifications; add its samples to gen_operation_tables.cpp");
    ++readers;
    for (int moved = 0; moved < 2; ++moved)
      for (const OpEventSample& e : moved ? found->second.refunded : found->second.declined) {
        if (!op->second.webhook.events.count(e.type))
          die("profile " + name + "'s refund webhook lists no event type " + e.type + ": refresh its samples");
        const char* f = operation_event_finding(op->second, e.type, e.status);
        may[moved][finding_code(f)] = true;
        std::printf("/* %s, a refund that %s: %s \"%s\": %s */\n", name.c_str(),
                    moved ? "moved money" : "moved none", e.type, e.status, f);
      }
  }
  if (readers == 0) die("no built-in profile reads refund notifications: the model has none to draw");
  for (int c = kFindSucceeded; c <= kFindNoted; ++c) std::printf("#define %s %d\n", kFindMacro[c], c);
  for (int moved = 0; moved < 2; ++moved)
    for (int c = kFindSucceeded; c <= kFindNoted; ++c)
      std::printf("#define EVF_%s_%s %d\n", moved ? "REFUNDED" : "DECLINED", kFindMacro[c] + 4, may[moved][c] ? 1 : 0);

  // event_moves() and event_teaches_id() on an operation row.
  std::printf("/* event_moves(): the state a landing event of finding f moves a row in state s to */\n"
              "inline op_event_moves(s, f, to) {\n  if\n");
  std::string teaches;
  for (int st = 1; st <= kRowStates; ++st)
    for (int c = kFindSucceeded; c <= kFindNoted; ++c) {
      AttemptEntry a;
      a.kind = "webhook";
      a.verdict = kFindVerdict[c];
      if (const std::optional<PaymentState> to = event_moves(kRowState[st], a))
        std::printf("  :: (s) == %s && (f) == %s -> to = %s\n", kRowStateMacro[st], kFindMacro[c], state_macro(*to));
      for (int knows = 0; knows < 2; ++knows)
        for (int names = 0; names < 2; ++names) {
          PaymentRow row;
          row.state = kRowState[st];
          row.operation = OperationKind::refund;
          row.provider_payment_id = knows ? "re_row" : "";
          LedgerEvent e;
          e.provider_payment_id = names ? "re_event" : "";
          e.entry = a;
          if (event_teaches_id(row, e))
            teaches += std::string(teaches.empty() ? "" : " || ") + "((s) == " + kRowStateMacro[st] + " && (f) == " +
                       kFindMacro[c] + " && (knows) == " + std::to_string(knows) + " && (names) == " +
                       std::to_string(names) + ")";
        }
    }
  std::printf("  :: else -> to = (s)\n  fi\n}\n");
  std::printf("/* event_teaches_id(): whether it gives the row (knowing an id or not) the id it names (or none) */\n"
              "#define OP_EV_TEACHES(s, f, knows, names) (%s)\n",
              teaches.empty() ? "0" : teaches.c_str());

  // operation_event_row() over every pair of rows.
  constexpr int kIdClasses = 3;   // the row knows no id, the event's, another
  constexpr int kKeyClasses = 2;  // the row holds the event's key, another
  constexpr int kRowSits = 1 + 2 * kRowStates * kIdClasses * kKeyClasses;
  std::printf("#define OP_ID_NONE 0\n#define OP_ID_EVENTS 1\n#define OP_ID_OTHER 2\n"
              "#define OP_KEY_EVENTS 0\n#define OP_KEY_OTHER 1\n#define OP_NOROW 2\n");
  std::printf("/* a row's situation (0: absent) as the event meets it: of its kind (0) or another, state, id, key */\n"
              "#define OP_ROW_SIT(other_kind, s, idc, keyc) (1 + ((((other_kind) * %d + (s) - 1) * %d + (idc)) * %d + (keyc)))\n",
              kRowStates, kIdClasses, kKeyClasses);
  std::printf("#define OP_EV_IDX(s0, s1, names_id, names_key) ((((s0) * %d + (s1)) * 2 + (names_id)) * 2 + (names_key))\n",
              kRowSits);
  std::vector<int> lands[2];
  int none = 0;
  const std::string event_id = "re_event", event_key = "key_event";
  for (int s0 = 0; s0 < kRowSits; ++s0)
    for (int s1 = 0; s1 < kRowSits; ++s1)
      for (int nid = 0; nid < 2; ++nid)
        for (int nkey = 0; nkey < 2; ++nkey) {
          std::vector<PaymentRow> rows;
          std::vector<int> which;  // the model's row each listed row is
          for (int i = 0; i < 2; ++i) {
            const int sit = i == 0 ? s0 : s1;
            if (sit == 0) continue;
            int v = sit - 1;
            const int keyc = v % kKeyClasses;
            v /= kKeyClasses;
            const int idc = v % kIdClasses;
            v /= kIdClasses;
            const int st = v % kRowStates + 1;
            const bool other_kind = v / kRowStates == 1;
            const std::string ref = "r" + std::to_string(i);
            PaymentRow r;
            r.operation = other_kind ? OperationKind::capture : OperationKind::refund;
            r.order_id = operation_row_id("order_1", r.operation, ref);
            r.scope = "scope_1";
            r.parent_order_id = "order_1";
            r.operation_ref = ref;
            r.state = kRowState[st];
            r.amount = 1;
            r.provider_payment_id = idc == 0 ? "" : idc == 1 ? event_id : "re_" + ref;
            r.idempotency_key = keyc == 0 ? event_key : "key_" + ref;
            rows.push_back(r);
            which.push_back(i);
          }
          const int at = operation_event_row(rows, OperationKind::refund, nid ? event_id : "", nkey ? event_key : "");
          const int g = ((s0 * kRowSits + s1) * 2 + nid) * 2 + nkey;
          if (at < 0) {
            ++none;
            continue;
          }
          if (at >= static_cast<int>(rows.size())) die("operation_event_row() named a row it was not given");
          lands[which[static_cast<size_t>(at)]].push_back(g);
        }
  std::printf("/* operation_event_row(): the row (0: r0, 1: r1, OP_NOROW: none) an event lands on, at */\n"
              "/* g = OP_EV_IDX(r0's situation, r1's, whether it names an id, whether it carries a key) */\n"
              "inline op_event_row(g, at) {\n  if\n");
  for (int i = 0; i < 2; ++i) std::printf("  :: %s -> at = %d\n", ranges_of(lands[i], "g").c_str(), i);
  std::printf("  :: else -> at = OP_NOROW\n  fi\n}\n");
  std::printf("/* %zu situations land on r0, %zu on r1, %d on none */\n", lands[0].size(), lands[1].size(), none);
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
              "/* operation_refused()), event_moves_money(), event_moves() and money_after(); operation_event_finding(), */\n"
              "/* operation_event_row(), event_teaches_id(). */\n");
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
  print_operation_event_tables();
  return 0;
}
