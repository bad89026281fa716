/* Scenario 4d: a thread cancelled (pthread_cancel) while it is inside
 * pay_webhook_apply, waiting in or leading a group commit. THREADS threads
 * apply the deliveries of a file on one client; each lets itself be
 * cancelled only during the call (cancellation is off around its own log
 * writes), logs every reply, fsync'd, before anything else; main cancels one
 * after a delay and waits for the rest. Prints what became of them:
 * "joined" (every other thread came back), "hung" (some never did).
 *
 * usage: cancel CONFIG_JSON DELIVERIES LOGDIR THREADS DELAY_US VICTIM
 * DELIVERIES: one per line, "event_id<TAB>Stripe-Signature<TAB>body". */
#define _GNU_SOURCE
#include <payretry/payretry.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  char *id, *sig, *body;
} delivery;

static delivery *plan;
static size_t plan_len, next_item;
static pthread_mutex_t plan_mu = PTHREAD_MUTEX_INITIALIZER;
static pay_client *client;
static const char *logdir;

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
  b[n] = 0;
  fclose(f);
  return b;
}

static void *run(void *arg) {
  int me = (int)(long)arg, old;
  char path[4096];
  snprintf(path, sizeof path, "%s/t%02d.log", logdir, me);
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  for (;;) {
    pthread_mutex_lock(&plan_mu);
    size_t i = next_item < plan_len ? next_item++ : plan_len;
    pthread_mutex_unlock(&plan_mu);
    if (i == plan_len) break;
    pay_header hs[2] = {{"Stripe-Signature", plan[i].sig}, {"Content-Type", "application/json"}};
    pay_webhook_request req = PAY_WEBHOOK_REQUEST_INIT;
    req.method = "POST";
    req.url = "https://shop.example/hooks/stripe";
    req.headers = hs;
    req.header_count = 2;
    req.body = plan[i].body;
    req.body_len = strlen(plan[i].body);
    pay_webhook_reply rep;
    memset(&rep, 0, sizeof rep);
    pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
    int rc = pay_webhook_apply(&rep, client, &req);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    const char *tag = rc == 0 && rep.status >= 200 && rep.status < 300 ? "ACK" : "NAK";
    /* The outcome is JSON already: the line is a JSON array. */
    dprintf(fd, "[\"%s\", %d, \"%s\", %s]\n", tag, rc ? -rc : rep.status, plan[i].id,
            rep.outcome.ptr ? rep.outcome.ptr : "null");
    fsync(fd);
    pay_webhook_reply_dispose(&rep);
  }
  close(fd);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: cancel CONFIG DELIVERIES LOGDIR THREADS DELAY_US VICTIM\n");
    return 2;
  }
  char *cfg = slurp(argv[1]), *items = slurp(argv[2]);
  logdir = argv[3];
  int threads = atoi(argv[4]), victim = atoi(argv[6]);
  long delay_us = atol(argv[5]);
  if (!cfg || !items) return 2;
  size_t cap = 1024;
  plan = malloc(cap * sizeof *plan);
  for (char *line = strtok(items, "\n"); line; line = strtok(NULL, "\n")) {
    char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
    if (!t2) continue;
    *t1 = *t2 = 0;
    if (plan_len == cap) plan = realloc(plan, (cap *= 2) * sizeof *plan);
    plan[plan_len++] = (delivery){line, t1 + 1, t2 + 1};
  }
  if (pay_client_new(&client, cfg, NULL) != 0) {
    fprintf(stderr, "client: %s\n", pay_error_last()->message);
    return 3;
  }
  pthread_t *ts = calloc((size_t)threads, sizeof *ts);
  for (int i = 0; i < threads; i++) pthread_create(&ts[i], NULL, run, (void *)(long)i);
  usleep((useconds_t)delay_us);
  pthread_cancel(ts[victim]);
  printf("cancelled %d\n", victim);
  fflush(stdout);
  int hung = 0;
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 15;
  for (int i = 0; i < threads; i++) {
    void *ret;
    int rc = pthread_timedjoin_np(ts[i], &ret, &until);
    if (rc == ETIMEDOUT) hung++;
    else if (i == victim)
      printf("victim %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "finished before the cancel");
  }
  printf(hung ? "hung %d\n" : "joined\n", hung);
  fflush(stdout);
  if (hung) _exit(4);
  pay_client_free(client);
  return 0;
}
