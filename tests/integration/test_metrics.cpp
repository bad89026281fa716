// pay_client_metrics: Prometheus text that counts payments once per run
// (not ledger re-reads, not lookups), in both drivers, with well-formed
// families and histograms; pay_client_reopen_log for log rotation.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>

#include "sim_fixture.hpp"

namespace payretry_test {
namespace {

std::string metrics_of(pay_client* c) {
  pay_buf b{nullptr, 0};
  EXPECT_EQ(pay_client_metrics(&b, c), PAY_OK) << pay_error_last()->message;
  std::string s(b.ptr ? b.ptr : "", b.size);
  pay_buf_dispose(&b);
  return s;
}

// Every sample of `name` whose labels contain `labels` (e.g. outcome="SUCCEEDED"), summed.
double sample(const std::string& text, const std::string& name, const std::string& labels = "") {
  double total = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t sp = line.rfind(' ');
    const std::string series = line.substr(0, sp);
    const std::string metric = series.substr(0, series.find('{'));
    if (metric != name || series.find(labels) == std::string::npos) continue;
    total += std::stod(line.substr(sp + 1));
  }
  return total;
}

// The exposition format's shape: each family has one HELP and one TYPE line
// before its samples, every sample line is `name{k="v",...} number`, and
// histogram buckets are cumulative with +Inf equal to _count.
void expect_well_formed(const std::string& text) {
  const std::regex sample_line(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? -?[0-9.e+]+$)");
  std::set<std::string> typed;
  std::map<std::string, std::string> types;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      EXPECT_TRUE(typed.insert(name).second) << "two TYPE lines for " << name;
      types[name] = type;
      continue;
    }
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, sample_line)) << line;
    std::string family = m[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (!types.count(family) && family.size() > std::strlen(suffix) &&
          family.compare(family.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
        family.resize(family.size() - std::strlen(suffix));
    EXPECT_TRUE(types.count(family)) << "sample before its TYPE: " << line;
  }
  for (const auto& [name, type] : types) {
    if (type != "histogram") continue;
    double last = 0;
    std::istringstream h(text);
    for (std::string line; std::getline(h, line);) {
      if (line.rfind(name + "_bucket{", 0) != 0) continue;
      const double v = std::stod(line.substr(line.rfind(' ') + 1));
      EXPECT_GE(v, last) << line;
      last = v;
    }
    EXPECT_EQ(sample(text, name + "_bucket", "le=\"+Inf\""), sample(text, name + "_count")) << name;
  }
}

class Metrics : public SimTest {};

TEST_F(Metrics, PaymentsCountOncePerRunInBothDriversAndReadsAreCountedApart) {
  auto c = client(config("stripe", "", R"("ledger":"memory:","log":{"level":"error"})"));
  sim_->script("m-503", {"503"});
  sim_->script("m-lost", {"lost_response", "lost_response", "lost_response", "lost_response"});
  for (const char* order : {"m-1", "m-503", "m-lost"}) submit(c.get(), order);
  // The concurrent engine.
  const std::string body = body_for("m-async");
  pay_pending* p = nullptr;
  ASSERT_EQ(pay_submit_start(&p, c.get(), "m-async", body.data(), body.size(), nullptr), PAY_OK);
  pay_result* r = nullptr;
  ASSERT_EQ(pay_pending_wait(&r, p, -1), PAY_OK);
  pay_result_free(r);
  pay_pending_free(p);

  std::string text = metrics_of(c.get());
  expect_well_formed(text);
  EXPECT_EQ(sample(text, "payretry_payments_total", "outcome=\"SUCCEEDED\""), 3) << text;
  EXPECT_EQ(sample(text, "payretry_payments_total", "outcome=\"UNKNOWN\",delivery=\"maybe_processed\""), 1) << text;
  EXPECT_EQ(sample(text, "payretry_payments_total"), 4);
  const double attempts = sample(text, "payretry_attempts_started_total");
  EXPECT_EQ(attempts, 1 + 2 + 4 + 1);
  EXPECT_EQ(sample(text, "payretry_attempts_total"), attempts);
  EXPECT_EQ(sample(text, "payretry_attempts_total", "verdict=\"retry\",reason=\"http_503\""), 1) << text;
  EXPECT_EQ(sample(text, "payretry_attempt_duration_seconds_count"), attempts);
  EXPECT_EQ(sample(text, "payretry_payment_duration_seconds_count"), 4);
  EXPECT_EQ(sample(text, "payretry_retries_total", "reason=\"http_503\""), 1);
  EXPECT_EQ(sample(text, "payretry_in_flight_payments"), 0);
  EXPECT_GE(sample(text, "payretry_connections_opened_total"), 1);  // the blocking driver's count too
  EXPECT_GT(sample(text, "payretry_ledger_commit_duration_seconds_count"), 0);
  EXPECT_EQ(sample(text, "payretry_retry_budget_capacity"), 500);

  // A submission of a settled order and a lookup are reads, not payments.
  submit(c.get(), "m-1");
  pay_result* q = nullptr;
  ASSERT_EQ(pay_query(&q, c.get(), "m-1"), PAY_OK);
  pay_result_free(q);
  text = metrics_of(c.get());
  EXPECT_EQ(sample(text, "payretry_payments_total"), 4);
  EXPECT_EQ(sample(text, "payretry_ledger_answers_total", "outcome=\"SUCCEEDED\""), 1);
  // Stripe looks up by provider id: the lost payment has none, so no lookup is sent for it; a
  // query of it answers from what the ledger knows. pay_query of m-lost is a settlement attempt.
  ASSERT_EQ(pay_query(&q, c.get(), "m-lost"), PAY_OK);
  pay_result_free(q);
  text = metrics_of(c.get());
  EXPECT_EQ(sample(text, "payretry_payments_total"), 4);

  // The JSON counters say the same about payments.
  pay_buf b{nullptr, 0};
  ASSERT_EQ(pay_client_stats(&b, c.get()), PAY_OK);
  const std::string stats(b.ptr, b.size);
  pay_buf_dispose(&b);
  EXPECT_NE(stats.find(R"("outcomes":{"SUCCEEDED":3,"FAILED":0,"UNKNOWN":1,"IN_PROGRESS":0})"), std::string::npos)
      << stats;
  EXPECT_NE(stats.find(R"("ledger_answers":{"SUCCEEDED":1)"), std::string::npos) << stats;
  EXPECT_EQ(pay_client_metrics(nullptr, c.get()), PAY_EINVALID);
  pay_buf none{nullptr, 0};
  EXPECT_EQ(pay_client_metrics(&none, nullptr), PAY_EINVALID);
}

// Issue 48: a payment reconcile settles by a same-key re-send is a
// settlement too, counted by how it was settled.
TEST_F(Metrics, ASettlementByAReconcileResendIsCountedByResend) {
  auto c = client(config("stripe", R"("max_attempts":1)", R"("ledger":"memory:")"));
  sim_->script("m-rs", {"reset_before"});
  auto r = submit(c.get(), "m-rs");
  ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN);
  pay_reconcile_options o = PAY_RECONCILE_OPTIONS_INIT;
  o.body_for = [](pay_body* out, const char* order_id, void*) {
    const std::string b = body_for(order_id);
    return pay_body_set(out, b.data(), b.size());
  };
  pay_buf report{nullptr, 0};
  ASSERT_EQ(pay_reconcile(&report, c.get(), &o), PAY_OK) << pay_error_last()->message;
  const std::string rep = report.ptr ? report.ptr : "";
  pay_buf_dispose(&report);
  ASSERT_NE(rep.find("\"SUCCEEDED\":1"), std::string::npos) << rep;
  const std::string text = metrics_of(c.get());
  EXPECT_EQ(sample(text, "payretry_settlements_total", "by=\"resend\",outcome=\"SUCCEEDED\""), 1) << text;
  EXPECT_EQ(sample(text, "payretry_settlements_total", "by=\"lookup\",outcome=\"SUCCEEDED\""), 0) << text;
}

