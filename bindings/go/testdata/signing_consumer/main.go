// Command signing_consumer is a payretry user whose provider wants every
// request signed: its request hook adds
//
//	X-Signature: v1=<hex HMAC-SHA256(secret, METHOD "\n" PATH_AND_QUERY "\n" BODY)>
//
// to every payment attempt and every status lookup. Run against
// payretry-sim --hmac-secret (started here from $PAYRETRY_SIM, playing
// Checkout.com, whose lookup is a GET with a query string), it checks that:
//
//   - concurrent payments, one of them retried, all succeed and are charged once;
//   - a payment left UNKNOWN by lost responses is settled by a signed lookup (Query);
//   - the simulator verified exactly as many signatures as the hook made, and refused none;
//   - a client signing with the wrong secret gets nothing charged, and the
//     simulator counts its bad signatures.
//
// It prints what it saw and exits 0 when every check held, 1 otherwise.
package main

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	payretry "github.com/payretry/payretry/bindings/go"
)

const apiKey = "sk_test_signing_consumer"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "signing_consumer: FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("signing_consumer: PASS")
}

// signer returns a request hook signing with secret; calls counts the
// requests it signed.
func signer(secret []byte, calls *atomic.Int64) payretry.RequestHook {
	return func(info payretry.AttemptInfo, h *payretry.Headers) error {
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(info.Method + "\n" + info.Path + "\n"))
		mac.Write(info.Body)
		if err := h.Add("X-Signature", "v1="+hex.EncodeToString(mac.Sum(nil))); err != nil {
			return err
		}
		calls.Add(1)
		return nil
	}
}

func run() error {
	simPath := os.Getenv("PAYRETRY_SIM")
	if simPath == "" {
		return errors.New("PAYRETRY_SIM is not set (the path of payretry-sim)")
	}
	secretBytes := make([]byte, 32)
	if _, err := rand.Read(secretBytes); err != nil {
		return err
	}
	secret := []byte(hex.EncodeToString(secretBytes))
	sim, err := startSim(simPath, "--profile", "checkout_com", "--api-key", apiKey, "--hmac-secret", string(secret))
	if err != nil {
		return err
	}
	defer sim.stop()

	var signed atomic.Int64
	client, err := payretry.NewClient(sim.config(), payretry.WithRequestHook(signer(secret, &signed)))
	if err != nil {
		return err
	}
	defer client.Close()
	ctx := context.Background()
	prefix := fmt.Sprintf("sc-%d-%d", os.Getpid(), time.Now().UnixNano())

	// Concurrent payments; the first one is rate limited (a 429 is not
	// processed: safe to re-send), so its second attempt is signed too (same
	// key, same bytes).
	orders := make([]string, 12)
	for i := range orders {
		orders[i] = fmt.Sprintf("%s-ok-%d", prefix, i)
	}
	if err := sim.script(orders[0], "429", "none"); err != nil {
		return err
	}
	payments := make([]payretry.Payment, len(orders))
	for i, o := range orders {
		payments[i] = payretry.Payment{OrderID: o, Body: body(o)}
	}
	var wg sync.WaitGroup
	results := make([]*payretry.Result, len(orders))
	errs := make([]error, len(orders))
	for i := range payments {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = client.Submit(ctx, payments[i])
		}()
	}
	wg.Wait()
	for i, o := range orders {
		if errs[i] != nil {
			return fmt.Errorf("order %s: %w", o, errs[i])
		}
		if results[i].Outcome != payretry.Succeeded {
			return fmt.Errorf("order %s: %v, want SUCCEEDED: %s", o, results[i].Outcome, results[i].JSON)
		}
	}
	if results[0].Attempts != 2 {
		return fmt.Errorf("order %s: %d attempts, want 2 (a 429, then a success)", orders[0], results[0].Attempts)
	}
	fmt.Printf("%d signed payments succeeded (one after a 429)\n", len(orders))

	// A lost response leaves a Checkout.com payment UNKNOWN (a re-send after
	// a lost answer could charge again there); a signed lookup
	// (GET /payments?reference=...) finds it charged.
	lost := prefix + "-lost"
	if err := sim.script(lost, "lost_response"); err != nil {
		return err
	}
	r, err := client.Submit(ctx, payretry.Payment{OrderID: lost, Body: body(lost)})
	if err != nil {
		return fmt.Errorf("order %s: %w", lost, err)
	}
	if r.Outcome != payretry.Unknown {
		return fmt.Errorf("order %s: %v after its response was lost, want UNKNOWN: %s", lost, r.Outcome, r.JSON)
	}
	q, err := client.Query(ctx, lost)
	if err != nil {
		return fmt.Errorf("query of %s: %w", lost, err)
	}
	if q.Outcome != payretry.Succeeded || !q.Queried {
		return fmt.Errorf("query of %s: %v (queried %v), want SUCCEEDED by a lookup: %s", lost, q.Outcome, q.Queried, q.JSON)
	}
	fmt.Printf("an UNKNOWN payment was settled SUCCEEDED by a signed lookup\n")

	for _, o := range append(orders, lost) {
		if n, err := sim.charges(o); err != nil || n != 1 {
			return fmt.Errorf("order %s charged %d times (%v), want once", o, n, err)
		}
	}
	st, err := sim.stats()
	if err != nil {
		return err
	}
	fmt.Printf("the hook signed %d requests; the simulator verified %d, refused %d\n",
		signed.Load(), st.SignedRequests, st.BadSignatures)
	if st.SignedRequests != signed.Load() || st.BadSignatures != 0 {
		return fmt.Errorf("simulator: %d signed requests and %d bad signatures, want %d and 0",
			st.SignedRequests, st.BadSignatures, signed.Load())
	}

	// The wrong secret: refused, and nothing charged.
	var wrongCalls atomic.Int64
	wrong, err := payretry.NewClient(sim.config(), payretry.WithRequestHook(signer([]byte("not-the-secret"), &wrongCalls)))
	if err != nil {
		return err
	}
	defer wrong.Close()
	refused := prefix + "-wrong-secret"
	wr, err := wrong.Submit(ctx, payretry.Payment{OrderID: refused, Body: body(refused)})
	switch {
	case err != nil:
		fmt.Printf("wrong secret: %v\n", err)
	case wr.Outcome == payretry.Succeeded:
		return fmt.Errorf("order %s signed with the wrong secret SUCCEEDED: %s", refused, wr.JSON)
	default:
		fmt.Printf("wrong secret: %v (HTTP %d)\n", wr.Outcome, wr.HTTPStatus)
	}
	if n, err := sim.charges(refused); err != nil || n != 0 {
		return fmt.Errorf("order %s signed with the wrong secret was charged %d times (%v)", refused, n, err)
	}
	after, err := sim.stats()
	if err != nil {
		return err
	}
	if after.BadSignatures < 1 || after.BadSignatures != wrongCalls.Load() || after.SignedRequests != st.SignedRequests {
		return fmt.Errorf("after the wrong secret: %d bad signatures (the hook signed %d), %d signed (was %d)",
			after.BadSignatures, wrongCalls.Load(), after.SignedRequests, st.SignedRequests)
	}
	fmt.Printf("the wrong secret: %d requests refused, nothing charged\n", after.BadSignatures)
	return nil
}

