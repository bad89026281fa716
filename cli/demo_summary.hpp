// The demo's summary: what happened, checked against the provider's truth,
// as one JSON document (--json) or a readable report.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "demo_plan.hpp"
#include "output.hpp"

namespace cli {

struct CrashFacts {
  long kill_after_created = 0;  // the ledger rows at which the worker was killed
  bool killed = false;          // false: it finished before reaching that point
  long created_at_kill = 0;
  std::map<std::string, long> states_at_kill;
  std::set<std::string> left_unsettled;  // PENDING, IN_FLIGHT or UNKNOWN when it died
};

struct DemoFacts {
  DemoPlan plan;
  std::string ledger;
  std::map<std::string, long> before;  // outcomes submit returned, by name
  long call_errors = 0;
  std::string first_error;
  std::string submit_stats;  // this process's pay_client_stats after submitting
  std::string client_stats;  // ... after reconcile too
  std::string worker_stats;  // the restarted worker's (crash mode), else empty
  // This process's pay_client_metrics after submitting, as a scrape would
  // read it. Empty in crash mode: the workers ran the payments.
  std::string submit_metrics;
  std::vector<std::string> reconcile_reports;  // one per pass
  std::map<std::string, std::string> final_states;  // order -> ledger state
  std::map<std::string, std::string> final_money;   // order -> the row's money state
  std::string truth;                                // the simulator's /__admin/truth document
  long provider_requests = 0;
  int64_t elapsed_ms = 0;
  CrashFacts crash;
};

// "ok" is true when no order was charged twice, no charged order is FAILED,
// no order whose money reads held or paid went uncharged at the provider and
// no charged order's money reads failed.
Json build_summary(const DemoFacts& f);
void print_summary(const cJSON* summary);

}  // namespace cli
