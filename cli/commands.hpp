// The commands main dispatches to. Each takes the arguments after its name and
// returns the process exit code, or throws cli::Failure.
#pragma once

#include <string>
#include <vector>

namespace cli {

using Argv = std::vector<std::string>;

int cmd_submit(const Argv& args);
int cmd_query(const Argv& args);
int cmd_refund(const Argv& args);
int cmd_capture(const Argv& args);
int cmd_cancel(const Argv& args);
int cmd_reconcile(const Argv& args);
int cmd_ledger(const Argv& args);
int cmd_demo(const Argv& args);
int cmd_demo_worker(const Argv& args);  // hidden: the child process of `demo --crash`
int cmd_version(const Argv& args);
int cmd_check(const Argv& args);
int cmd_webhook(const Argv& args);

// The exit-code table every --help ends with.
extern const char kExitCodesHelp[];
// Where the config comes from, for every --help that needs one.
extern const char kConfigHelp[];

}  // namespace cli
