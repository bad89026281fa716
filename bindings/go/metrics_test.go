package payretry_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	payretry "github.com/payretry/payretry/bindings/go"
)

func TestMetricsCountPaymentRuns(t *testing.T) {
	need(t)
	c := newClient(t, config(t, nil, nil))
	for i := 0; i < 3; i++ {
		submit(t, c, newOrder(t))
	}
	declined := newOrder(t)
	script(t, declined, "decline")
	submit(t, c, declined)
	text, err := c.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# TYPE payretry_payments_total counter",
		`payretry_payments_total{outcome="SUCCEEDED",delivery="delivered"} 3`,
		`payretry_payments_total{outcome="FAILED",delivery="delivered"} 1`,
		"# TYPE payretry_attempt_duration_seconds histogram",
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("no line %q in:\n%s", want, text)
		}
	}
	c.Close()
	if _, err := c.Metrics(); !errors.Is(err, payretry.ErrClosed) {
		t.Fatalf("Metrics after Close: %v", err)
	}
}

func TestReopenLogStartsTheFileAgainAfterItWasMoved(t *testing.T) {
	need(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "payretry.jsonl")
	c := newClient(t, config(t, nil, map[string]any{"log": map[string]any{"path": path, "level": "info"}}))
	before, after := newOrder(t), newOrder(t)
	submit(t, c, before)
	rotated := path + ".1"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	if err := c.ReopenLog(); err != nil {
		t.Fatalf("ReopenLog: %v", err)
	}
	submit(t, c, after)
	old, err := os.ReadFile(rotated)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no new log file after ReopenLog: %v", err)
	}
	if !strings.Contains(string(old), before) || strings.Contains(string(old), after) {
		t.Errorf("the rotated file:\n%s", old)
	}
	if !strings.Contains(string(fresh), after) || strings.Contains(string(fresh), before) {
		t.Errorf("the new file:\n%s", fresh)
	}
	// A file that cannot be opened: ErrIO, and the old one stays in use.
	if err := os.Rename(dir, dir+".gone"); err != nil {
		t.Fatal(err)
	}
	defer os.Rename(dir+".gone", dir)
	if err := c.ReopenLog(); !errors.Is(err, payretry.ErrIO) {
		t.Fatalf("ReopenLog into a missing directory: %v", err)
	}
	last := newOrder(t)
	if _, err := c.Submit(context.Background(), payretry.Payment{OrderID: last, Body: body(last)}); err != nil {
		t.Fatalf("Submit after a failed reopen: %v", err)
	}
}
