package payretry_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	payretry "github.com/payretry/payretry/bindings/go"
)

// syncBuffer is a bytes.Buffer safe for the engine threads' log calls.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestWithSlogLogsEachLineAsARecord(t *testing.T) {
	need(t)
	var out syncBuffer
	logger := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := newClient(t, config(t, nil, nil), payretry.WithSlog(logger))
	ok, unknown := newOrder(t), newOrder(t)
	submit(t, c, ok)
	lostFourTimes(t, c, unknown)

	var outcomes, attempts int
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		switch rec["msg"] {
		case "payretry attempt":
			attempts++
			if rec["level"] != "INFO" || rec["idempotency_key"] == "" || rec["attempt"] == nil {
				t.Errorf("attempt record: %s", line)
			}
		case "payretry outcome":
			outcomes++
			want := map[string]string{ok: "INFO", unknown: "WARN"}[rec["order_id"].(string)]
			if rec["level"] != want || rec["outcome"] == nil {
				t.Errorf("outcome record (want level %s): %s", want, line)
			}
			if _, has := rec["event"]; has {
				t.Errorf("event is the message, not an attribute: %s", line)
			}
		}
	}
	if attempts != 5 || outcomes != 2 {
		t.Fatalf("%d attempt and %d outcome records, want 5 and 2:\n%s", attempts, outcomes, out.String())
	}
}
