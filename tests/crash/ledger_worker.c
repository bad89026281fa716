/* ledger_worker: one worker process of the crash-safety and concurrency
 * tests (tests/crash). It goes through the public C API only.
 *
 *   ledger_worker [options] CONFIG_FILE PREFIX FROM TO
 *       Submits the orders PREFIX<FROM> .. PREFIX<TO-1> from --threads
 *       threads and prints one line per order as soon as it is decided:
 *           order outcome delivery from_ledger attempts key
 *       or, when the call itself failed:
 *           order ERROR <code> <message>
 *       The body of an order is the same bytes in every process:
 *           {"order_id":"<id>","amount":<n>,"currency":"eur"}
 *       with <n> derived from the order id alone.
 *
 *   ledger_worker --dump CONFIG_FILE
 *       Prints the whole ledger through pay_ledger_list: one line per state
 *       (PENDING, IN_FLIGHT, SUCCEEDED, FAILED, UNKNOWN), each the JSON
 *       array the library returned for that state.
 *
 *   ledger_worker --get CONFIG_FILE < order ids
 *       Prints pay_ledger_get of every order id read from stdin (one per
 *       line), one JSON object per line ("null" when not found).
 *
 * Options:
 *   --threads N              submitting threads (default 4)
 *   --kill-at hook|log|any|none
 *                            where the worker may SIGKILL itself:
 *                              hook: in the request hook, just before a send;
 *                              log:  in the log callback on an "attempt" line
 *                                    (a response came back, the ledger has not
 *                                    recorded the attempt yet) or on an
 *                                    "outcome" line after attempts (the final
 *                                    answer is in, the settle not committed);
 *                              any:  both.
 *   --kill-prob P            probability of a kill at each such point (default 0)
 *   --kill-min-attempt N     only at attempts >= N (hook and attempt lines; default 1)
 *   --seed S                 seed of the kill decisions (default 1)
 *   --start-at-ms T          create the client, then wait until Unix time T (ms)
 *                            before the first submission (to line up processes)
 *   --send-log FILE          append "order key attempt unix_ms pid" to FILE from
 *                            the request hook before every send (and before a
 *                            hook kill), one write(2) per line with O_APPEND,
 *                            so several processes can share the file
 *
 * Exit status: 0 when every call returned PAY_OK (whatever the outcomes),
 * 1 when some call failed, 2 on bad usage or configuration.
 */
#define _POSIX_C_SOURCE 200809L

#include <payretry/payretry.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

enum kill_at { KILL_NONE = 0, KILL_HOOK = 1, KILL_LOG = 2, KILL_ANY = 3 };

struct thread_state {
  uint64_t rng;
  int index;
};

struct shared {
  pay_client *client;
  const char *prefix;
  long from, to, next;
  int threads;
  int kill_at;
  double kill_prob;
  unsigned kill_min_attempt;
  uint64_t seed;
  int64_t start_at_ms;
  int send_log_fd;
  pthread_mutex_t mu;
  pthread_key_t key;
  int errors;
};

static struct shared g;

static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; ++s) {
    h ^= (unsigned char)*s;
    h *= 1099511628211ULL;
  }
  return h;
}

/* A uniform double in [0, 1) from the calling submitter thread's generator. */
static double thread_uniform(void) {
  struct thread_state *t = pthread_getspecific(g.key);
  if (!t) return 1.0; /* not one of our threads: never kill */
  t->rng = splitmix64(t->rng);
  return (double)(t->rng >> 11) / 9007199254740992.0;
}

static void maybe_die(void) {
  if (g.kill_prob > 0 && thread_uniform() < g.kill_prob) raise(SIGKILL);
}

static int64_t unix_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms) {
  struct timespec ts;
  if (ms <= 0) return;
  ts.tv_sec = (time_t)(ms / 1000);
  ts.tv_nsec = (long)(ms % 1000) * 1000000L;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Writes a whole line with one write(2), so that a kill never leaves half a
 * line in the pipe. */
static void write_all(int fd, const char *s, size_t len) {
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, s + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    off += (size_t)w;
  }
}

static void emit_line(const char *line) {
  pthread_mutex_lock(&g.mu);
  write_all(STDOUT_FILENO, line, strlen(line));
  pthread_mutex_unlock(&g.mu);
}

static int hook(pay_headers *headers, const pay_attempt_info *info, void *payload) {
  (void)headers;
  (void)payload;
  if (g.send_log_fd >= 0) {
    char line[600];
    int n = snprintf(line, sizeof line, "%s %s %u %lld %ld\n", info->order_id, info->idempotency_key,
                     info->attempt, (long long)info->unix_time_ms, (long)getpid());
    if (n > 0 && (size_t)n < sizeof line) write_all(g.send_log_fd, line, (size_t)n);
  }
  if ((g.kill_at & KILL_HOOK) && info->attempt >= g.kill_min_attempt) maybe_die();
  return 0;
}

