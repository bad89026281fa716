// Faults of the ledger itself, on a real (tiny) filesystem: a full disk and a
// read-only one. Each is a clear PAY_ELEDGER; nothing reaches the provider
// without a committed record; nothing committed is lost.
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "sim_fixture.hpp"

namespace payretry_test {
namespace {

class LedgerFaults : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    char tmpl[] = "/tmp/payretry-fs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // A 320 KiB filesystem of its own: it fills up after a few hundred payments.
    if (mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=320k") != 0) {
      rmdir(dir_.c_str());
      dir_.clear();
      GTEST_SKIP() << "cannot mount a tmpfs here (needs CAP_SYS_ADMIN): " << std::strerror(errno);
    }
  }
  void TearDown() override {
    SimTest::TearDown();
    if (!dir_.empty()) {
      umount(dir_.c_str());
      rmdir(dir_.c_str());
    }
  }
  std::string cfg() { return config("stripe", "", R"("ledger":"sqlite://)" + dir_ + R"(/payments.db")"); }
  std::string dir_;
};

TEST_F(LedgerFaults, FullDiskIsAClearErrorAndNothingIsSentWithoutARecord) {
  auto c = client(cfg());
  int ok = 0, ledger_errors = 0;
  std::string message;
  for (int i = 0; i < 3000 && ledger_errors < 20; ++i) {
    const std::string order = "full-" + std::to_string(i) + std::string(40, 'x');
    const std::string body = body_for(order);
    pay_result* r = nullptr;
    const int rc = pay_submit(&r, c.get(), order.c_str(), body.data(), body.size(), nullptr);
    if (rc == PAY_OK) {
      ++ok;
    } else {
      ASSERT_EQ(rc, PAY_ELEDGER) << pay_error_last()->message;
      ++ledger_errors;
      message = pay_error_last()->message;
    }
    pay_result_free(r);
  }
  std::printf("full disk: %d payments settled, then %d ledger errors: %s\n", ok, ledger_errors, message.c_str());
  ASSERT_GT(ok, 0);
  ASSERT_GT(ledger_errors, 0) << "the filesystem never filled up";
  EXPECT_NE(message.find("full"), std::string::npos) << message;
  // Every order the provider saw has a committed row; every SUCCEEDED one
  // is still there after the disk filled.
  int charged = 0;
  for (int i = 0; i < ok + ledger_errors; ++i) {
    const std::string order = "full-" + std::to_string(i) + std::string(40, 'x');
    if (sim_->charges_for(order) == 0) continue;
    ++charged;
    pay_buf b = {nullptr, 0};
    EXPECT_EQ(pay_ledger_get(&b, c.get(), order.c_str()), PAY_OK) << order << ": " << pay_error_last()->message;
    pay_buf_dispose(&b);
  }
  EXPECT_GE(charged, ok);
  EXPECT_EQ(sim_->duplicate_orders(), 0);
}

TEST_F(LedgerFaults, ReadOnlyLedgerIsAClearErrorAndNothingIsSent) {
  {
    auto c = client(cfg());
    auto r = submit(c.get(), "ro-before");
    ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_SUCCEEDED);
  }
  ASSERT_EQ(mount("tmpfs", dir_.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, "size=320k"), 0) << std::strerror(errno);
  const long before = sim_->requests();
  pay_client* raw = nullptr;
  const int rc = pay_client_new(&raw, cfg().c_str(), nullptr);
  if (rc == PAY_OK) {
    ClientPtr c(raw);
    const std::string body = body_for("ro-after");
    pay_result* r = nullptr;
    EXPECT_EQ(pay_submit(&r, c.get(), "ro-after", body.data(), body.size(), nullptr), PAY_ELEDGER);
    EXPECT_EQ(r, nullptr);
  } else {
    EXPECT_EQ(rc, PAY_ELEDGER);
  }
  const std::string msg = pay_error_last()->message;
  EXPECT_TRUE(msg.find("read-only") != std::string::npos || msg.find("cannot be opened") != std::string::npos) << msg;
  EXPECT_EQ(sim_->requests(), before);
  ASSERT_EQ(mount("tmpfs", dir_.c_str(), "tmpfs", MS_REMOUNT, "size=320k"), 0);
  // Nothing committed was lost.
  auto c = client(cfg());
  auto again = submit(c.get(), "ro-before");
  EXPECT_EQ(pay_result_from_ledger(again.get()), 1);
  EXPECT_EQ(pay_result_outcome(again.get()), PAY_OUTCOME_SUCCEEDED);
}

}  // namespace
}  // namespace payretry_test
