// payretry demo: the whole idea in one command. An embedded simulator with a
// realistic fault mix, a ledger in a temporary folder, thousands of payments
// from many threads, reconcile, then the provider's own count: duplicate
// charges and charged orders reported FAILED must both be zero.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "client_setup.hpp"
#include "commands.hpp"
#include "demo_operations.hpp"
#include "demo_plan.hpp"
#include "demo_providers.hpp"
#include "demo_summary.hpp"
#include "output.hpp"
#include "progress.hpp"
#include "reconcile_run.hpp"
#include "server.hpp"

namespace cli {
namespace {

const char kHelp[] =
    "usage: payretry demo [--payments N] [--concurrency N] [--seed N] [--crash]\n"
    "                     [--ledger sqlite|memory] [--keep] [--quiet] [--json]\n"
    "       payretry demo --operations [--provider NAME] [--payments N] [--seed N] ...\n"
    "\n"
    "Starts the bundled provider simulator on a free loopback port with a realistic\n"
    "fault mix (lost responses, resets, slow answers past the attempt timeout, 429,\n"
    "503, 500 after charging, malformed 2xx, declines), creates a SQLite ledger in a\n"
    "temporary folder, submits the payments concurrently through the real HTTP path,\n"
    "reconciles what stayed UNKNOWN, and checks the provider's truth: no order charged\n"
    "twice, and no charged order reported FAILED.\n"
    "\n"
    "  --payments N      payments to submit (default 2000)\n"
    "  --concurrency N   payments in flight at once on the client's engine thread\n"
    "                    (default 256)\n"
    "  --seed N          the simulator's fault schedule and the keys (default 42)\n"
    "  --crash           submit from a worker process, SIGKILL it midway, restart it,\n"
    "                    and show its payments settle without a duplicate (sqlite only)\n"
    "  --ledger L        sqlite (default) or memory\n"
    "  --keep            keep the temporary folder (ledger, config) and print its path\n"
    "  --quiet           no progress display on stderr\n"
    "  --json            the summary as one JSON document\n"
    "  --operations      captures, partial refunds and cancels too, for each built-in\n"
    "                    provider in turn (its own simulator and ledger): payments, a\n"
    "                    third of them only held where the provider can hold; holds\n"
    "                    captured in part or canceled; two partial refunds of each paid\n"
    "                    payment, some asked twice with the same ref, some from two\n"
    "                    threads at once, some followed by one too large (refused before\n"
    "                    any byte); what stayed UNKNOWN settled; then the simulator's count\n"
    "                    of money movements per operation key. An operation payretry does\n"
    "                    not send for a provider is shown as not offered. --payments is per\n"
    "                    provider (default 200)\n"
    "  --provider NAME   with --operations: only this provider (stripe, paypal,\n"
    "                    checkout_com, adyen, square, mollie, wechatpay_v3, alipay)\n"
    "\n"
    "Exit 0 when both counts are zero, 9 when either is not (that must never happen).\n"
    "With --operations: 9 when any operation key moved money twice, refunds exceed what\n"
    "was captured, or an operation's SUCCEEDED or FAILED contradicts the provider.\n"
    "\n"
    "Examples:\n"
    "  payretry demo\n"
    "  payretry demo --payments 300 --seed 7 --json | jq .provider\n"
    "  payretry demo --crash --payments 400\n"
    "  payretry demo --operations --provider paypal --payments 50\n";

// The demo's own folder; removed at the end unless --keep.
class TempDir {
 public:
  explicit TempDir(bool keep) : keep_(keep) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/payretry-demo-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw Failure(kExitLedger, "cannot create a temporary folder in " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (keep_) std::fprintf(stderr, "payretry: kept %s\n", path_.c_str());
    else std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  bool keep_;
  std::string path_;
};

constexpr int kReconcilePasses = 3;

// ---- the crash worker, as a child process ------------------------------------

struct Child {
  pid_t pid = -1;
  int out = -1;  // its stdout
};

Child spawn_worker(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  static char self[] = "/proc/self/exe";
  argv.push_back(self);
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Failure(kExitInternal, "pipe failed");
  const pid_t pid = fork();
  if (pid < 0) throw Failure(kExitInternal, "fork failed");
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    dup2(fds[1], STDOUT_FILENO);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

std::string read_all(int fd) {
  std::string s;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) s.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  close(fd);
  return s;
}

// order -> the row's state, and (when `money` is given) its money state,
// from one read of the ledger.
std::map<std::string, std::string> ledger_states(const pay::client& c, int payments,
                                                 std::map<std::string, std::string>* money = nullptr) {
  std::map<std::string, std::string> states;
  const Json rows = parse_json(call([&] { return c.ledger_list(std::nullopt, 0, static_cast<uint32_t>(payments) + 16); }));
  const cJSON* r = nullptr;
  cJSON_ArrayForEach(r, rows.get()) {
    states[jstr(r, "order_id")] = jstr(r, "state");
    if (money) (*money)[jstr(r, "order_id")] = jstr(r, "money_state");
  }
  return states;
}

long count_settled(const std::map<std::string, std::string>& states) {
  long n = 0;
  for (const auto& [order, st] : states) n += st == "SUCCEEDED" || st == "FAILED" || st == "UNKNOWN";
  return n;
}

long count_state(const std::map<std::string, std::string>& states, const std::string& s) {
  long n = 0;
  for (const auto& [order, st] : states) n += st == s;
  return n;
}

// Kills a worker midway, restarts it, and records what the dead one left.
void run_crash(const pay::client& client, const DemoPlan& plan, const std::string& config_path, bool quiet,
               DemoFacts& f) {
  const std::vector<std::string> args = {"__demo-worker", "--config", config_path,
                                         "--payments", std::to_string(plan.payments),
                                         "--concurrency", std::to_string(plan.concurrency),
                                         "--seed", std::to_string(plan.seed)};
  const long kill_at = std::max(1, plan.payments / 2);
  f.crash.kill_after_created = kill_at;
  {
    Progress p("created by the first worker", plan.payments, !quiet);
    Child c = spawn_worker(args);
    int status = 0;
    for (;;) {
      const auto states = ledger_states(client, plan.payments);
      p.set(static_cast<long>(states.size()), count_state(states, "UNKNOWN"));
      if (static_cast<long>(states.size()) >= kill_at) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, &status, 0);
        f.crash.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
        break;
      }
      if (waitpid(c.pid, &status, WNOHANG) == c.pid) break;  // finished before the kill point
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    close(c.out);
    p.finish();
  }
  const auto left = ledger_states(client, plan.payments);
  f.crash.created_at_kill = static_cast<long>(left.size());
  for (const char* s : {"PENDING", "IN_FLIGHT", "SUCCEEDED", "FAILED", "UNKNOWN"})
    f.crash.states_at_kill[s] = count_state(left, s);
  for (const auto& [order, st] : left)
    if (st == "IN_FLIGHT" || st == "PENDING" || st == "UNKNOWN") f.crash.left_unsettled.insert(order);

