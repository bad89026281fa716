// payretry demo --operations: for each provider, its own simulator (the
// default demo's fault mix) and its own ledger; payments, some only held;
// then captures (part of the hold where the provider allows it), cancels,
// and partial refunds (their sum never above what was captured), some asked
// twice with the same ref and some from two threads at once, one asked for
// more than is left (the ledger's guard must refuse it before any byte);
// the providers that notify operations (Adyen, Checkout.com, Stripe's
// refunds) notify a local endpoint that applies each notification to the
// ledger; then what stayed UNKNOWN is settled; then the simulator's truth: every
// operation key moved money at most once, refunds never above captured, no
// operation SUCCEEDED that the simulator did not execute or FAILED that it did.
#include "demo_operations.hpp"

#include <curl/curl.h>
#include <payretry/payretry.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "client_setup.hpp"
#include "demo_plan.hpp"
#include "demo_providers.hpp"
#include "demo_webhooks.hpp"
#include "progress.hpp"
#include "reconcile_run.hpp"
#include "server.hpp"

namespace cli {
namespace {

constexpr int kSettlePasses = 3;

const char* const kKinds[] = {"capture", "refund", "cancel"};
const char* const kRowStates[] = {"SUCCEEDED", "FAILED", "UNKNOWN", "IN_FLIGHT", "PENDING"};

// A row a provider's notification settled: the ledger writes this detail
// when an event takes a row out of UNKNOWN or PENDING (event_settled_detail).
bool settled_by_notification(const cJSON* row) {
  const std::string st = jstr(row, "state");
  return (st == "SUCCEEDED" || st == "FAILED") && jstr(row, "detail").rfind("settled by webhook", 0) == 0;
}

void add_num(cJSON* o, const char* k, double v) { cJSON_AddNumberToObject(o, k, v); }

// The simulator's admin endpoints (the truth of one order, the customer's
// own action), over loopback HTTP as any test of an integration asks them.
size_t collect(char* p, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(p, size * n);
  return size * n;
}
std::string admin(const std::string& url, const std::string* post_body) {
  std::unique_ptr<CURL, void (*)(CURL*)> h(curl_easy_init(), curl_easy_cleanup);
  if (!h) throw Failure(kExitInternal, "curl_easy_init failed");
  std::string out;
  curl_easy_setopt(h.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, &collect);
  curl_easy_setopt(h.get(), CURLOPT_WRITEDATA, &out);
  curl_easy_setopt(h.get(), CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
  if (post_body) curl_easy_setopt(h.get(), CURLOPT_POSTFIELDS, post_body->c_str());
  const CURLcode rc = curl_easy_perform(h.get());
  long status = 0;
  curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &status);
  if (rc != CURLE_OK) throw Failure(kExitInternal, "the simulator's " + url + ": " + curl_easy_strerror(rc));
  if (post_body && status != 200) return "";  // nothing moved that way (a 409): the caller reads the ledger
  if (status != 200) throw Failure(kExitInternal, "the simulator's " + url + " answered " + std::to_string(status));
  return out;
}

// Runs f(0..n-1) on `threads` workers. A failed call ends the run with its
// error, raised here on the caller's thread once every worker stopped.
template <class F>
void parallel(int n, int threads, F f) {
  std::atomic<int> next{0};
  std::mutex mu;
  std::optional<Failure> failed;
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, std::min(threads, n)); ++t)
    pool.emplace_back([&] {
      for (int k; (k = next.fetch_add(1)) < n;) {
        try {
          f(k);
        } catch (const Failure& e) {
          std::lock_guard<std::mutex> lock(mu);
          if (!failed) failed.emplace(e);
          next.store(n);
        } catch (const std::exception& e) {
          std::lock_guard<std::mutex> lock(mu);
          if (!failed) failed.emplace(kExitInternal, e.what());
          next.store(n);
        }
      }
    });
  for (std::thread& t : pool) t.join();
  if (failed) throw *failed;
}

struct Payment {
  int i = 0;
  std::string order;
  int64_t amount = 0;
  bool hold = false;
  std::string answer;          // the body of its create's or lookup's answer
  int64_t capture_asked = -1;  // the capture's amount (0: the rest), -1: none asked
  std::string capture_answer;
  bool refunds_asked = false;
};

// One operation as asked: asked again the same way, it is the same operation.
struct Ask {
  std::string order;
  pay::operation kind = pay::operation::refund;
  std::string ref;
  int64_t amount = 0;
  std::string body, target;
  std::string row() const { return order + " " + std::string(pay::to_string(kind)) + " " + ref; }
};

enum class Said { result, not_offered, refused, error };

struct Call {
  Said said = Said::error;
  pay::outcome outcome = pay::outcome::unknown;
  pay::money_state money = pay::money_state::unknown;
  std::string body, message;
};

struct KindCount {
  long refs = 0;  // distinct operations asked
  long calls = 0;
  std::map<std::string, long> outcomes;  // of the calls, first asks and repeats alike
  long asked_twice = 0, raced = 0;
  long refused = 0;  // by the ledger's guard, nothing sent, when not planned
  std::string first_refusal;
  long errors = 0;
  std::string first_error;
  std::string not_offered;  // why payretry does not send it for this provider
};

