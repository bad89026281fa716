package payretry_test

// Starting payretry-sim (PAYRETRY_SIM) and reading its admin endpoints.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// startSim starts payretry-sim on a free port with args and returns its base
// URL and a function that stops it.
func startSim(args ...string) (string, func(), error) {
	sim := exec.Command(os.Getenv("PAYRETRY_SIM"), append([]string{"--port", "0"}, args...)...)
	sim.Stderr = os.Stderr
	stdout, err := sim.StdoutPipe()
	if err == nil {
		err = sim.Start()
	}
	if err != nil {
		return "", nil, fmt.Errorf("starting payretry-sim: %w", err)
	}
	stop := func() {
		_ = sim.Process.Kill()
		_ = sim.Wait()
	}
	addr := make(chan string, 1)
	go func() {
		defer close(addr) // at EOF: the simulator exited without listening
		re := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if mm := re.FindStringSubmatch(sc.Text()); mm != nil {
				addr <- mm[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout) // keep draining
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			stop()
			return "", nil, fmt.Errorf("payretry-sim %v exited before printing 'listening on'", args)
		}
		return "http://" + a, stop, nil
	case <-time.After(10 * time.Second):
		stop()
		return "", nil, fmt.Errorf("payretry-sim %v did not print 'listening on' within 10 s", args)
	}
}

// startTestSim starts a simulator of its own for one test, stopped at its end.
func startTestSim(t *testing.T, args ...string) string {
	t.Helper()
	url, stop, err := startSim(args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

// adminGet decodes GET base+path (an admin endpoint) into v.
func adminGet(t *testing.T, base, path string, v any) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, msg)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// simStats is the part of /__admin/stats the tests read.
type simStats struct {
	Requests       int `json:"requests"`
	RepeatCreates  int `json:"repeat_creates"`
	Charges        int `json:"charges"`
	SignedRequests int `json:"signed_requests"`
	BadSignatures  int `json:"bad_signatures"`
}

// simTruth is /__admin/truth without the per-order map.
type simTruth struct {
	Charges    int `json:"charges"`
	Orders     int `json:"orders"`
	Duplicates int `json:"duplicates"`
}
