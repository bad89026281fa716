// A client used across fork() (gunicorn's preload, a worker pool): the child
// has none of the parent's threads, so the concurrent engine it would wait on
// is gone, and it shares the parent's ledger connections. Every call on the
// parent's client fails at once with a clear error; a client made in the
// child works.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

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

TEST_F(Fork, a_forked_child_gets_a_clear_error_from_the_parents_client_and_a_new_client_works) {
  auto parent = client(config("stripe", "", R"("ledger":"memory:")"));
  // Start the parent's engine thread: this is what a child would wait on forever.
  auto first = submit(parent.get(), "fork-parent");
  const std::string body = body_for("fork-parent-async");
  ASSERT_EQ(pay_submit_async(parent.get(), "fork-parent-async", body.data(), body.size(), nullptr, noop_done, nullptr),
            PAY_OK);

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
