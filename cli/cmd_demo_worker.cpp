// payretry __demo-worker (hidden): the child process `demo --crash` starts,
// kills with SIGKILL, and starts again. It submits every order of the run
// through the ledger named in its config, then prints one JSON line:
// {"outcomes":{...},"errors":N,"first_error":"...","stats":{...}}.
#include <cstdio>

#include "client_setup.hpp"
#include "commands.hpp"
#include "demo_plan.hpp"
#include "output.hpp"

namespace cli {

int cmd_demo_worker(const Argv& argv) {
  ArgSpec spec;
  spec.valued.insert({"--config", "--payments", "--concurrency", "--seed"});
  const Args a = Args::parse(argv, spec);
  DemoPlan plan;
  plan.payments = static_cast<int>(a.integer("--payments", 1, 1000000, 0));
  plan.concurrency = static_cast<int>(a.integer("--concurrency", 1, 4096, 8));
  plan.seed = static_cast<uint64_t>(a.integer("--seed", 0, INT64_MAX, 42));
  plan.crash = true;
  const pay::client client = open_client(load_config(a), false);
  Tally tally;
  submit_all(client, plan, tally, nullptr);

  Json doc(cJSON_CreateObject());
  cJSON* out = cJSON_AddObjectToObject(doc.get(), "outcomes");
  for (int o = PAY_OUTCOME_SUCCEEDED; o <= PAY_OUTCOME_IN_PROGRESS; ++o)
    cJSON_AddNumberToObject(out, pay_outcome_name(o), static_cast<double>(tally.outcomes[o].load()));
  cJSON_AddNumberToObject(doc.get(), "errors", static_cast<double>(tally.errors.load()));
  cJSON_AddStringToObject(doc.get(), "first_error", tally.first_error.c_str());
  cJSON_AddItemToObject(doc.get(), "stats", parse_json(call([&] { return client.stats(); })).release());
  print_json(doc.get());
  std::fflush(stdout);
  return tally.errors.load() ? kExitInternal : kExitOk;
}

}  // namespace cli