func body(order string) []byte {
	return []byte(fmt.Sprintf(`{"order_id":%q,"amount":1000,"currency":"EUR"}`, order))
}

// sim is a running payretry-sim.
type sim struct {
	cmd *exec.Cmd
	url string
}

func startSim(path string, args ...string) (*sim, error) {
	cmd := exec.Command(path, append([]string{"--port", "0"}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	s := &sim{cmd: cmd}
	addr := make(chan string, 1)
	go func() {
		defer close(addr) // at EOF: the simulator exited without listening
		re := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+)`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			s.stop()
			return nil, errors.New("payretry-sim exited before printing 'listening on'")
		}
		s.url = "http://" + a
		return s, nil
	case <-time.After(10 * time.Second):
		s.stop()
		return nil, errors.New("payretry-sim did not print 'listening on' within 10 s")
	}
}

func (s *sim) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

func (s *sim) config() string {
	c, _ := json.Marshal(map[string]any{
		"provider": "checkout_com", "base_url": s.url, "auth": map[string]any{"bearer": apiKey}, "ledger": "memory:",
		"retry": map[string]any{"max_attempts": 3, "connect_timeout_ms": 500, "attempt_timeout_ms": 1000,
			"deadline_ms": 8000, "backoff_base_ms": 20, "backoff_cap_ms": 100},
	})
	return string(c)
}

func (s *sim) script(order string, faults ...string) error {
	b, _ := json.Marshal(map[string]any{"order_id": order, "faults": faults})
	resp, err := http.Post(s.url+"/__admin/script", "application/json", strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("scripting %s: %d %s", order, resp.StatusCode, msg)
	}
	return nil
}

func (s *sim) get(path string, v any) error {
	resp, err := http.Get(s.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, msg)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func (s *sim) charges(order string) (int, error) {
	var truth struct {
		Charges int `json:"charges"`
	}
	err := s.get("/__admin/truth?order_id="+order, &truth)
	return truth.Charges, err
}

type simStats struct {
	SignedRequests int64
	BadSignatures  int64
}

// stats reads the signature counters, which a simulator without
// --hmac-secret support does not have (an error, not a zero).
func (s *sim) stats() (simStats, error) {
	var all map[string]json.RawMessage
	if err := s.get("/__admin/stats", &all); err != nil {
		return simStats{}, err
	}
	var st simStats
	for name, to := range map[string]*int64{"signed_requests": &st.SignedRequests, "bad_signatures": &st.BadSignatures} {
		v, ok := all[name]
		if !ok {
			return simStats{}, fmt.Errorf("the simulator's stats have no %q (built before --hmac-secret?)", name)
		}
		if err := json.Unmarshal(v, to); err != nil {
			return simStats{}, fmt.Errorf("stats %q: %w", name, err)
		}
	}
	return st, nil
}