class ProviderRun {
 public:
  ProviderRun(const OperationsPlan& plan, const std::string& provider, const std::string& dir)
      : plan_(plan), p_(demo_provider(provider)), dir_(dir) {}

  Json run();

 private:
  Call send(const Ask& a, bool first = true);
  void refunds(Payment& pm, int64_t captured);
  void operate(Payment& pm);
  void refund_captured(Payment& pm);
  void settle(const pay::client& c);
  Json ledger_rows() const;
  void check_truth(const payretry_sim::Server& sim, cJSON* out);

  const OperationsPlan& plan_;
  const DemoProvider p_;
  const std::string dir_;
  const pay::client* client_ = nullptr;
  std::vector<Payment> payments_;
  std::mutex mu_;
  std::map<std::string, KindCount> kinds_;
  std::map<std::string, Ask> asks_;  // by row id
  long over_refunds_refused_ = 0, over_refunds_sent_ = 0;
  long settled_by_reconcile_ = 0, settled_by_same_ref_ = 0, settle_passes_ = 0;
  long customer_paid_ = 0;
  long create_call_errors_ = 0;
  long holds_not_reached_ = 0;  // no id for the path to name
  std::map<std::string, long> refunds_not_reached_;  // by the payment's money after its capture
};

Call ProviderRun::send(const Ask& a, bool first) {
  const std::string kind(pay::to_string(a.kind));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!kinds_[kind].not_offered.empty()) return {Said::not_offered, {}, {}, {}, kinds_[kind].not_offered};
  }
  pay::operation_options o;
  o.ref = a.ref;
  o.amount = a.amount;
  if (!a.body.empty()) o.body = a.body;
  if (!a.target.empty()) o.target_id = a.target;
  Call c;
  try {
    const pay::result r = client_->submit_operation(a.order, a.kind, o);
    c.said = Said::result;
    c.outcome = r.outcome();
    c.money = r.money_state();
    c.body = std::string(r.body());
  } catch (const pay::error& e) {
    c.message = e.what();
    // Refused before any byte: an operation this version does not send for
    // the provider (no key to send it with, not a POST, none in the
    // profile), or one the payment does not allow.
    const bool absent = c.message.find("which this version does not send") != std::string::npos ||
                        c.message.find(kind + " operation in its profile") != std::string::npos;
    c.said = e.code() == PAY_EINVALID && absent ? Said::not_offered
             : e.code() == PAY_EINVALID && c.message.find("refused, nothing sent") != std::string::npos ? Said::refused
                                                                                                        : Said::error;
  }
  std::lock_guard<std::mutex> lock(mu_);
  KindCount& k = kinds_[kind];
  if (c.said == Said::not_offered) {
    k.not_offered = c.message;
    return c;
  }
  if (!first) return c;
  if (c.said == Said::result) {
    if (asks_.emplace(a.row(), a).second) ++k.refs;
    ++k.calls;
    ++k.outcomes[std::string(pay::to_string(c.outcome))];
  } else if (c.said == Said::error) {
    ++k.errors;
    if (k.first_error.empty()) k.first_error = a.row() + ": " + c.message;
  }
  return c;
}

void ProviderRun::refunds(Payment& pm, int64_t captured) {
  pm.refunds_asked = true;
  Ask r1{pm.order, pay::operation::refund, "r1", std::max<int64_t>(1, captured * 3 / 10), demo_operation_body(p_, pm.amount),
         demo_target_id(p_, true, pm.answer, pm.capture_answer)};
  if (p_.needs_target && r1.target.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++refunds_not_reached_["no capture id in the answers"];
    return;
  }
  Call c1;
  const int mode = pm.i % 5;
  if (mode == 2) {
    // The same refund from two workers at once: one sends it, the other
    // waits for its answer (the ledger's lease), and it moves money once.
    Call other;
    std::thread t([&] { other = send(r1); });
    c1 = send(r1);
    t.join();
    std::lock_guard<std::mutex> lock(mu_);
    ++kinds_["refund"].raced;
  } else {
    c1 = send(r1);
  }
  if (c1.said == Said::not_offered) return;
  if (mode == 1) {
    // Asked again with the same ref, as a retrying caller would: the same refund.
    send(r1);
    std::lock_guard<std::mutex> lock(mu_);
    ++kinds_["refund"].asked_twice;
  }
  Ask r2 = r1;
  r2.ref = "r2";
  const Call c2 = send(r2);
  if (mode == 3) {
    // More than is left after r1 and r2 (an UNKNOWN one counts as spent):
    // the guard must refuse it, nothing written, nothing sent. It fits only
    // when both earlier refunds FAILED.
    Ask r3 = r1;
    r3.ref = "r3";
    r3.amount = captured - r1.amount + 1;
    const Call c3 = send(r3);
    const bool both_failed = c1.said == Said::result && c1.outcome == pay::outcome::failed &&
                             c2.said == Said::result && c2.outcome == pay::outcome::failed;
    std::lock_guard<std::mutex> lock(mu_);
    if (c3.said == Said::refused) ++over_refunds_refused_;
    else if (c3.said == Said::result && !both_failed) ++over_refunds_sent_;
  }
}

