// Opening a SQLite ledger where it cannot be: said as what it is.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "ledger.hpp"

namespace payretry {
namespace {

// SQLite makes the file, never the folders above it: the commonest first
// mistake (a ledger under /var/lib/app before the folder exists).
TEST(SqliteLedgerOpen, AMissingFolderIsNamedAsMissing) {
  const std::string folder = "/tmp/payretry-no-such-folder-" + std::to_string(::getpid());
  try {
    open_ledger("sqlite://" + folder + "/payments.db", "");
    FAIL() << "opened a ledger in a folder that does not exist";
  } catch (const LedgerError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("the folder " + folder + " does not exist"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace payretry
