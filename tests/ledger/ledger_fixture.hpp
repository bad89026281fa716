// Helpers of the ledger conformance suite: scratch stores of each backend,
// direct SQL into them (to stage what the interface cannot, like a PENDING
// row or a schema from the future), child processes that race the parent,
// and a throwaway PostgreSQL cluster.
#pragma once
#include <fcntl.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace ledger_test {

enum class Kind { memory, sqlite, postgres };

inline const char* kind_name(Kind k) {
  switch (k) {
    case Kind::memory: return "memory";
    case Kind::sqlite: return "sqlite";
    case Kind::postgres: return "postgres";
  }
  return "?";
}

// Test names and failure messages say "postgres", not "4-byte object".
inline void PrintTo(Kind k, std::ostream* os) { *os << kind_name(k); }

inline std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The PostgreSQL the suite runs against, from PAYRETRY_TEST_PG_URL. Empty
// when unset; the caller then skips, or fails when PAYRETRY_REQUIRE_PG=1.
inline std::string pg_base_url() { return env("PAYRETRY_TEST_PG_URL"); }
inline bool pg_required() { return env("PAYRETRY_REQUIRE_PG") == "1"; }
inline const char* pg_missing_message() {
  return "PAYRETRY_TEST_PG_URL is not set: start a server with `tests/ledger/pg_cluster.sh start DIR` "
         "and export the URL it prints as PAYRETRY_TEST_PG_URL";
}

// Skips the current test (or fails it, when PostgreSQL is required) unless
// a server is configured. Use at the top of a test body or SetUp.
#define LEDGER_REQUIRE_PG()                                                                  \
  do {                                                                                       \
    if (::ledger_test::pg_base_url().empty()) {                                              \
      if (::ledger_test::pg_required())                                                      \
        FAIL() << "PAYRETRY_REQUIRE_PG=1 but " << ::ledger_test::pg_missing_message();       \
      GTEST_SKIP() << "PostgreSQL backend not tested: " << ::ledger_test::pg_missing_message(); \
    }                                                                                        \
  } while (0)

inline std::string random_hex(size_t n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s.push_back(digits[rng() % 16]);
  return s;
}

inline std::string make_temp_dir(const char* prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (std::string(prefix) + "XXXXXX")).string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

// ---- PostgreSQL, directly through libpq --------------------------------

struct PgConnCloser {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct PgResultClearer {
  void operator()(PGresult* r) const { PQclear(r); }
};

class PgSession {
 public:
  explicit PgSession(const std::string& url) : c_(PQconnectdb(url.c_str())) {
    if (PQstatus(c_.get()) != CONNECTION_OK)
      throw std::runtime_error(std::string("test: cannot connect to PostgreSQL: ") + PQerrorMessage(c_.get()));
    PQsetNoticeProcessor(c_.get(), [](void*, const char*) {}, nullptr);  // DROP ... CASCADE chatter
  }
  // Test-only SQL from constants and generated names.
  std::string exec(const std::string& sql) {
    std::unique_ptr<PGresult, PgResultClearer> r(PQexec(c_.get(), sql.c_str()));
    const ExecStatusType st = PQresultStatus(r.get());
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
      throw std::runtime_error("test: " + sql + ": " + PQerrorMessage(c_.get()));
    return st == PGRES_TUPLES_OK && PQntuples(r.get()) > 0 ? PQgetvalue(r.get(), 0, 0) : "";
  }

 private:
  std::unique_ptr<PGconn, PgConnCloser> c_;
};

// `base` with a libpq `options` parameter appended (a URI or a key=value string).
inline std::string with_pg_options(const std::string& base, const std::string& options) {
  const bool uri = base.rfind("postgresql://", 0) == 0 || base.rfind("postgres://", 0) == 0;
  if (!uri) return base + " options='" + options + "'";
  std::string enc;
  for (char c : options) {
    if (c == ' ') enc += "%20";
    else if (c == '=') enc += "%3D";
    else enc.push_back(c);
  }
  return base + (base.find('?') == std::string::npos ? "?" : "&") + "options=" + enc;
}

// ---- a fresh store of one backend ----------------------------------------

// An empty store for one test, removed by the destructor: a SQLite file in
// a fresh directory, or a fresh PostgreSQL schema (selected through the
// URL's search_path, so tests running at once never see each other's rows).
class ScratchStore {
 public:
  ScratchStore(Kind kind) : kind_(kind) {
    switch (kind) {
      case Kind::memory: url_ = "memory:"; break;
      case Kind::sqlite:
        dir_ = make_temp_dir("payretry-ledger-");
        path_ = dir_ + "/ledger.db";
        url_ = "sqlite://" + path_;
        break;
      case Kind::postgres: {
        schema_ = "payretry_t" + std::to_string(getpid()) + "_" + random_hex(10);
        PgSession(pg_base_url()).exec("CREATE SCHEMA " + schema_);
        url_ = with_pg_options(pg_base_url(), "-c search_path=" + schema_);
        break;
      }
    }
  }
  ~ScratchStore() {
    try {
      if (!dir_.empty()) std::filesystem::remove_all(dir_);
      if (!schema_.empty()) PgSession(pg_base_url()).exec("DROP SCHEMA " + schema_ + " CASCADE");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "warning: could not remove a scratch store: %s\n", e.what());
    }
  }
  ScratchStore(const ScratchStore&) = delete;
  ScratchStore& operator=(const ScratchStore&) = delete;