static void log_cb(int level, const char *line, void *payload) {
  (void)level;
  (void)payload;
  if (!(g.kill_at & KILL_LOG)) return;
  if (strstr(line, "\"event\":\"attempt\"")) {
    const char *a = strstr(line, "\"attempt\":");
    unsigned n = a ? (unsigned)strtoul(a + 10, NULL, 10) : 1;
    if (n >= g.kill_min_attempt) maybe_die();
  } else if (strstr(line, "\"event\":\"outcome\"") && !strstr(line, "\"attempts\":0,")) {
    maybe_die();
  }
}

static void one_line(char *out, size_t cap, const char *s) {
  /* Messages go on one line with no spaces, so the line splits simply. */
  size_t i = 0;
  for (; s && s[i] && i + 1 < cap; ++i) out[i] = (s[i] == ' ' || s[i] == '\n' || s[i] == '\r') ? '_' : s[i];
  out[i] = '\0';
}

static void *submitter(void *arg) {
  struct thread_state *t = arg;
  pthread_setspecific(g.key, t);
  for (;;) {
    long i;
    char order[256], body[512], line[1024];
    pay_result *r = NULL;
    int rc;
    pthread_mutex_lock(&g.mu);
    i = g.next++;
    pthread_mutex_unlock(&g.mu);
    if (i >= g.to) break;
    snprintf(order, sizeof order, "%s%ld", g.prefix, i);
    snprintf(body, sizeof body, "{\"order_id\":\"%s\",\"amount\":%u,\"currency\":\"eur\"}", order,
             (unsigned)(100 + fnv1a(order) % 9900));
    rc = pay_submit(&r, g.client, order, body, strlen(body), NULL);
    if (rc != PAY_OK) {
      char msg[600];
      one_line(msg, sizeof msg, pay_error_last()->message);
      snprintf(line, sizeof line, "%s ERROR %d %s\n", order, rc, msg);
      pthread_mutex_lock(&g.mu);
      g.errors++;
      pthread_mutex_unlock(&g.mu);
    } else {
      const char *key = pay_result_idempotency_key(r);
      snprintf(line, sizeof line, "%s %s %s %d %d %s\n", order, pay_outcome_name(pay_result_outcome(r)),
               pay_delivery_name(pay_result_delivery(r)), pay_result_from_ledger(r), pay_result_attempts(r),
               key && *key ? key : "-");
    }
    pay_result_free(r);
    emit_line(line);
  }
  return NULL;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t len = 0, cap = 0;
  if (!f) return NULL;
  for (;;) {
    size_t n;
    if (cap - len < 4096) {
      char *nb = realloc(buf, cap + 65536);
      if (!nb) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = nb;
      cap += 65536;
    }
    n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
    if (n == 0) break;
  }
  fclose(f);
  buf[len] = '\0';
  return buf;
}

static int usage(void) {
  fprintf(stderr,
          "usage: ledger_worker [--threads N] [--kill-at hook|log|any|none] [--kill-prob P]\n"
          "                     [--kill-min-attempt N] [--seed S] [--start-at-ms T]\n"
          "                     [--send-log FILE]\n"
          "                     CONFIG_FILE PREFIX FROM TO\n"
          "       ledger_worker --dump CONFIG_FILE\n"
          "       ledger_worker --get CONFIG_FILE < order ids\n");
  return 2;
}

static int new_client(const char *config_path, int with_callbacks) {
  pay_client_options o;
  char *config = read_file(config_path);
  int rc;
  if (!config) {
    fprintf(stderr, "ledger_worker: cannot read %s\n", config_path);
    return 2;
  }
  pay_client_options_init(&o, PAY_CLIENT_OPTIONS_VERSION);
  if (with_callbacks) {
    o.request_hook = hook;
    o.log_cb = log_cb;
  }
  rc = pay_client_new(&g.client, config, &o);
  free(config);
  if (rc != PAY_OK) {
    fprintf(stderr, "ledger_worker: pay_client_new: %s: %s\n", pay_strerror(rc), pay_error_last()->message);
    return 2;
  }
  return 0;
}

static int dump(const char *config_path) {
  static const char *states[] = {"PENDING", "IN_FLIGHT", "SUCCEEDED", "FAILED", "UNKNOWN"};
  int i, status = 0;
  if (new_client(config_path, 0)) return 2;
  for (i = 0; i < 5; ++i) {
    pay_buf b = {NULL, 0};
    int rc = pay_ledger_list(&b, g.client, states[i], 0, 1000000);
    if (rc != PAY_OK) {
      fprintf(stderr, "ledger_worker: pay_ledger_list(%s): %s: %s\n", states[i], pay_strerror(rc),
              pay_error_last()->message);
      status = 1;
      break;
    }
    fwrite(b.ptr, 1, b.size, stdout);
    fputc('\n', stdout);
    pay_buf_dispose(&b);
  }
  fflush(stdout);
  pay_client_free(g.client);
  return status;
}

