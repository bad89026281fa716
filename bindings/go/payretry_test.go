package payretry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	payretry "github.com/payretry/payretry/bindings/go"
)

const apiKey = "sk_test_go"

var (
	simURL     string // http://127.0.0.1:PORT
	skipReason string // why the tests cannot run, "" when they can
	orderSeq   atomic.Int64
)

// TestMain starts the simulator named by PAYRETRY_SIM for the whole package.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	switch {
	case os.Getenv("PAYRETRY_PREFIX") == "":
		skipReason = "PAYRETRY_PREFIX is not set (an install prefix of libpayretry; see README.md)"
	case os.Getenv("PAYRETRY_SIM") == "":
		skipReason = "PAYRETRY_SIM is not set (the path of the payretry-sim binary; see README.md)"
	}
	if skipReason != "" {
		return m.Run()
	}
	url, stop, err := startSim("--api-key", apiKey, "--threads", "4", "--slow-ms", "3000")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	simURL = url
	return m.Run()
}

func need(t *testing.T) {
	t.Helper()
	if skipReason == "" {
		return
	}
	if os.Getenv("PAYRETRY_REQUIRE_BINDINGS") == "1" {
		t.Fatalf("PAYRETRY_REQUIRE_BINDINGS=1 but %s", skipReason)
	}
	t.Skip(skipReason)
}

// newOrder returns an order id unique in this run (the simulator is shared).
func newOrder(t *testing.T) string {
	name := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-"))
	return fmt.Sprintf("go-%s-%d-%d", name, os.Getpid(), orderSeq.Add(1))
}

func body(order string) []byte {
	return []byte(fmt.Sprintf(`{"order_id":%q,"amount":1000,"currency":"eur"}`, order))
}

