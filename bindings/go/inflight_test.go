package payretry_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	payretry "github.com/payretry/payretry/bindings/go"
)

// osThreads is this process's OS thread count (Threads: in /proc/self/status).
func osThreads() (int, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Threads:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("/proc/self/status has no Threads: line (%v)", sc.Err())
}

// A thousand Submits in flight together must not hold a thousand OS threads:
// they wait on the engine threads, not in C. The simulator answers each
// request 3 s after it arrived, so a run that ends within twice that had
// every payment in flight at once (each one started before the first could
// end); the thread count is sampled all along.
func TestThousandSubmitsInFlightHoldFewOSThreads(t *testing.T) {
	need(t)
	const payments, latency, threadLimit = 1000, 3 * time.Second, 64
	base := startTestSim(t, "--api-key", apiKey, "--threads", "2",
		"--latency-ms", strconv.Itoa(int(latency/time.Millisecond)))
	cfg := config(t, map[string]any{"max_attempts": 1, "attempt_timeout_ms": 15000, "connect_timeout_ms": 5000,
		"deadline_ms": 20000}, map[string]any{"base_url": base, "max_connections": 2 * payments})
	c := newClient(t, cfg)

	before, err := osThreads()
	if err != nil {
		t.Fatalf("counting OS threads: %v", err)
	}
	var peak atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if n, err := osThreads(); err == nil && int64(n) > peak.Load() {
				peak.Store(int64(n))
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()

	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, payments)
	for i := 0; i < payments; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			order := newOrder(t)
			r, err := c.Submit(context.Background(), payretry.Payment{OrderID: order, Body: body(order)})
			switch {
			case err != nil:
				errs <- err
			case r.Outcome != payretry.Succeeded || r.Attempts != 1:
				errs <- fmt.Errorf("%s: %v after %d attempts: %s", order, r.Outcome, r.Attempts, r.JSON)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopSampling)
	<-sampled
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	t.Logf("%d payments in %v; OS threads: %d before, at most %d while in flight", payments,
		elapsed.Round(time.Millisecond), before, peak.Load())
	if elapsed >= 2*latency {
		t.Errorf("took %v (>= 2 x the simulator's %v latency): the payments were not all in flight at once", elapsed, latency)
	}
	if peak.Load() >= threadLimit {
		t.Errorf("%d OS threads with %d payments in flight (limit %d): waiting Submits hold threads", peak.Load(), payments, threadLimit)
	}
	var stats simStats
	adminGet(t, base, "/__admin/stats", &stats)
	var truth simTruth
	adminGet(t, base, "/__admin/truth", &truth)
	if stats.Requests != payments || stats.Charges != payments || truth.Orders != payments || truth.Duplicates != 0 {
		t.Errorf("simulator saw %d requests, %d charges, %d orders, %d duplicates; want %d, %d, %d, 0",
			stats.Requests, stats.Charges, truth.Orders, truth.Duplicates, payments, payments, payments)
	}
}
