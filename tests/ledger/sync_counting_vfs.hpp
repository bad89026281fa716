// A SQLite VFS over the process's default one that counts the syncs of the
// files SQLite opens, for tests that must show how many commits reached the
// disk: the SQLite ledger gives no count of its own, and one sync of the
// write-ahead log per commit (synchronous=FULL) is what a commit costs.
//
// While one lives it is the default VFS, so every connection opened in the
// meantime (the ledger's own included, which names no VFS) goes through it;
// the old default is restored by the destructor. Open and close the
// connections it should see within its lifetime. It can also make every
// sync of the log slow, as a disk's is (a test's temporary folder may be
// memory, where a sync costs nothing and commits hardly ever overlap), and
// hold the next one until released, so that a test knows a commit is under
// way while it starts others.
#pragma once
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace ledger_test {

class SyncCountingVfs {
 public:
  SyncCountingVfs() : base_(sqlite3_vfs_find(nullptr)) {
    if (!base_ || instance_) throw std::logic_error("test: no default VFS, or a second SyncCountingVfs");
    vfs_ = *base_;  // every field but these is the base's: its version, its path limit
    vfs_.szOsFile = static_cast<int>(sizeof(File)) + base_->szOsFile;
    vfs_.zName = "payretry-sync-counting";
    vfs_.pAppData = nullptr;
    vfs_.pNext = nullptr;
    vfs_.xOpen = &open;
    // The base's own methods, each given the base (the unix VFS reads its
    // own pAppData): never this VFS.
    vfs_.xDelete = [](sqlite3_vfs*, const char* z, int dir) { return base()->xDelete(base(), z, dir); };
    vfs_.xAccess = [](sqlite3_vfs*, const char* z, int f, int* out) { return base()->xAccess(base(), z, f, out); };
    vfs_.xFullPathname = [](sqlite3_vfs*, const char* z, int n, char* out) {
      return base()->xFullPathname(base(), z, n, out);
    };
    vfs_.xDlOpen = [](sqlite3_vfs*, const char* z) { return base()->xDlOpen(base(), z); };
    vfs_.xDlError = [](sqlite3_vfs*, int n, char* out) { base()->xDlError(base(), n, out); };
    vfs_.xDlSym = [](sqlite3_vfs*, void* h, const char* z) { return base()->xDlSym(base(), h, z); };
    vfs_.xDlClose = [](sqlite3_vfs*, void* h) { base()->xDlClose(base(), h); };
    vfs_.xRandomness = [](sqlite3_vfs*, int n, char* out) { return base()->xRandomness(base(), n, out); };
    vfs_.xSleep = [](sqlite3_vfs*, int us) { return base()->xSleep(base(), us); };
    vfs_.xCurrentTime = [](sqlite3_vfs*, double* out) { return base()->xCurrentTime(base(), out); };
    vfs_.xGetLastError = [](sqlite3_vfs*, int n, char* out) { return base()->xGetLastError(base(), n, out); };
    if (base_->iVersion >= 2)
      vfs_.xCurrentTimeInt64 = [](sqlite3_vfs*, sqlite3_int64* out) { return base()->xCurrentTimeInt64(base(), out); };
    if (base_->iVersion >= 3) {
      vfs_.xSetSystemCall = [](sqlite3_vfs*, const char* z, sqlite3_syscall_ptr p) {
        return base()->xSetSystemCall(base(), z, p);
      };
      vfs_.xGetSystemCall = [](sqlite3_vfs*, const char* z) { return base()->xGetSystemCall(base(), z); };
      vfs_.xNextSystemCall = [](sqlite3_vfs*, const char* z) { return base()->xNextSystemCall(base(), z); };
    }
    instance_ = this;
    if (sqlite3_vfs_register(&vfs_, 1) != SQLITE_OK) {
      instance_ = nullptr;
      throw std::runtime_error("test: cannot register the sync-counting VFS");
    }
  }
  ~SyncCountingVfs() {
    release();
    sqlite3_vfs_unregister(&vfs_);
    sqlite3_vfs_register(base_, 1);
    instance_ = nullptr;
  }
  SyncCountingVfs(const SyncCountingVfs&) = delete;
  SyncCountingVfs& operator=(const SyncCountingVfs&) = delete;

  // Syncs of write-ahead logs so far: one per commit that wrote, and one
  // per checkpoint.
  long wal_syncs() const { return wal_syncs_.load(); }
  // Every sync so far (logs and database files).
  long syncs() const { return syncs_.load(); }

  // Each later sync of a log first sleeps this long.
  void set_wal_sync_delay(std::chrono::microseconds d) { delay_us_ = d.count(); }

  // The next sync of a log waits, before it syncs, until release().
  void hold_next_wal_sync() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_armed_ = true;
    holding_ = false;
  }
  // True once a sync is being held (false after `timeout`).
  bool wait_until_held(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return holding_; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_armed_ = false;
    holding_ = false;
    cv_.notify_all();
  }

 private:
  // The file this VFS hands out: the base's file right after it.
  struct File {
    sqlite3_file head;
    sqlite3_file* real;
    bool wal;
  };

  static sqlite3_vfs* base() { return instance_->base_; }
  static sqlite3_file* real(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real; }

  static int open(sqlite3_vfs*, const char* z, sqlite3_file* f, int flags, int* out_flags) {
    File* file = reinterpret_cast<File*>(f);
    file->real = reinterpret_cast<sqlite3_file*>(file + 1);
    file->wal = (flags & SQLITE_OPEN_WAL) != 0;
    const int rc = base()->xOpen(base(), z, file->real, flags, out_flags);
    // SQLite calls xClose on a file whose pMethods is set, even after a
    // failed open; the base leaves its own null then.
    f->pMethods = file->real->pMethods ? &kMethods : nullptr;
    return rc;
  }

  static int sync(sqlite3_file* f, int flags) {
    SyncCountingVfs& self = *instance_;
    self.syncs_.fetch_add(1);
    if (reinterpret_cast<File*>(f)->wal) {
      self.wal_syncs_.fetch_add(1);
      {
        std::unique_lock<std::mutex> lock(self.mu_);
        if (self.hold_armed_) {
          self.hold_armed_ = false;
          self.holding_ = true;
          self.cv_.notify_all();
          self.cv_.wait(lock, [&] { return !self.holding_; });
        }
      }
      const long us = self.delay_us_.load();
      if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
    return real(f)->pMethods->xSync(real(f), flags);
  }

  static const sqlite3_io_methods kMethods;

  static inline SyncCountingVfs* instance_ = nullptr;
  sqlite3_vfs* base_;
  sqlite3_vfs vfs_{};
  std::atomic<long> syncs_{0}, wal_syncs_{0}, delay_us_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool hold_armed_ = false, holding_ = false;
};

// Every other method is the base file's own.
inline const sqlite3_io_methods SyncCountingVfs::kMethods = {
    3,
    [](sqlite3_file* f) { return real(f)->pMethods->xClose(real(f)); },
    [](sqlite3_file* f, void* p, int n, sqlite3_int64 at) { return real(f)->pMethods->xRead(real(f), p, n, at); },
    [](sqlite3_file* f, const void* p, int n, sqlite3_int64 at) {
      return real(f)->pMethods->xWrite(real(f), p, n, at);
    },
    [](sqlite3_file* f, sqlite3_int64 n) { return real(f)->pMethods->xTruncate(real(f), n); },
    &SyncCountingVfs::sync,
    [](sqlite3_file* f, sqlite3_int64* out) { return real(f)->pMethods->xFileSize(real(f), out); },
    [](sqlite3_file* f, int l) { return real(f)->pMethods->xLock(real(f), l); },
    [](sqlite3_file* f, int l) { return real(f)->pMethods->xUnlock(real(f), l); },
    [](sqlite3_file* f, int* out) { return real(f)->pMethods->xCheckReservedLock(real(f), out); },
    [](sqlite3_file* f, int op, void* arg) { return real(f)->pMethods->xFileControl(real(f), op, arg); },
    [](sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); },
    [](sqlite3_file* f) { return real(f)->pMethods->xDeviceCharacteristics(real(f)); },
    [](sqlite3_file* f, int pg, int sz, int extend, void volatile** out) {
      return real(f)->pMethods->xShmMap(real(f), pg, sz, extend, out);
    },
    [](sqlite3_file* f, int at, int n, int flags) { return real(f)->pMethods->xShmLock(real(f), at, n, flags); },
    [](sqlite3_file* f) { real(f)->pMethods->xShmBarrier(real(f)); },
    [](sqlite3_file* f, int del) { return real(f)->pMethods->xShmUnmap(real(f), del); },
    [](sqlite3_file* f, sqlite3_int64 at, int n, void** out) {
      if (real(f)->pMethods->iVersion < 3) {
        *out = nullptr;  // no memory map: SQLite reads instead
        return SQLITE_OK;
      }
      return real(f)->pMethods->xFetch(real(f), at, n, out);
    },
    [](sqlite3_file* f, sqlite3_int64 at, void* p) {
      return real(f)->pMethods->iVersion < 3 ? SQLITE_OK : real(f)->pMethods->xUnfetch(real(f), at, p);
    },
};

}  // namespace ledger_test
