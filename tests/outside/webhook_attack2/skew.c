/* LD_PRELOAD shim: this process's wall clock runs ATTACK_SKEW_MS ahead (or
 * behind, negative), as another host's would. Only CLOCK_REALTIME moves:
 * payretry's unix_ms (received_at, created_at) reads it, and the monotonic
 * clock its timeouts use stays true. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static long long skew_ms(void) {
  const char *s = getenv("ATTACK_SKEW_MS");
  return s ? atoll(s) : 0;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  static int (*real)(clockid_t, struct timespec *);
  if (!real) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  int rc = real(id, ts);
  if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
    long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + skew_ms() * 1000000LL;
    ts->tv_sec = (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
  }
  return rc;
}