  const std::string& url() const { return url_; }
  const std::string& schema() const { return schema_; }
  Kind kind() const { return kind_; }

  // SQL straight into the store (same text for both dialects), for what the
  // interface cannot stage. Not for memory:.
  void exec_raw(const std::string& sql) const {
    if (kind_ == Kind::postgres) {
      PgSession(url_).exec(sql);
    } else if (kind_ == Kind::sqlite) {
      sqlite3* db = nullptr;
      // Created when missing: a test may lay out an old schema before any
      // ledger opened the file.
      int rc = sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
      std::unique_ptr<sqlite3, int (*)(sqlite3*)> guard(db, sqlite3_close);
      if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, 5000);
        rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
      }
      if (rc != SQLITE_OK) throw std::runtime_error("test: sqlite: " + sql + ": " + sqlite3_errmsg(db));
    } else {
      throw std::logic_error("memory: has no SQL");
    }
  }

  // The first column of the first row of `sql` ("" when none), read
  // straight from the store.
  std::string query_raw(const std::string& sql) const;

  const std::string& path() const { return path_; }

 private:
  Kind kind_;
  std::string url_, dir_, path_, schema_;
};

// A connection of its own into a SQL store, kept open for many reads (of
// a thread that checks, call after call, what another connection has
// committed: a new connection for each read would cost more than the call
// it checks). Each read sees only what was committed.
class StoreReader {
 public:
  explicit StoreReader(const ScratchStore& store) : kind_(store.kind()) {
    if (kind_ == Kind::postgres) {
      pg_ = std::make_unique<PgSession>(store.url());
    } else if (kind_ == Kind::sqlite) {
      sqlite3* db = nullptr;
      const int rc = sqlite3_open_v2(store.path().c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
      db_.reset(db);
      if (rc != SQLITE_OK) throw std::runtime_error(std::string("test: sqlite: open: ") + sqlite3_errmsg(db));
      sqlite3_busy_timeout(db, 5000);
    } else {
      throw std::logic_error("memory: has no SQL");
    }
  }

  // The first column of the first row of `sql` ("" when none).
  std::string query(const std::string& sql) {
    if (pg_) return pg_->exec(sql);
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &raw, nullptr) != SQLITE_OK)
      throw std::runtime_error("test: sqlite: " + sql + ": " + sqlite3_errmsg(db_.get()));
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> st(raw, sqlite3_finalize);
    std::string out;
    if (sqlite3_step(st.get()) == SQLITE_ROW && sqlite3_column_text(st.get(), 0))
      out = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0));
    return out;
  }

 private:
  Kind kind_;
  std::unique_ptr<PgSession> pg_;
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db_{nullptr, sqlite3_close};
};

inline std::string ScratchStore::query_raw(const std::string& sql) const { return StoreReader(*this).query(sql); }

// ---- child processes ------------------------------------------------------

// This test binary, started again in child mode, talking line by line over
// its stdin and stdout. The destructor closes its stdin (it then exits) and
// reaps it, killing it (by pid) if it does not exit in time.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    std::vector<char*> argv;
    static std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    argv.push_back(self.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, self.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
    if (rc != 0) {
      pid_ = -1;
      throw std::runtime_error("posix_spawn failed");
    }
  }
  ~Child() {
    if (to_ >= 0) close(to_);
    if (pid_ > 0) {
      int status = 0;
      for (int i = 0; i < 200; ++i) {
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
      }
    }
    if (from_ >= 0) close(from_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  void send(const std::string& line) {
    const std::string l = line + "\n";
    if (write(to_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) throw std::runtime_error("child is gone");
  }

  // The next line, or nullopt at EOF or after `timeout`.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{from_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[4096];
      const ssize_t n = read(from_, chunk, sizeof chunk);
      if (n <= 0) return std::nullopt;
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buf_;
};

// ---- a private PostgreSQL cluster ---------------------------------------

// Runs tests/ledger/pg_cluster.sh; returns its stdout (trimmed) and exit code.
inline std::pair<std::string, int> pg_cluster(const std::string& cmd, const std::string& dir) {
  const std::string line = std::string("bash '") + PAYRETRY_PG_CLUSTER_SCRIPT + "' " + cmd + " '" + dir + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(line.c_str(), "r"), pclose);
  if (!p) return {"", -1};
  std::string out;
  char buf[512];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p.get())) > 0) out.append(buf, n);
  const int status = pclose(p.release());
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

// A cluster of its own for a test that stops and restarts the server (the
// shared one serves tests running at the same time). Destroyed at the end.
class PrivateCluster {
 public:
  PrivateCluster() : dir_(make_temp_dir("payretry-pgcluster-")) {}
  ~PrivateCluster() { pg_cluster("destroy", dir_); }
  PrivateCluster(const PrivateCluster&) = delete;
  PrivateCluster& operator=(const PrivateCluster&) = delete;
  // The URL, or "" when it did not start.
  std::string start() {
    auto [url, rc] = pg_cluster("start", dir_);
    return rc == 0 ? url : "";
  }
  bool stop() { return pg_cluster("stop", dir_).second == 0; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

}  // namespace ledger_test