// The payment's ledger row; null when it was never recorded (its create's
// call failed before anything was sent).
Json payment_row(const pay::client& c, const std::string& order) {
  try {
    return parse_json(c.ledger_get(order));
  } catch (const pay::error& e) {
    if (e.code() == PAY_ENOTFOUND) return Json();
    throw;
  }
}

void ProviderRun::operate(Payment& pm) {
  const Json row = payment_row(*client_, pm.order);
  if (!row) return;
  const cJSON* pay_row = cJSON_GetObjectItemCaseSensitive(row.get(), "payment");
  if (jstr(pay_row, "state") != "SUCCEEDED") return;
  const std::string money = jstr(pay_row, "money_state");
  if (money == "authorized") {
    if (p_.needs_target && demo_target_id(p_, false, pm.answer, "").empty()) {
      // PayPal names the authorization in the path: neither the create's
      // answer nor the order's lookup gave its id (a create settled by
      // reconcile keeps no answer body).
      std::lock_guard<std::mutex> lock(mu_);
      ++holds_not_reached_;
      return;
    }
    if (pm.i % 4 == 0) {
      send({pm.order, pay::operation::cancel, "x1", 0, demo_operation_body(p_, pm.amount), demo_target_id(p_, false, pm.answer, "")});
      return;
    }
    // Part of the hold where the provider allows it (0: the rest).
    Ask c{pm.order, pay::operation::capture, "c1", p_.partial_capture ? pm.amount * 6 / 10 : 0, demo_operation_body(p_, pm.amount),
          demo_target_id(p_, false, pm.answer, "")};
    pm.capture_asked = c.amount;
    const Call r = send(c);
    if (r.said == Said::result) pm.capture_answer = r.body;
    if (r.said == Said::result && r.outcome == pay::outcome::succeeded && r.money == pay::money_state::paid)
      refunds(pm, c.amount ? c.amount : pm.amount);
    return;
  }
  if (money == "paid") refunds(pm, pm.amount);
}

// A capture that was not settled paid at once (UNKNOWN, or the provider's
// money still pending) is refunded once the ledger reads its payment paid.
void ProviderRun::refund_captured(Payment& pm) {
  if (pm.capture_asked < 0 || pm.refunds_asked) return;
  const Json row = payment_row(*client_, pm.order);
  const std::string money = jstr(cJSON_GetObjectItemCaseSensitive(row.get(), "payment"), "money_state");
  const Json cap = payment_row(*client_, pm.order + " capture c1");
  if (!cap) return;  // refused before any byte: nothing was captured
  const std::string cap_state = jstr(cJSON_GetObjectItemCaseSensitive(cap.get(), "payment"), "state");
  if (cap_state != "SUCCEEDED" || money != "paid") {
    std::lock_guard<std::mutex> lock(mu_);
    if (cap_state == "SUCCEEDED") ++refunds_not_reached_["captured, the payment's money reads " + money];
    return;
  }
  refunds(pm, pm.capture_asked ? pm.capture_asked : pm.amount);
}

Json ProviderRun::ledger_rows() const {
  const uint32_t limit = static_cast<uint32_t>(plan_.payments) * 8 + 64;
  return parse_json(call([&] { return client_->ledger_list(std::nullopt, 0, limit); }));
}

// What stayed UNKNOWN is settled: reconcile (the payments, and the
// operations it can look up), then an operation still UNKNOWN is asked
// again with its ref (its stored key and bytes, never a new one), as
// operation.h says. A key still held by a slow request answers "in use" for
// a while: pass again a little later, as an operator's cron job would.
void ProviderRun::settle(const pay::client& c) {
  ReconcileRun run;
  run.limit = static_cast<uint32_t>(plan_.payments) * 8 + 64;
  run.progress = false;
  run.body_for = [this](const std::string& order) -> std::optional<std::string> {
    const int i = demo_op_index(order);
    if (i < 0 || i >= static_cast<int>(payments_.size())) return std::nullopt;
    return demo_provider_body(p_, payments_[i].order, payments_[i].amount, payments_[i].hold);
  };
  auto unknown_ops = [&] {
    std::set<std::string> out;
    const Json rows = parse_json(call([&] { return c.ledger_list(std::string_view("UNKNOWN"), 0, run.limit); }));
    const cJSON* r = nullptr;
    cJSON_ArrayForEach(r, rows.get()) if (jstr(r, "operation") != "create") out.insert(jstr(r, "order_id"));
    return out;
  };
  for (int pass = 1; pass <= kSettlePasses; ++pass) {
    if (pass > 1) std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    ++settle_passes_;
    const std::set<std::string> before = unknown_ops();
    const std::string report = run_reconcile(c, run);
    std::vector<std::string> left;
    for (const std::string& id : unknown_ops()) left.push_back(id);
    // What left UNKNOWN meanwhile, but not what a notification settled
    // while reconcile ran: that is counted as the notification's.
    std::set<std::string> by_event;
    {
      const Json all = parse_json(call([&] { return c.ledger_list(std::nullopt, 0, run.limit); }));
      const cJSON* r = nullptr;
      cJSON_ArrayForEach(r, all.get()) if (settled_by_notification(r)) by_event.insert(jstr(r, "order_id"));
    }
    settled_by_reconcile_ += static_cast<long>(std::count_if(before.begin(), before.end(), [&](const std::string& id) {
      return std::find(left.begin(), left.end(), id) == left.end() && !by_event.count(id);
    }));
    std::atomic<long> by_ref{0};
    parallel(static_cast<int>(left.size()), plan_.threads, [&](int k) {
      Ask a;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = asks_.find(left[k]);
        if (it == asks_.end()) return;
        a = it->second;
      }
      const Call r = send(a, false);
      if (r.said == Said::result && r.outcome != pay::outcome::unknown && r.outcome != pay::outcome::in_progress) ++by_ref;
    });
    settled_by_same_ref_ += by_ref.load();
    if (exit_for_report(report) == kExitOk && left.size() == static_cast<size_t>(by_ref.load())) break;
    // A pass after the first that settled nothing will not be helped by a
    // third: what is left waits for the provider's lookup or webhook.
    const Json rep = parse_json(report);
    if (pass > 1 && by_ref.load() == 0 && before.size() == left.size() && jint(rep.get(), "SUCCEEDED") == 0 &&
        jint(rep.get(), "FAILED") == 0)
      break;
  }
}