  Progress p("settled after the restart", plan.payments, !quiet);
  Child c = spawn_worker(args);
  int status = 0;
  while (waitpid(c.pid, &status, WNOHANG) != c.pid) {
    const auto states = ledger_states(client, plan.payments);
    p.set(count_settled(states), count_state(states, "UNKNOWN"));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string out = read_all(c.out);
  p.finish();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Failure(kExitInternal, "the restarted demo worker failed (status " + std::to_string(status) + ")");
  const Json doc = parse_json(out);
  const cJSON* outcomes = cJSON_GetObjectItemCaseSensitive(doc.get(), "outcomes");
  for (int o = PAY_OUTCOME_SUCCEEDED; o <= PAY_OUTCOME_IN_PROGRESS; ++o)
    f.before[pay_outcome_name(o)] = jint(outcomes, pay_outcome_name(o));
  f.call_errors = jint(doc.get(), "errors");
  f.first_error = jstr(doc.get(), "first_error");
  char* stats = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(doc.get(), "stats"));
  if (stats) {
    f.worker_stats = stats;
    cJSON_free(stats);
  }
}

int demo_operations(const Args& a) {
  if (a.has("--crash")) throw usage_error("--crash is not for --operations");
  OperationsPlan plan;
  plan.payments = static_cast<int>(a.integer("--payments", 1, 100000, 200));
  plan.concurrency = static_cast<int>(a.integer("--concurrency", 1, 4096, 64));
  plan.seed = static_cast<uint64_t>(a.integer("--seed", 0, (INT64_C(1) << 53) - 1, 42));
  plan.ledger = a.value("--ledger").value_or("sqlite");
  if (plan.ledger != "sqlite" && plan.ledger != "memory")
    throw usage_error("--ledger wants sqlite or memory, got '" + plan.ledger + "'");
  if (auto p = a.value("--provider")) {
    demo_provider(*p);  // a name it does not know is a usage error
    plan.providers = {*p};
  } else {
    plan.providers = demo_provider_names();
  }
  plan.quiet = a.has("--quiet");
  TempDir dir(a.has("--keep"));
  const Json summary = run_operations_demo(plan, dir.path());
  if (a.has("--json")) print_json(summary.get());
  else print_operations_summary(summary.get());
  return jbool(summary.get(), "ok") ? kExitOk : kExitBroken;
}

}  // namespace

int cmd_demo(const Argv& argv) {
  ArgSpec spec;
  spec.valued.insert({"--payments", "--concurrency", "--seed", "--ledger", "--provider"});
  spec.flags.insert({"--crash", "--json", "--keep", "--quiet", "--help", "--operations"});
  const Args a = Args::parse(argv, spec);
  if (a.has("--help")) {
    std::printf("%s\n%s", kHelp, kExitCodesHelp);
    return kExitOk;
  }
  a.want_positional({});
  if (a.has("--operations")) return demo_operations(a);
  if (a.has("--provider")) throw usage_error("--provider is for --operations (the default demo plays Stripe)");
  DemoPlan plan;
  plan.payments = static_cast<int>(a.integer("--payments", 1, 100000, 2000));
  plan.concurrency = static_cast<int>(a.integer("--concurrency", 1, 4096, 256));
  plan.seed = static_cast<uint64_t>(a.integer("--seed", 0, (INT64_C(1) << 53) - 1, 42));
  plan.crash = a.has("--crash");
  const std::string ledger = a.value("--ledger").value_or("sqlite");
  if (ledger != "sqlite" && ledger != "memory") throw usage_error("--ledger wants sqlite or memory, got '" + ledger + "'");
  if (plan.crash && ledger == "memory")
    throw usage_error("--crash needs --ledger sqlite: a memory ledger dies with the worker");
  const bool quiet = a.has("--quiet");
  const auto t0 = std::chrono::steady_clock::now();

  TempDir dir(a.has("--keep"));
  payretry_sim::Server sim(demo_sim_options(plan.seed));
  const std::string ledger_url = ledger == "memory" ? "memory:" : "sqlite://" + dir.path() + "/ledger.db";
  const std::string config = demo_config(sim.base_url(), ledger_url, plan);
  if (!quiet)
    std::fprintf(stderr, "payretry demo: simulator on %s, ledger %s, %d payments from %d %s\n",
                 sim.base_url().c_str(), ledger == "memory" ? "in memory" : ledger_url.c_str(), plan.payments,
                 plan.concurrency, plan.crash ? "in flight in a worker process (killed midway)" : "in flight");
  const pay::client client = open_client(config, false);

  DemoFacts f;
  f.plan = plan;
  f.ledger = ledger;
  if (plan.crash) {
    const std::string path = dir.path() + "/config.json";
    std::ofstream(path) << config;
    run_crash(client, plan, path, quiet, f);
  } else {
    Tally tally;
    {
      Progress p("submitted", plan.payments, !quiet);
      submit_all(client, plan, tally, &p);
    }
    for (int o = PAY_OUTCOME_SUCCEEDED; o <= PAY_OUTCOME_IN_PROGRESS; ++o)
      f.before[pay_outcome_name(o)] = tally.outcomes[o].load();
    f.call_errors = tally.errors.load();
    f.first_error = tally.first_error;
  }
  f.submit_stats = call([&] { return client.stats(); });
  if (!plan.crash) f.submit_metrics = call([&] { return client.metrics(); });

  ReconcileRun run;
  run.limit = static_cast<uint32_t>(plan.payments) + 16;
  run.progress = !quiet;
  run.body_for = [](const std::string& order) -> std::optional<std::string> {
    const int i = demo_index(order);
    if (i < 0) return std::nullopt;
    return demo_body(i);
  };
  // A payment whose key the provider still holds (a slow request) answers
  // 409 for a while: like an operator's cron job, pass again a little later.
  for (int pass = 1; pass <= kReconcilePasses; ++pass) {
    if (pass > 1) std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    f.reconcile_reports.push_back(run_reconcile(client, run));
    if (exit_for_report(f.reconcile_reports.back()) == kExitOk) break;
  }
  f.client_stats = call([&] { return client.stats(); });
  f.final_states = ledger_states(client, plan.payments, &f.final_money);
  f.truth = sim.truth_json();
  f.provider_requests = sim.requests();
  f.elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  sim.stop();

  const Json summary = build_summary(f);
  if (a.has("--json")) print_json(summary.get());
  else print_summary(summary.get());
  return jbool(summary.get(), "ok") ? kExitOk : kExitBroken;
}

}  // namespace cli