TEST_F(Metrics, ASettlementByLookupIsCountedAsOneNotAsAPayment) {
  auto c = client(config("checkout_com", R"("max_attempts":1)", R"("ledger":"memory:")"));
  sim_->script("m-cko", {"lost_response"});
  auto r = submit(c.get(), "m-cko");
  ASSERT_EQ(pay_result_outcome(r.get()), PAY_OUTCOME_UNKNOWN);
  pay_result* q = nullptr;
  ASSERT_EQ(pay_query(&q, c.get(), "m-cko"), PAY_OK);
  const int settled = pay_result_outcome(q);
  pay_result_free(q);
  const std::string text = metrics_of(c.get());
  EXPECT_EQ(sample(text, "payretry_payments_total"), 1);
  EXPECT_EQ(sample(text, "payretry_settlements_total"), 1) << text;
  EXPECT_EQ(sample(text, "payretry_settlements_total",
                   std::string("by=\"lookup\",outcome=\"") + pay_outcome_name(settled) + "\""),
            1);
  EXPECT_GE(sample(text, "payretry_lookup_attempts_total"), 1);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST_F(Metrics, ReopenLogStartsANewFileAfterRotationAndKeepsTheOldOneWhenItCannot) {
  char tmpl[] = "/tmp/payretry-reopen-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, log = dir + "/payretry.log", rotated = dir + "/payretry.log.1";
  auto c = client(config("stripe", "", R"("ledger":"memory:","log":{"path":")" + log + R"(","level":"info"})"));
  submit(c.get(), "r-1");
  ASSERT_EQ(std::rename(log.c_str(), rotated.c_str()), 0);
  submit(c.get(), "r-2");  // written to the moved file, as logrotate's copy would be
  ASSERT_EQ(pay_client_reopen_log(c.get()), PAY_OK) << pay_error_last()->message;
  submit(c.get(), "r-3");
  const std::string old_lines = slurp(rotated), new_lines = slurp(log);
  EXPECT_NE(old_lines.find("r-1"), std::string::npos);
  EXPECT_NE(old_lines.find("r-2"), std::string::npos);
  EXPECT_EQ(old_lines.find("r-3"), std::string::npos);
  EXPECT_NE(new_lines.find("r-3"), std::string::npos);
  EXPECT_EQ(new_lines.find("r-2"), std::string::npos);

  // The folder gone: PAY_EIO, and the lines go on to the file still open.
  ASSERT_EQ(std::remove(log.c_str()), 0);
  ASSERT_EQ(std::remove(rotated.c_str()), 0);
  ASSERT_EQ(rmdir(dir.c_str()), 0);
  EXPECT_EQ(pay_client_reopen_log(c.get()), PAY_EIO);
  EXPECT_NE(std::string(pay_error_last()->message).find("log.path"), std::string::npos);
  submit(c.get(), "r-4");  // no crash, no lost payment

  // No log file configured: nothing to reopen.
  auto quiet = client(config());
  EXPECT_EQ(pay_client_reopen_log(quiet.get()), PAY_OK);
  EXPECT_EQ(pay_client_reopen_log(nullptr), PAY_EINVALID);
}

}  // namespace
}  // namespace payretry_test