// The simulator's truth, payment by payment, against the ledger's rows.
void ProviderRun::check_truth(const payretry_sim::Server& sim, cJSON* out) {
  const Json rows = ledger_rows();
  std::map<std::string, std::vector<const cJSON*>> ops_of;  // payment -> its operation rows
  std::map<std::string, const cJSON*> creates;
  const cJSON* r = nullptr;
  cJSON_ArrayForEach(r, rows.get()) {
    if (jstr(r, "operation") == "create") creates[jstr(r, "order_id")] = r;
    else ops_of[jstr(r, "parent_order_id")].push_back(r);
  }
  long dup_keys = 0, above = 0, succeeded_not_executed = 0, failed_but_moved = 0, unknown_key_moves = 0;
  long unknown_moved = 0, unknown_not_moved = 0, charged_failed = 0;
  std::map<std::string, long> moved_by_kind, movements_by_kind;
  std::vector<std::string> examples;
  auto example = [&](const std::string& s) {
    if (examples.size() < 8) examples.push_back(s);
  };
  const Json truth = parse_json(sim.truth_json());
  const cJSON* by_order = cJSON_GetObjectItemCaseSensitive(truth.get(), "by_order");
  for (const auto& [order, row] : creates) {
    const int64_t charges = jint(by_order, order.c_str());
    if (jstr(row, "state") == "FAILED" && charges > 0) {
      ++charged_failed;
      example(order + ": charged, reported FAILED");
    }
    if (charges == 0) continue;
    const Json t = parse_json(admin(sim.base_url() + "/__admin/truth?order_id=" + order, nullptr));
    std::map<std::string, const cJSON*> ledger_keys;  // operation key -> its row
    for (const cJSON* op : ops_of[order]) ledger_keys[jstr(op, "idempotency_key")] = op;
    std::set<std::string> executed, moved;
    const cJSON* payment = nullptr;
    cJSON_ArrayForEach(payment, cJSON_GetObjectItemCaseSensitive(t.get(), "payments")) {
      if (jint(payment, "refunded") > jint(payment, "captured")) {
        ++above;
        example(order + ": refunded " + std::to_string(jint(payment, "refunded")) + " of " +
                std::to_string(jint(payment, "captured")) + " captured");
      }
      const cJSON* op = nullptr;
      cJSON_ArrayForEach(op, cJSON_GetObjectItemCaseSensitive(payment, "operations")) {
        const std::string key = jstr(op, "key");
        executed.insert(key);
        if (jbool(op, "moved")) {
          moved.insert(key);
          ++moved_by_kind[jstr(op, "kind")];
        }
      }
      const cJSON* m = nullptr;
      cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(payment, "movements_by_key")) {
        const long n = static_cast<long>(m->valuedouble);
        if (n > 1) {
          ++dup_keys;
          example(order + ": key " + m->string + " moved money " + std::to_string(n) + " times");
        }
        if (!ledger_keys.count(m->string)) {
          ++unknown_key_moves;
          example(order + ": money moved under key '" + std::string(m->string) + "', which no ledger row holds");
        }
        const auto it = ledger_keys.find(m->string);
        if (it != ledger_keys.end()) movements_by_kind[jstr(it->second, "operation")] += n;
      }
    }
    for (const auto& [key, op] : ledger_keys) {
      const std::string st = jstr(op, "state"), id = jstr(op, "order_id");
      if (st == "SUCCEEDED" && !executed.count(key)) {
        ++succeeded_not_executed;
        example(id + ": SUCCEEDED, the simulator executed nothing under its key");
      }
      if (st == "FAILED" && moved.count(key)) {
        ++failed_but_moved;
        example(id + ": FAILED, the simulator moved money under its key");
      }
      if (st == "UNKNOWN") ++(moved.count(key) ? unknown_moved : unknown_not_moved);
    }
  }
  const cJSON* ops = cJSON_GetObjectItemCaseSensitive(truth.get(), "operations");
  cJSON* prov = cJSON_AddObjectToObject(out, "provider_truth");
  for (const char* k : {"captures", "refunds", "cancels", "money_movements", "duplicate_movements", "captured",
                        "refunded"})
    add_num(prov, k, static_cast<double>(jint(ops, k)));
  add_num(prov, "charges", static_cast<double>(jint(truth.get(), "charges")));
  add_num(prov, "duplicate_charges", static_cast<double>(jint(truth.get(), "duplicates")));
  cJSON* moved_kind = cJSON_AddObjectToObject(prov, "moved_by_kind");
  for (const char* k : kKinds) add_num(moved_kind, k, static_cast<double>(moved_by_kind[k]));

  cJSON* chk = cJSON_AddObjectToObject(out, "checks");
  add_num(chk, "duplicate_movements", static_cast<double>(std::max<int64_t>(jint(ops, "duplicate_movements"), dup_keys)));
  add_num(chk, "refunds_above_captured", static_cast<double>(above));
  add_num(chk, "succeeded_not_executed", static_cast<double>(succeeded_not_executed));
  add_num(chk, "failed_but_moved", static_cast<double>(failed_but_moved));
  add_num(chk, "moved_under_unknown_key", static_cast<double>(unknown_key_moves));
  add_num(chk, "over_refunds_sent", static_cast<double>(over_refunds_sent_));
  add_num(chk, "duplicate_charges", static_cast<double>(jint(truth.get(), "duplicates")));
  add_num(chk, "charged_payments_failed", static_cast<double>(charged_failed));
  // A call that failed proves nothing either way: the demo must not pass on it.
  long call_errors = create_call_errors_;
  for (const auto& [kind, k] : kinds_) call_errors += k.errors;
  add_num(chk, "failed_calls", static_cast<double>(call_errors));
  cJSON* unk = cJSON_AddObjectToObject(out, "still_unknown");
  add_num(unk, "moved", static_cast<double>(unknown_moved));
  add_num(unk, "not_moved", static_cast<double>(unknown_not_moved));
  if (!examples.empty()) {
    cJSON* list = cJSON_AddArrayToObject(out, "examples");
    for (const std::string& e : examples) cJSON_AddItemToArray(list, cJSON_CreateString(e.c_str()));
  }
  bool ok = true;
  const cJSON* c = nullptr;
  cJSON_ArrayForEach(c, chk) ok = ok && c->valuedouble == 0;
  cJSON_AddBoolToObject(out, "ok", ok);
}