// config is a fast stripe configuration against the simulator, with the
// memory: ledger; retry and extra replace or add members ("ledger" too).
func config(t *testing.T, retry map[string]any, extra map[string]any) string {
	t.Helper()
	r := map[string]any{"max_attempts": 4, "connect_timeout_ms": 300, "attempt_timeout_ms": 300,
		"deadline_ms": 6000, "backoff_base_ms": 20, "backoff_cap_ms": 200, "min_attempt_ms": 50, "jitter_seed": 7}
	for k, v := range retry {
		r[k] = v
	}
	c := map[string]any{"provider": "stripe", "base_url": simURL, "create_path": "/v1/payments",
		"auth": map[string]any{"bearer": apiKey}, "retry": r, "ledger": "memory:"}
	for k, v := range extra {
		c[k] = v
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newClient(t *testing.T, cfg string, opts ...payretry.Option) *payretry.Client {
	t.Helper()
	c, err := payretry.NewClient(cfg, opts...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// slowClient lets one attempt last long enough for the simulator's 3 s 'slow'.
func slowClient(t *testing.T) *payretry.Client {
	return newClient(t, config(t, map[string]any{"attempt_timeout_ms": 5000, "deadline_ms": 10000}, nil))
}

func script(t *testing.T, order string, faults ...string) {
	t.Helper()
	scriptAt(t, simURL, order, faults...)
}

// scriptAt scripts the faults of one order at the simulator at base.
func scriptAt(t *testing.T, base, order string, faults ...string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"order_id": order, "faults": faults})
	resp, err := http.Post(base+"/__admin/script", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("script %s: %d %s", order, resp.StatusCode, msg)
	}
}

func charges(t *testing.T, order string) int {
	t.Helper()
	resp, err := http.Get(simURL + "/__admin/truth?order_id=" + order)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var truth struct {
		Charges int `json:"charges"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&truth); err != nil {
		t.Fatal(err)
	}
	return truth.Charges
}

func submit(t *testing.T, c *payretry.Client, order string) *payretry.Result {
	t.Helper()
	r, err := c.Submit(context.Background(), payretry.Payment{OrderID: order, Body: body(order)})
	if err != nil {
		t.Fatalf("Submit %s: %v", order, err)
	}
	return r
}

func TestSubmitSucceeds(t *testing.T) {
	need(t)
	var mu sync.Mutex
	var lines []string
	c := newClient(t, config(t, nil, nil), payretry.WithLogger(func(level int, line string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, line)
	}))
	order := newOrder(t)
	r := submit(t, c, order)
	if r.Outcome != payretry.Succeeded || r.Delivery != payretry.Delivered || r.HTTPStatus != 200 {
		t.Fatalf("got %v/%v/%d: %s", r.Outcome, r.Delivery, r.HTTPStatus, r.JSON)
	}
	if r.Attempts != 1 || r.FromLedger || r.ProviderPaymentID == "" || r.IdempotencyKey == "" || r.OrderID != order {
		t.Fatalf("unexpected result %+v", r)
	}
	if !json.Valid(r.Body) || !json.Valid([]byte(r.JSON)) {
		t.Fatalf("body %q / json %q", r.Body, r.JSON)
	}
	if r.Outcome.String() != "SUCCEEDED" || r.Delivery.String() != "delivered" {
		t.Fatalf("names %s %s", r.Outcome, r.Delivery)
	}
	if n := charges(t, order); n != 1 {
		t.Fatalf("charges = %d", n)
	}
	again := submit(t, c, order)
	if again.Outcome != payretry.Succeeded || !again.FromLedger || again.IdempotencyKey != r.IdempotencyKey {
		t.Fatalf("resubmit: %+v", again)
	}
	rec, err := c.LedgerGet(order)
	if err != nil {
		t.Fatalf("LedgerGet: %v", err)
	}
	if p := rec.Payment; p.OrderID != order || p.State != "SUCCEEDED" || p.IdempotencyKey != r.IdempotencyKey ||
		p.Attempts != 1 || p.ProviderPaymentID != r.ProviderPaymentID || p.CreatedAt.Time().IsZero() {
		t.Fatalf("LedgerGet: %+v", rec.Payment)
	}
	if len(rec.Attempts) != 1 || rec.Attempts[0].Kind != "send" || rec.Attempts[0].HTTPStatus != 200 || !json.Valid([]byte(rec.JSON)) {
		t.Fatalf("LedgerGet attempts: %+v (%s)", rec.Attempts, rec.JSON)
	}
	stats, err := c.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	// One run, one attempt; the resubmit was answered from the ledger.
	if stats.Attempts != 1 || stats.Outcomes["SUCCEEDED"] != 1 || stats.LedgerAnswers["SUCCEEDED"] != 1 ||
		stats.InFlight != 0 || !json.Valid([]byte(stats.JSON)) {
		t.Fatalf("Stats: %+v (%s)", stats, stats.JSON)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) == 0 {
		t.Fatal("the logger saw no line")
	}
}

func TestLostResponseThenSuccessChargesOnce(t *testing.T) {
	need(t)
	c := newClient(t, config(t, nil, nil))
	order := newOrder(t)
	script(t, order, "lost_response", "none")
	r := submit(t, c, order)
	if r.Outcome != payretry.Succeeded || r.Attempts != 2 {
		t.Fatalf("got %v after %d attempts: %s", r.Outcome, r.Attempts, r.JSON)
	}
	// The typed attempts: the first lost (may have been processed), then a
	// replayed success of the same key after a backoff.
	if len(r.AttemptLog) != 2 || !r.Recorded || r.Elapsed <= 0 {
		t.Fatalf("detail: %+v", r)
	}
	first, second := r.AttemptLog[0], r.AttemptLog[1]
	if first.Number != 1 || first.HTTPStatus != 0 || first.TransportError == "" || !first.MayHaveProcessed ||
		first.DelayMS <= 0 || first.StartedUnixMS.Time().IsZero() {
		t.Errorf("attempt 1: %+v", first)
	}
	if second.Number != 2 || second.HTTPStatus != 200 || !second.Replayed {
		t.Errorf("attempt 2: %+v", second)
	}
	if n := charges(t, order); n != 1 {
		t.Fatalf("charges = %d", n)
	}
}

func TestDeclineIsFailedNotAnError(t *testing.T) {
	need(t)
	c := newClient(t, config(t, nil, nil))
	order := newOrder(t)
	script(t, order, "decline")
	r, err := c.Submit(context.Background(), payretry.Payment{OrderID: order, Body: body(order)})
	if err != nil {
		t.Fatalf("a decline is not an error: %v", err)
	}
	if r.Outcome != payretry.Failed || r.Error == "" {
		t.Fatalf("got %v (%q): %s", r.Outcome, r.Error, r.JSON)
	}
	if n := charges(t, order); n != 0 {
		t.Fatalf("charges = %d", n)
	}
}

func TestOtherBodyForTheSameOrderIsMismatch(t *testing.T) {
	need(t)
	c := newClient(t, config(t, nil, nil))
	order := newOrder(t)
	submit(t, c, order)
	other := []byte(fmt.Sprintf(`{"order_id":%q,"amount":2000,"currency":"eur"}`, order))
	r, err := c.Submit(context.Background(), payretry.Payment{OrderID: order, Body: other})
	if r != nil || !errors.Is(err, payretry.ErrMismatch) || errors.Is(err, payretry.ErrConfig) {
		t.Fatalf("got %v, %v", r, err)
	}
	var pe *payretry.Error
	if !errors.As(err, &pe) || pe.Code != payretry.CodeMismatch || pe.Message == "" {
		t.Fatalf("not a detailed *Error: %#v", err)
	}
	if n := charges(t, order); n != 1 {
		t.Fatalf("charges = %d", n)
	}
}

func TestBadConfigIsErrConfig(t *testing.T) {
	need(t)
	for _, cfg := range []string{
		`{"provider":"stripe","base_url":"http://127.0.0.1:1","ledger":"memory:","retry":{"max_attempts":"many"}}`,
		`{"provider":"no-such-provider","base_url":"http://127.0.0.1:1","ledger":"memory:"}`,
		`{"provider":"stripe","base_url":"http://127.0.0.1:1"}`,
		`not json`,
	} {
		c, err := payretry.NewClient(cfg)
		if c != nil || !errors.Is(err, payretry.ErrConfig) {
			t.Errorf("%s: got %v, %v", cfg, c, err)
		}
	}
	_, err := payretry.NewClient(`{"x":1}` + "\x00")
	if !errors.Is(err, payretry.ErrInvalid) {
		t.Errorf("NUL in config: %v", err)
	}
}

// A config without "ledger" used to keep keys in memory silently; now the
// in-memory ledger must be written out, and the error says so.
func TestConfigWithoutALedgerIsErrConfigNamingIt(t *testing.T) {
	need(t)
	c, err := payretry.NewClient(`{"provider":"stripe","base_url":"http://127.0.0.1:1"}`)
	if c != nil || !errors.Is(err, payretry.ErrConfig) {
		t.Fatalf("got %v, %v", c, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "ledger: is required") || !strings.Contains(msg, `"memory:"`) {
		t.Errorf("message: %s", msg)
	}
	c, err = payretry.NewClient(`{"provider":"stripe","base_url":"http://127.0.0.1:1","ledger":"memory:"}`)
	if err != nil {
		t.Fatalf("memory: written out: %v", err)
	}
	_ = c.Close()
}

func TestContextDeadlineShortensThePayment(t *testing.T) {
	need(t)
	c := slowClient(t)
	order := newOrder(t)
	script(t, order, "slow")
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := c.Submit(ctx, payretry.Payment{OrderID: order, Body: body(order)})
	elapsed := time.Since(start)
	if elapsed > 1500*time.Millisecond {
		t.Fatalf("took %v: the ctx deadline did not shorten the payment", elapsed)
	}
	if err != nil {
		t.Fatalf("expected the engine's own verdict, got %v", err)
	}
	if r.Outcome != payretry.Unknown || r.Delivery != payretry.MaybeProcessed {
		t.Fatalf("got %v/%v: %s", r.Outcome, r.Delivery, r.JSON)
	}
}

func TestCancelAbandonsTheWaitAndKeepsThePayment(t *testing.T) {
	need(t)
	c := slowClient(t)
	order := newOrder(t)
	script(t, order, "slow")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(150*time.Millisecond, cancel)
	start := time.Now()
	r, err := c.Submit(ctx, payretry.Payment{OrderID: order, Body: body(order)})
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Fatalf("cancel took %v", elapsed)
	}
	var ab *payretry.AbandonedError
	if r != nil || !errors.Is(err, context.Canceled) || !errors.As(err, &ab) || ab.OrderID != order {
		t.Fatalf("got %v, %v", r, err)
	}
	// Recorded, not lost: the ledger knows the order while the call runs on.
	if _, err := c.LedgerGet(order); err != nil {
		t.Fatalf("LedgerGet right after cancel: %v", err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		r = submit(t, c, order)
		if r.Outcome != payretry.InProgress || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.Outcome != payretry.Succeeded || !r.FromLedger {
		t.Fatalf("later Submit: %v from_ledger=%v: %s", r.Outcome, r.FromLedger, r.JSON)
	}
	if n := charges(t, order); n != 1 {
		t.Fatalf("charges = %d", n)
	}
}

func TestCloseTwiceAndUseAfterClose(t *testing.T) {
	need(t)
	c, err := payretry.NewClient(config(t, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	order := newOrder(t)
	if _, err := c.Submit(context.Background(), payretry.Payment{OrderID: order, Body: body(order)}); !errors.Is(err, payretry.ErrClosed) {
		t.Fatalf("Submit after Close: %v", err)
	}
	if _, err := c.Stats(); !errors.Is(err, payretry.ErrClosed) {
		t.Fatalf("Stats after Close: %v", err)
	}
}

func TestConcurrentSubmits(t *testing.T) {
	need(t)
	var logged atomic.Int64
	c := newClient(t, config(t, nil, nil), payretry.WithLogger(func(int, string) { logged.Add(1) }))
	const workers, each = 16, 4
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				order := newOrder(t)
				r, err := c.Submit(context.Background(), payretry.Payment{OrderID: order, Body: body(order)})
				switch {
				case err != nil:
					errs <- err
				case r.Outcome != payretry.Succeeded:
					errs <- fmt.Errorf("%s: %v %s", order, r.Outcome, r.JSON)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if logged.Load() == 0 {
		t.Error("no log line")
	}
}

// lostFourTimes makes an UNKNOWN payment: stripe's only lookup is a same-key re-send.
func lostFourTimes(t *testing.T, c *payretry.Client, order string) {
	t.Helper()
	script(t, order, "lost_response", "lost_response", "lost_response", "lost_response")
	r := submit(t, c, order)
	if r.Outcome != payretry.Unknown {
		t.Fatalf("got %v: %s", r.Outcome, r.JSON)
	}
}

func TestReconcileSettlesAnUnknownPaymentWithItsBody(t *testing.T) {
	need(t)
	c := newClient(t, config(t, nil, nil))
	order := newOrder(t)
	lostFourTimes(t, c, order)
	q, err := c.Query(context.Background(), order)
	if err != nil || q.Outcome != payretry.Unknown {
		t.Fatalf("Query: %v, %v", q, err)
	}
	rep, err := c.Reconcile(context.Background(), nil)
	if err != nil || rep.Unknown != 1 || rep.Examined != 1 {
		t.Fatalf("without bodies: %+v, %v", rep, err)
	}
	var asked []string
	rep, err = c.Reconcile(context.Background(), func(id string) ([]byte, bool) {
		asked = append(asked, id)
		return body(id), true
	})
	if err != nil || rep.Succeeded != 1 || len(rep.Payments) != 1 || len(asked) != 1 || asked[0] != order {
		t.Fatalf("with bodies: %+v (asked %v), %v", rep, asked, err)
	}
	if n := charges(t, order); n != 1 {
		t.Fatalf("charges = %d", n)
	}
	r := submit(t, c, order)
	if r.Outcome != payretry.Succeeded || !r.FromLedger {
		t.Fatalf("after reconcile: %+v", r)
	}
}

func TestPanicInBodyForDoesNotCrossIntoC(t *testing.T) {
	need(t)
	c := newClient(t, config(t, nil, nil))
	order := newOrder(t)
	lostFourTimes(t, c, order)
	rep, err := c.Reconcile(context.Background(), func(string) ([]byte, bool) { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "boom") || rep.Unknown != 1 {
		t.Fatalf("got %+v, %v", rep, err)
	}
}

func TestQueryAndLedgerGetOfAnUnknownOrderAreNotFound(t *testing.T) {
	need(t)
	c := newClient(t, config(t, nil, nil))
	if _, err := c.Query(context.Background(), "never-submitted"); !errors.Is(err, payretry.ErrNotFound) {
		t.Fatalf("Query: %v", err)
	}
	if _, err := c.LedgerGet("never-submitted"); !errors.Is(err, payretry.ErrNotFound) {
		t.Fatalf("LedgerGet: %v", err)
	}
}

func TestUnclosedClientIsReclaimed(t *testing.T) {
	need(t)
	func() {
		c, err := payretry.NewClient(config(t, nil, nil), payretry.WithLogger(func(int, string) {}))
		if err != nil {
			t.Fatal(err)
		}
		order := newOrder(t)
		if _, err := c.Submit(context.Background(), payretry.Payment{OrderID: order, Body: body(order)}); err != nil {
			t.Fatal(err)
		}
	}()
	// The cleanup (a backstop only) frees it; this must neither crash nor race.
	runtime.GC()
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
}
