/* submit_example: submits N payments through payretry, from several threads,
 * and prints what became of them. The C example of the README, and the
 * program the installed-library test builds with pkg-config alone.
 *
 *   submit_example BASE_URL [PAYMENTS] [THREADS] [OUTCOMES_FILE]
 *
 * OUTCOMES_FILE, when given, receives "order_id outcome delivery attempts
 * money_state" per payment so that a script can check them against the
 * provider's truth.
 *
 * The outcome says whether a request took effect; the money state whether
 * money moved. A shop ships on PAY_MONEY_PAID, never on SUCCEEDED alone: a
 * payment that waits for its customer (3-D Secure, an approval) is SUCCEEDED
 * too. The summary counts both.
 */
#define _POSIX_C_SOURCE 200809L
#include <payretry/payretry.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct shared {
  pay_client *client;
  int payments, threads;
  long run_id;
  pthread_mutex_t mu;
  int next;
  int outcomes[5];
  int money[8]; /* by pay_money_state; a value this example does not know counts as unknown */
  long attempts;
  int errors;
  FILE *out;
};

/* The body of an order, rebuilt from its id: the very bytes first sent. */
static int make_body(char *buf, size_t cap, const char *order) {
  const char *dash = strrchr(order, '-');
  int i = dash ? atoi(dash + 1) : 0;
  return snprintf(buf, cap, "{\"order_id\":\"%s\",\"amount\":%d,\"currency\":\"eur\"}", order, 1000 + i);
}

/* pay_reconcile asks for a body when settling needs a same-key re-send. */
static int body_for(pay_body *out, const char *order_id, void *payload) {
  char body[256];
  int n = make_body(body, sizeof body, order_id);
  (void)payload;
  return pay_body_set(out, body, (size_t)n);
}

static void *worker(void *arg) {
  struct shared *s = arg;
  for (;;) {
    pthread_mutex_lock(&s->mu);
    int i = s->next++;
    pthread_mutex_unlock(&s->mu);
    if (i >= s->payments) return NULL;

    char order[64], body[256];
    snprintf(order, sizeof order, "ord-%ld-%d", s->run_id, i);
    make_body(body, sizeof body, order);

    pay_result *r = NULL;
    int rc = pay_submit(&r, s->client, order, body, strlen(body), NULL);
    pthread_mutex_lock(&s->mu);
    if (rc != PAY_OK) {
      /* A failed call, not a failed payment: say why, never guess. */
      fprintf(stderr, "%s: %s: %s\n", order, pay_strerror(rc), pay_error_last()->message);
      s->errors++;
    } else {
      int o = pay_result_outcome(r);
      int m = pay_result_money_state(r);
      s->outcomes[o]++;
      s->money[m >= 0 && m < 8 ? m : PAY_MONEY_UNKNOWN]++;
      s->attempts += pay_result_attempts(r);
      if (s->out)
        fprintf(s->out, "%s %s %s %d %s\n", order, pay_outcome_name(o),
                pay_delivery_name(pay_result_delivery(r)), pay_result_attempts(r), pay_money_state_name(m));
    }
    pthread_mutex_unlock(&s->mu);
    pay_result_free(r);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s BASE_URL [PAYMENTS] [THREADS] [OUTCOMES_FILE]\n", argv[0]);
    return 2;
  }
  struct shared s;
  memset(&s, 0, sizeof s);
  s.payments = argc > 2 ? atoi(argv[2]) : 100;
  s.threads = argc > 3 ? atoi(argv[3]) : 4;
  if (s.threads < 1 || s.threads > 64) s.threads = 4;
  /* Order ids unique per run, even for two runs in the same second. */
  s.run_id = (long)time(NULL) % 100000000L * 100000L + (long)getpid() % 100000L;
  pthread_mutex_init(&s.mu, NULL);
  if (argc > 4 && !(s.out = fopen(argv[4], "w"))) {
    perror(argv[4]);
    return 2;
  }

  /* The ledger must be named. This run's keys may die with it, so memory:;
   * a service names a durable one ("sqlite:///var/lib/shop/payments.db" or
   * "postgresql://..."), or a restart would forget which orders it sent. */
  char config[1024];
  snprintf(config, sizeof config,
           "{\"provider\":\"stripe\",\"base_url\":\"%s\",\"create_path\":\"/v1/payments\","
           "\"auth\":{\"bearer\":\"sk_test_example\"},\"ledger\":\"memory:\","
           "\"retry\":{\"max_attempts\":4,\"connect_timeout_ms\":500,\"attempt_timeout_ms\":1000,"
           "\"deadline_ms\":8000,\"backoff_base_ms\":50,\"backoff_cap_ms\":400}}",
           argv[1]);
  if (pay_client_new(&s.client, config, NULL) != PAY_OK) {
    fprintf(stderr, "config: %s\n", pay_error_last()->message);
    return 2;
  }

  pthread_t tids[64];
  for (int t = 0; t < s.threads; t++) pthread_create(&tids[t], NULL, worker, &s);
  for (int t = 0; t < s.threads; t++) pthread_join(tids[t], NULL);

  /* Settle what could not be settled inline: query or same-key re-send. */
  pay_reconcile_options ro = PAY_RECONCILE_OPTIONS_INIT;
  ro.body_for = body_for;
  pay_buf report = {0};
  if (pay_reconcile(&report, s.client, &ro) == PAY_OK) {
    const char *u = strstr(report.ptr, "\"UNKNOWN\":");
    const char *e = strstr(report.ptr, "\"examined\":");
    printf("reconcile: examined %d, still UNKNOWN %d\n", e ? atoi(e + 11) : -1, u ? atoi(u + 10) : -1);
  } else {
    fprintf(stderr, "reconcile: %s\n", pay_error_last()->message);
  }
  pay_buf_dispose(&report);

  pay_buf stats = {0};
  if (pay_client_stats(&stats, s.client) == PAY_OK) printf("client counters: %s\n", stats.ptr);
  pay_buf_dispose(&stats);
  pay_client_free(s.client);
  if (s.out) fclose(s.out);

  printf("payretry %s: %d payments, %ld attempts\n", pay_version(), s.payments, s.attempts);
  printf("  SUCCEEDED %d  FAILED %d  UNKNOWN %d  IN_PROGRESS %d  call errors %d\n",
         s.outcomes[PAY_OUTCOME_SUCCEEDED], s.outcomes[PAY_OUTCOME_FAILED], s.outcomes[PAY_OUTCOME_UNKNOWN],
         s.outcomes[PAY_OUTCOME_IN_PROGRESS], s.errors);
  /* As submitted, before reconcile: only paid may be shipped. */
  printf("  money:");
  for (int m = 0; m < 8; m++)
    if (s.money[m]) printf("  %s %d", pay_money_state_name(m), s.money[m]);
  printf("\n");
  return s.errors ? 1 : 0;
}