Json ProviderRun::run() {
  const auto t0 = std::chrono::steady_clock::now();
  payretry_sim::Options so = demo_sim_options(plan_.seed);
  so.profile = p_.name;
  if (p_.name == "wechatpay_v3" || p_.name == "alipay") {
    write_demo_keys(dir_);
    so.keys_dir = dir_;
  }
  std::optional<DemoHookServer> hooks;
  std::string hook_key;
  if (p_.notifies) {
    hooks.emplace();
    hook_key = demo_hmac_key_hex();
    so.webhook_url = hooks->url() + "/" + p_.name;
    so.webhook_secret = hook_key;
  }
  payretry_sim::Server sim(so);
  const std::string ledger_url = plan_.ledger == "memory" ? "memory:" : "sqlite://" + dir_ + "/ledger.db";
  const pay::client client =
      open_client(demo_provider_config(p_, sim.base_url(), ledger_url, dir_, plan_.seed, hook_key), false);
  client_ = &client;
  // The endpoint lets go of the client before it goes away, however this returns.
  struct Release {
    std::optional<DemoHookServer>& h;
    ~Release() {
      if (h) h->set_client(nullptr);
    }
  } release{hooks};
  if (hooks) hooks->set_client(&client);
  if (!plan_.quiet)
    std::fprintf(stderr, "payretry demo --operations: %s, simulator on %s, %d payments\n", p_.name.c_str(),
                 sim.base_url().c_str(), plan_.payments);

  // Payments: a third only held where the provider's request can ask so.
  payments_.resize(static_cast<size_t>(plan_.payments));
  for (int i = 0; i < plan_.payments; ++i) {
    Payment& pm = payments_[i];
    pm.i = i;
    pm.order = demo_op_order(i);
    pm.amount = demo_op_amount(i);
    pm.hold = p_.holds && i % 3 == 0;
  }
  Tally tally;
  {
    Progress prog("submitted", plan_.payments, !plan_.quiet);
    DemoPlan dp;
    dp.payments = plan_.payments;
    dp.concurrency = plan_.concurrency;
    dp.seed = plan_.seed;
    SubmitHooks hooks;
    hooks.body = [this](int i) { return demo_provider_body(p_, payments_[i].order, payments_[i].amount, payments_[i].hold); };
    hooks.key_is_order = p_.key_is_order;
    hooks.order = [this](int i) { return payments_[i].order; };
    hooks.answered = [this](int i, const pay::result& r) { payments_[i].answer = std::string(r.body()); };
    submit_all(client, dp, tally, &prog, &hooks);
  }
  Json out(cJSON_CreateObject());
  cJSON_AddStringToObject(out.get(), "provider", p_.name.c_str());
  add_num(out.get(), "payments", plan_.payments);
  cJSON* cr = cJSON_AddObjectToObject(out.get(), "creates");
  add_num(cr, "held", static_cast<double>(std::count_if(payments_.begin(), payments_.end(), [](const Payment& p) { return p.hold; })));
  cJSON* first = cJSON_AddObjectToObject(cr, "answered");
  for (int o = PAY_OUTCOME_SUCCEEDED; o <= PAY_OUTCOME_IN_PROGRESS; ++o)
    add_num(first, pay_outcome_name(o), static_cast<double>(tally.outcomes[o].load()));
  add_num(first, "call_errors", static_cast<double>(tally.errors.load()));
  if (!tally.first_error.empty()) cJSON_AddStringToObject(first, "first_call_error", tally.first_error.c_str());
  create_call_errors_ = tally.errors.load();
  settle(client);

  // A payment that waits for its customer: the provider's lookup says where
  // it is now (WeChat Pay's create answers a prepay_id, paid once the
  // customer pays); a hold the customer has not approved yet (Mollie's
  // manual capture is open until then) is approved at the provider, as the
  // customer would at its checkout, and looked up again.
  parallel(plan_.payments, plan_.threads, [&](int i) {
    Payment& pm = payments_[i];
    try {
      const Json row = parse_json(client.ledger_get(pm.order));
      const cJSON* pr = cJSON_GetObjectItemCaseSensitive(row.get(), "payment");
      if (jstr(pr, "state") != "SUCCEEDED") return;
      const bool waits = jstr(pr, "money_state") == "awaiting_customer";
      if (!waits && !(p_.needs_target && pm.answer.empty())) return;
      pay::result q = client.query(pm.order);
      if (waits && q.money_state() == pay::money_state::awaiting_customer && pm.hold) {
        const std::string act = "{\"order_id\":\"" + pm.order + "\",\"action\":\"pay\"}";
        if (!admin(sim.base_url() + "/__admin/customer", &act).empty()) {
          std::lock_guard<std::mutex> lock(mu_);
          ++customer_paid_;
        }
        q = client.query(pm.order);
      }
      if (!q.body().empty()) pm.answer = std::string(q.body());
    } catch (const pay::error& e) {
      std::lock_guard<std::mutex> lock(mu_);
      KindCount& k = kinds_["lookup"];
      ++k.errors;
      if (k.first_error.empty()) k.first_error = pm.order + ": " + e.what();
    }
  });

  {
    Progress prog("payments operated on", plan_.payments, !plan_.quiet);
    parallel(plan_.payments, plan_.threads, [&](int i) {
      operate(payments_[i]);
      prog.add(1, 0);
    });
  }
  settle(client);
  if (hooks) {
    // The captures' notifications come on the simulator's sender thread:
    // wait until none has come for half a second (at most 5 s).
    long seen = -1;
    for (int waited = 0; waited < 5000 && seen != hooks->accepted() + hooks->refused(); waited += 500) {
      seen = hooks->accepted() + hooks->refused();
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
  parallel(plan_.payments, plan_.threads, [&](int i) { refund_captured(payments_[i]); });
  settle(client);

  // A kind no payment reached (WeChat Pay and Alipay hold nothing to
  // capture or cancel): asked once of a paid payment, which is refused
  // before any byte either way, to say whether payretry offers it at all.
  for (const pay::operation kind : {pay::operation::capture, pay::operation::cancel}) {
    if (kinds_[std::string(pay::to_string(kind))].refs) continue;
    for (const Payment& pm : payments_) {
      const Json row = payment_row(client, pm.order);
      const std::string money = row ? jstr(cJSON_GetObjectItemCaseSensitive(row.get(), "payment"), "money_state") : "";
      if (money != "paid" && money != "partly_refunded") continue;
      send({pm.order, kind, "probe", 0, demo_operation_body(p_, pm.amount), ""});
      break;
    }
  }

  // The ledger's word on every operation, after settling.
  const Json rows = ledger_rows();
  std::map<std::string, std::map<std::string, long>> final_by_kind;
  std::map<std::string, long> creates_final, by_notification;
  const cJSON* r = nullptr;
  cJSON_ArrayForEach(r, rows.get()) {
    if (jstr(r, "operation") == "create") {
      ++creates_final[jstr(r, "state")];
      continue;
    }
    ++final_by_kind[jstr(r, "operation")][jstr(r, "state")];
    if (settled_by_notification(r)) ++by_notification[jstr(r, "operation")];
  }
  cJSON* after = cJSON_AddObjectToObject(cr, "after_settling");
  for (const char* s : kRowStates) add_num(after, s, static_cast<double>(creates_final[s]));
  add_num(cr, "customer_approved", static_cast<double>(customer_paid_));

  cJSON* ops = cJSON_AddObjectToObject(out.get(), "operations");
  for (const char* kind : kKinds) {
    const KindCount& k = kinds_[kind];
    cJSON* o = cJSON_AddObjectToObject(ops, kind);
    if (!k.not_offered.empty()) cJSON_AddStringToObject(o, "not_offered", k.not_offered.c_str());
    add_num(o, "asked", static_cast<double>(k.refs));
    add_num(o, "calls", static_cast<double>(k.calls));
    cJSON* answered = cJSON_AddObjectToObject(o, "answered");
    for (const auto& [name, n] : k.outcomes) add_num(answered, name.c_str(), static_cast<double>(n));
    cJSON* fin = cJSON_AddObjectToObject(o, "after_settling");
    for (const char* s : kRowStates) add_num(fin, s, static_cast<double>(final_by_kind[kind][s]));
    add_num(o, "settled_by_notification", static_cast<double>(by_notification[kind]));
    if (std::string(kind) == "refund") {
      add_num(o, "asked_twice", static_cast<double>(k.asked_twice));
      add_num(o, "raced_by_two_threads", static_cast<double>(k.raced));
      add_num(o, "over_asks_refused_before_sending", static_cast<double>(over_refunds_refused_));
    }
    add_num(o, "call_errors", static_cast<double>(k.errors));
    if (!k.first_error.empty()) cJSON_AddStringToObject(o, "first_call_error", k.first_error.c_str());
  }
  if (kinds_.count("lookup") && kinds_["lookup"].errors) {
    add_num(out.get(), "lookup_errors", static_cast<double>(kinds_["lookup"].errors));
    cJSON_AddStringToObject(out.get(), "first_lookup_error", kinds_["lookup"].first_error.c_str());
  }
  if (holds_not_reached_)
    add_num(out.get(), "holds_without_an_authorization_id", static_cast<double>(holds_not_reached_));
  if (!refunds_not_reached_.empty()) {
    cJSON* nr = cJSON_AddObjectToObject(out.get(), "refunds_not_reached");
    for (const auto& [why, n] : refunds_not_reached_) add_num(nr, why.c_str(), static_cast<double>(n));
  }
  cJSON* st = cJSON_AddObjectToObject(out.get(), "settling");
  add_num(st, "passes", static_cast<double>(settle_passes_));
  add_num(st, "operations_by_reconcile", static_cast<double>(settled_by_reconcile_));
  add_num(st, "operations_by_same_ref", static_cast<double>(settled_by_same_ref_));
  long notified = 0;
  for (const auto& [kind, n] : by_notification) notified += n;
  add_num(st, "operations_by_notification", static_cast<double>(notified));
  if (hooks) {
    cJSON* n = cJSON_AddObjectToObject(out.get(), "notifications");
    add_num(n, "accepted", static_cast<double>(hooks->accepted()));
    add_num(n, "refused", static_cast<double>(hooks->refused()));
  }
  check_truth(sim, out.get());
  client_ = nullptr;
  sim.stop();
  add_num(out.get(), "elapsed_ms",
          static_cast<double>(
              std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()));
  return out;
}

std::string counts(const cJSON* o, std::initializer_list<const char*> keys, bool skip_zero = true) {
  std::string s;
  for (const char* k : keys) {
    if (!cJSON_GetObjectItemCaseSensitive(o, k) || (skip_zero && jint(o, k) == 0)) continue;
    if (!s.empty()) s += "  ";
    s += std::string(k) + " " + std::to_string(jint(o, k));
  }
  return s.empty() ? "-" : s;
}

}  // namespace

Json run_operations_demo(const OperationsPlan& plan, const std::string& dir) {
  Json doc(cJSON_CreateObject());
  cJSON_AddBoolToObject(doc.get(), "operations", true);
  add_num(doc.get(), "payments_per_provider", plan.payments);
  add_num(doc.get(), "seed", static_cast<double>(plan.seed));
  cJSON_AddStringToObject(doc.get(), "ledger", plan.ledger.c_str());
  cJSON* list = cJSON_AddArrayToObject(doc.get(), "providers");
  bool ok = true;
  for (const std::string& name : plan.providers) {
    const std::string sub = dir + "/" + name;
    if (mkdir(sub.c_str(), 0700) != 0) throw Failure(kExitLedger, "cannot create " + sub);
    ProviderRun run(plan, name, sub);
    Json one = run.run();
    ok = ok && jbool(one.get(), "ok");
    cJSON_AddItemToArray(list, one.release());
  }
  cJSON_AddBoolToObject(doc.get(), "ok", ok);
  return doc;
}

void print_operations_summary(const cJSON* d) {
  std::printf("\npayretry demo --operations: %lld payments per provider, seed %lld, %s ledger\n",
              static_cast<long long>(jint(d, "payments_per_provider")), static_cast<long long>(jint(d, "seed")),
              jstr(d, "ledger").c_str());
  const cJSON* pv = nullptr;
  cJSON_ArrayForEach(pv, cJSON_GetObjectItemCaseSensitive(d, "providers")) {
    const cJSON* cr = cJSON_GetObjectItemCaseSensitive(pv, "creates");
    const cJSON* prov = cJSON_GetObjectItemCaseSensitive(pv, "provider_truth");
    const cJSON* moved = cJSON_GetObjectItemCaseSensitive(prov, "moved_by_kind");
    const cJSON* ops = cJSON_GetObjectItemCaseSensitive(pv, "operations");
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f s", static_cast<double>(jint(pv, "elapsed_ms")) / 1000.0);
    std::printf("\n%s (%s)\n", jstr(pv, "provider").c_str(), secs);
    std::vector<std::pair<std::string, std::string>> fields = {
        {"payments", std::to_string(jint(pv, "payments")) + " (" + std::to_string(jint(cr, "held")) +
                         " asked to be held), after settling: " +
                         counts(cJSON_GetObjectItemCaseSensitive(cr, "after_settling"),
                                {"SUCCEEDED", "FAILED", "UNKNOWN", "IN_FLIGHT", "PENDING"})}};
    const cJSON* ans = cJSON_GetObjectItemCaseSensitive(cr, "answered");
    if (jint(ans, "call_errors"))
      fields.push_back({"failed create calls", std::to_string(jint(ans, "call_errors")) + ", first: " +
                                                   jstr(ans, "first_call_error")});
    if (const cJSON* n = cJSON_GetObjectItemCaseSensitive(pv, "notifications"); cJSON_IsObject(n))
      fields.push_back({"notifications applied", std::to_string(jint(n, "accepted")) + " accepted, " +
                                                     std::to_string(jint(n, "refused")) + " refused"});
    if (jint(cr, "customer_approved"))
      fields.push_back({"approved by the customer", std::to_string(jint(cr, "customer_approved")) + " holds"});
    print_fields(fields);
    Rows rows;
    for (const char* kind : kKinds) {
      const cJSON* o = cJSON_GetObjectItemCaseSensitive(ops, kind);
      if (const cJSON* no = cJSON_GetObjectItemCaseSensitive(o, "not_offered"); cJSON_IsString(no)) {
        rows.push_back({kind, "not offered by payretry for " + jstr(pv, "provider"), "", "", ""});
        continue;
      }
      if (jint(o, "asked") == 0) {
      rows.push_back({kind, "none: no payment where it applies", "", "", ""});
      continue;
    }
    std::string asked = std::to_string(jint(o, "asked"));
      if (std::string(kind) == "refund")
        asked += " (" + std::to_string(jint(o, "asked_twice")) + " asked twice, " +
                 std::to_string(jint(o, "raced_by_two_threads")) + " from two threads; " +
                 std::to_string(jint(o, "over_asks_refused_before_sending")) + " too large, refused unsent)";
      rows.push_back({kind, asked,
                      counts(cJSON_GetObjectItemCaseSensitive(o, "answered"), {"SUCCEEDED", "FAILED", "UNKNOWN", "IN_PROGRESS"}),
                      counts(cJSON_GetObjectItemCaseSensitive(o, "after_settling"), {"SUCCEEDED", "FAILED", "UNKNOWN", "IN_FLIGHT"}),
                      std::to_string(jint(moved, kind))});
    }
    print_table({"operation", "asked", "answered", "after settling", "provider moved"}, rows);
    for (const char* kind : kKinds) {
      const cJSON* o = cJSON_GetObjectItemCaseSensitive(ops, kind);
      if (const cJSON* no = cJSON_GetObjectItemCaseSensitive(o, "not_offered"); cJSON_IsString(no))
        std::printf("  %s: %s\n", kind, no->valuestring);
      if (jint(o, "call_errors"))
        std::printf("  %s: %lld failed calls, first: %s\n", kind, static_cast<long long>(jint(o, "call_errors")),
                    jstr(o, "first_call_error").c_str());
    }
    if (const cJSON* nr = cJSON_GetObjectItemCaseSensitive(pv, "refunds_not_reached"); cJSON_IsObject(nr)) {
      const cJSON* e = nullptr;
      cJSON_ArrayForEach(e, nr) std::printf("  refunds not asked: %lld payments, %s\n", static_cast<long long>(e->valuedouble), e->string);
    }
    if (jint(pv, "holds_without_an_authorization_id"))
      std::printf("  holds neither captured nor canceled: %lld, no authorization id in the provider's answers\n",
                  static_cast<long long>(jint(pv, "holds_without_an_authorization_id")));
    const cJSON* st = cJSON_GetObjectItemCaseSensitive(pv, "settling");
    const cJSON* unk = cJSON_GetObjectItemCaseSensitive(pv, "still_unknown");
    const cJSON* chk = cJSON_GetObjectItemCaseSensitive(pv, "checks");
    print_fields({
        {"settled", std::to_string(jint(st, "operations_by_notification")) + " operations by the provider's notification, " +
                        std::to_string(jint(st, "operations_by_reconcile")) + " by reconcile, " +
                        std::to_string(jint(st, "operations_by_same_ref")) + " by asking the same ref again; still UNKNOWN: " +
                        std::to_string(jint(unk, "moved")) + " that moved money, " + std::to_string(jint(unk, "not_moved")) +
                        " that did not"},
        {"provider's count", counts(prov, {"captures", "refunds", "cancels"}, false) + ", money movements " +
                                 std::to_string(jint(prov, "money_movements")) + " (captured " +
                                 std::to_string(jint(prov, "captured")) + ", refunded " +
                                 std::to_string(jint(prov, "refunded")) + ")"},
        {"checks (each must be 0)",
         counts(chk, {"duplicate_movements", "refunds_above_captured", "succeeded_not_executed", "failed_but_moved",
                      "moved_under_unknown_key", "over_refunds_sent", "duplicate_charges", "charged_payments_failed",
                      "failed_calls"},
                false)},
    });
    const cJSON* ex = nullptr;
    cJSON_ArrayForEach(ex, cJSON_GetObjectItemCaseSensitive(pv, "examples")) std::printf("  ! %s\n", ex->valuestring);
  }
  std::printf("\n%s\n", jbool(d, "ok") ? "OK: every operation key moved money at most once, no refunds above what was "
                                         "captured, and every SUCCEEDED or FAILED operation agrees with the provider."
                                       : "BROKEN: the provider's count of money movements contradicts the ledger (see "
                                         "the checks above).");
}

}  // namespace cli
