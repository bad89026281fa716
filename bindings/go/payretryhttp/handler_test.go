package payretryhttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	payretry "github.com/payretry/payretry/bindings/go"
	"github.com/payretry/payretry/bindings/go/payretryhttp"
)

// sample is one exposition line: a payretry_ metric, optional labels, a
// value, an optional timestamp.
var sample = regexp.MustCompile(`^payretry_[a-zA-Z0-9_:]+(\{[^}]*\})? ([-+]?[0-9.]+([eE][-+]?[0-9]+)?|NaN|[+-]Inf)( -?[0-9]+)?$`)

func newClient(t *testing.T) *payretry.Client {
	t.Helper()
	if os.Getenv("PAYRETRY_PREFIX") == "" {
		if os.Getenv("PAYRETRY_REQUIRE_BINDINGS") == "1" {
			t.Fatal("PAYRETRY_REQUIRE_BINDINGS=1 but PAYRETRY_PREFIX is not set")
		}
		t.Skip("PAYRETRY_PREFIX is not set (an install prefix of libpayretry; see ../README.md)")
	}
	// No request is sent: the counters are there from the start.
	c, err := payretry.NewClient(`{"provider":"stripe","base_url":"http://127.0.0.1:1","ledger":"memory:"}`)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMetricsHandlerServesThePrometheusText(t *testing.T) {
	c := newClient(t)
	defer c.Close()
	srv := httptest.NewServer(payretryhttp.MetricsHandler(c))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != payretryhttp.ContentType {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var help, typ, samples int
	for _, line := range strings.Split(strings.TrimRight(string(text), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "# HELP payretry_"):
			help++
		case strings.HasPrefix(line, "# TYPE payretry_"):
			typ++
		case sample.MatchString(line):
			samples++
		default:
			t.Errorf("not an exposition line of a payretry_ metric: %q", line)
		}
	}
	if help == 0 || typ == 0 || samples == 0 {
		t.Fatalf("%d HELP, %d TYPE, %d sample lines:\n%s", help, typ, samples, text)
	}

	resp, err = http.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}

	c.Close()
	resp, err = http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("after Close: %d", resp.StatusCode)
	}
}