static int get(const char *config_path) {
  char order[512];
  int status = 0;
  if (new_client(config_path, 0)) return 2;
  while (fgets(order, sizeof order, stdin)) {
    pay_buf b = {NULL, 0};
    int rc;
    order[strcspn(order, "\r\n")] = '\0';
    if (!order[0]) continue;
    rc = pay_ledger_get(&b, g.client, order);
    if (rc == PAY_OK) {
      fwrite(b.ptr, 1, b.size, stdout);
      fputc('\n', stdout);
    } else if (rc == PAY_ENOTFOUND) {
      fputs("null\n", stdout);
    } else {
      fprintf(stderr, "ledger_worker: pay_ledger_get(%s): %s: %s\n", order, pay_strerror(rc),
              pay_error_last()->message);
      status = 1;
    }
    pay_buf_dispose(&b);
  }
  fflush(stdout);
  pay_client_free(g.client);
  return status;
}

int main(int argc, char **argv) {
  const char *positional[4];
  int npos = 0, i, rc;
  pthread_t *tids;
  struct thread_state *states;

#ifdef __linux__
  /* A test runner killed outright must not leave workers behind. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
  memset(&g, 0, sizeof g);
  g.threads = 4;
  g.kill_min_attempt = 1;
  g.seed = 1;
  g.send_log_fd = -1;
  if (argc == 3 && strcmp(argv[1], "--dump") == 0) return dump(argv[2]);
  if (argc == 3 && strcmp(argv[1], "--get") == 0) return get(argv[2]);

  for (i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (strncmp(a, "--", 2) == 0) {
      const char *v;
      char *end = NULL;
      if (i + 1 >= argc) return usage();
      v = argv[++i];
      errno = 0;
      if (strcmp(a, "--threads") == 0) {
        g.threads = (int)strtol(v, &end, 10);
        if (*end || g.threads < 1 || g.threads > 256) return usage();
      } else if (strcmp(a, "--kill-at") == 0) {
        if (strcmp(v, "hook") == 0) g.kill_at = KILL_HOOK;
        else if (strcmp(v, "log") == 0) g.kill_at = KILL_LOG;
        else if (strcmp(v, "any") == 0) g.kill_at = KILL_ANY;
        else if (strcmp(v, "none") == 0) g.kill_at = KILL_NONE;
        else return usage();
      } else if (strcmp(a, "--kill-prob") == 0) {
        g.kill_prob = strtod(v, &end);
        if (*end || g.kill_prob < 0 || g.kill_prob > 1) return usage();
      } else if (strcmp(a, "--kill-min-attempt") == 0) {
        g.kill_min_attempt = (unsigned)strtoul(v, &end, 10);
        if (*end) return usage();
      } else if (strcmp(a, "--seed") == 0) {
        g.seed = strtoull(v, &end, 10);
        if (*end || errno) return usage();
      } else if (strcmp(a, "--start-at-ms") == 0) {
        g.start_at_ms = strtoll(v, &end, 10);
        if (*end || errno) return usage();
      } else if (strcmp(a, "--send-log") == 0) {
        if (g.send_log_fd >= 0) close(g.send_log_fd);
        g.send_log_fd = open(v, O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (g.send_log_fd < 0) {
          fprintf(stderr, "ledger_worker: cannot open %s: %s\n", v, strerror(errno));
          return 2;
        }
      } else {
        return usage();
      }
    } else {
      if (npos == 4) return usage();
      positional[npos++] = a;
    }
  }
  if (npos != 4) return usage();
  g.prefix = positional[1];
  {
    char *end = NULL;
    g.from = strtol(positional[2], &end, 10);
    if (*end) return usage();
    g.to = strtol(positional[3], &end, 10);
    if (*end || g.to < g.from) return usage();
  }
  g.next = g.from;
  if (pthread_mutex_init(&g.mu, NULL) || pthread_key_create(&g.key, NULL)) return 2;
  if ((rc = new_client(positional[0], 1)) != 0) return rc;

  tids = calloc((size_t)g.threads, sizeof *tids);
  states = calloc((size_t)g.threads, sizeof *states);
  if (!tids || !states) return 2;
  if (g.start_at_ms > 0) sleep_ms(g.start_at_ms - unix_ms());
  for (i = 0; i < g.threads; ++i) {
    states[i].index = i;
    states[i].rng = splitmix64(g.seed * 0x100000001b3ULL + (uint64_t)i + 1);
    if (pthread_create(&tids[i], NULL, submitter, &states[i]) != 0) {
      fprintf(stderr, "ledger_worker: pthread_create failed\n");
      g.threads = i;
      break;
    }
  }
  for (i = 0; i < g.threads; ++i) pthread_join(tids[i], NULL);
  free(tids);
  free(states);
  pay_client_free(g.client);
  pthread_key_delete(g.key);
  pthread_mutex_destroy(&g.mu);
  if (g.send_log_fd >= 0) close(g.send_log_fd);
  return g.errors ? 1 : 0;
}
