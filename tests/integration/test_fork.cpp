// A client used across fork() (gunicorn's preload, a worker pool): the child
// has none of the parent's threads, so the concurrent engine it would wait on
// is gone, and it shares the parent's ledger connections. Every call on the
// parent's client fails at once with a clear error; a client made in the
// child works.
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "sim_fixture.hpp"

namespace payretry_test {
namespace {

class Fork : public SimTest {};

// Runs `child` in a forked process with a watchdog; returns its exit code
// (or 100 + signal).
template <class F>
int in_child(F child) {
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(20);  // a hang in the child is a failure, not a stuck test
    _exit(child());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

void noop_done(int, pay_result* r, const char*, void*) { pay_result_free(r); }

void count_done(int, pay_result* r, const char*, void* n) {
  pay_result_free(r);
  static_cast<std::atomic<int>*>(n)->fetch_add(1);
}

// True when every thread of this process but the caller is asleep ('S' in
// /proc/self/task/<tid>/stat). The child of a fork inherits the state of every
// lock other threads held at that instant. glibc's malloc takes its own locks
// around fork(), but GCC 12's AddressSanitizer has no fork handler for its
// allocator: a child forked while the engine or the simulator is inside malloc
// waits for a lock no thread of its own will release (an ASan build hung here
// about once in 10 runs under load). Forking while the other threads sleep is
// what a pre-forking server does too: it forks from an idle master.
bool other_threads_asleep() {
  const std::string self = std::to_string(gettid());
  DIR* d = opendir("/proc/self/task");
  if (!d) return false;
  bool asleep = true;
  while (const dirent* e = readdir(d)) {
    const std::string tid = e->d_name;
    if (tid == "." || tid == ".." || tid == self) continue;
    std::ifstream f("/proc/self/task/" + tid + "/stat");
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string stat = ss.str();
    // The state follows the name, which may hold spaces and ')'. A thread that
    // ended between the listing and the read counts as awake: look again.
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'S') asleep = false;
  }
  closedir(d);
  return asleep;
}

// Asks `ready` every `step` for up to 10 s; true once it says yes.
template <class F>
bool poll_until(F ready, std::chrono::milliseconds step) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < give_up) {
    if (ready()) return true;
    std::this_thread::sleep_for(step);
  }
  return false;
}

TEST_F(Fork, a_forked_child_gets_a_clear_error_from_the_parents_client_and_a_new_client_works) {
  auto parent = client(config("stripe", "", R"("ledger":"memory:")"));
  // Start the parent's engine thread: this is what a child would wait on forever.
  auto first = submit(parent.get(), "fork-parent");
  const std::string body = body_for("fork-parent-async");
  std::atomic<int> answered{0};
  ASSERT_EQ(pay_submit_async(parent.get(), "fork-parent-async", body.data(), body.size(), nullptr, count_done, &answered),
            PAY_OK);
  // Fork from an idle parent: the engine thread is alive (the child must not
  // wait on it) but neither it nor the simulator is inside the allocator.
  ASSERT_TRUE(poll_until([&] { return answered.load() == 1; }, std::chrono::milliseconds(5)));
  // Asleep on two looks 20 ms apart; an engine with nothing in flight that
  // never sleeps would be a bug of its own.
  int quiet = 0;
  ASSERT_TRUE(poll_until([&] { return (quiet = other_threads_asleep() ? quiet + 1 : 0) == 2; },
                         std::chrono::milliseconds(20)))
      << "a thread of the parent kept running with nothing in flight";

  const std::string cfg = config("stripe", "", R"("ledger":"memory:")");
  const int code = in_child([&]() -> int {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string b = body_for("fork-child");
    // 1: the async path refuses instead of queueing on a thread that is gone.
    if (pay_submit_async(parent.get(), "fork-child", b.data(), b.size(), nullptr, noop_done, nullptr) != PAY_EINVALID)
      return 1;
    if (!std::strstr(pay_error_last()->message, "fork")) return 2;
    // 2: so does every other call, and nothing is sent.
    pay_result* r = nullptr;
    if (pay_submit(&r, parent.get(), "fork-child", b.data(), b.size(), nullptr) != PAY_EINVALID || r) return 3;
    pay_batch_item item{};
    item.order_id = "fork-child";
    item.body = b.data();
    item.body_len = b.size();
    if (pay_submit_batch(&item, 1, parent.get(), nullptr) != PAY_EINVALID) return 4;
    if (pay_query(&r, parent.get(), "fork-parent") != PAY_EINVALID) return 5;
    // 3: freeing it returns (it does not wait for the parent's thread).
    pay_client_free(parent.get());
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(2)) return 6;
    // 4: a client made here works.
    pay_client* mine = nullptr;
    if (pay_client_new(&mine, cfg.c_str(), nullptr) != PAY_OK) return 7;
    if (pay_submit(&r, mine, "fork-child", b.data(), b.size(), nullptr) != PAY_OK) return 8;
    const bool ok = pay_result_outcome(r) == PAY_OUTCOME_SUCCEEDED;
    pay_result_free(r);
    pay_client_free(mine);
    return ok ? 0 : 9;
  });
  EXPECT_EQ(code, 0) << "see the numbered steps in the child";
  EXPECT_EQ(sim_->charges_for("fork-child"), 1);
  EXPECT_EQ(sim_->charges_for("fork-parent"), 1);
}

}  // namespace
}  // namespace payretry_test
