// Go peers for the payretry benchmark: hashicorp/go-retryablehttp posting the same JSON body
// and Idempotency-Key header as payretry, and stripe-go creating a PaymentIntent against the
// simulator's Stripe-shaped form endpoint. N goroutines keep N payments in flight; one JSON
// line with throughput, latency, CPU (getrusage of this process) and outcome counts.
//
// usage: gopeer -client retryablehttp|stripe-go -url URL -payments N -inflight K -prefix P
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	stripe "github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/paymentintent"
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

func peakRSSMB() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024.0 // KiB on Linux
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

// A transport with a keep-alive pool as large as the in-flight level, as every client in the
// table gets: without it Go keeps 2 idle connections per host and re-handshakes the rest.
func transport(inflight int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = inflight + 16
	t.MaxIdleConnsPerHost = inflight + 16
	return t
}

// stripe-go streams its form body with chunked transfer encoding; payretry-sim answers 411 to
// chunked requests (its HTTP parser takes Content-Length only). This wrapper buffers the body
// and sends it with a Content-Length: same bytes, same headers otherwise, same retries.
type fixedLength struct{ next http.RoundTripper }

func (f fixedLength) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.ContentLength > 0 {
		return f.next.RoundTrip(req)
	}
	data, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.ContentLength = int64(len(data))
	r.TransferEncoding = nil
	r.Body = io.NopCloser(bytes.NewReader(data))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	return f.next.RoundTrip(r)
}

func main() {
	client := flag.String("client", "retryablehttp", "retryablehttp or stripe-go")
	url := flag.String("url", "", "simulator base URL")
	payments := flag.Int("payments", 100, "payments")
	inflight := flag.Int("inflight", 1, "payments in flight")
	prefix := flag.String("prefix", "go-", "order id prefix")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "gopeer: -url is required")
		os.Exit(2)
	}

	var submit func(order string) string
	switch *client {
	case "retryablehttp":
		c := retryablehttp.NewClient()
		c.RetryMax = 3
		c.Logger = nil
		c.HTTPClient.Transport = transport(*inflight)
		c.HTTPClient.Timeout = 10 * time.Second
		endpoint := *url + "/v1/payments"
		submit = func(order string) string {
			body := []byte(`{"order_id":"` + order + `","amount":1000,"currency":"usd"}`)
			req, err := retryablehttp.NewRequest("POST", endpoint, body)
			if err != nil {
				return "error"
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "key-"+order)
			resp, err := c.Do(req)
			if err != nil {
				return "error"
			}
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			switch {
			case err != nil:
				return "error"
			case resp.StatusCode == 200 && json.Valid(data):
				return "succeeded"
			case resp.StatusCode == 402:
				return "failed"
			default:
				return "error"
			}
		}
	case "stripe-go":
		stripe.Key = "sk_test_bench"
		backend := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
			URL:               stripe.String(*url),
			MaxNetworkRetries: stripe.Int64(2),
			HTTPClient:        &http.Client{Transport: fixedLength{transport(*inflight)}, Timeout: 80 * time.Second},
			LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		})
		stripe.SetBackend(stripe.APIBackend, backend)
		submit = func(order string) string {
			params := &stripe.PaymentIntentParams{
				Amount:   stripe.Int64(1000),
				Currency: stripe.String("usd"),
			}
			params.AddMetadata("order_id", order)
			params.SetIdempotencyKey("key-" + order)
			pi, err := paymentintent.New(params)
			if err != nil {
				if os.Getenv("GOPEER_DEBUG") != "" {
					fmt.Fprintln(os.Stderr, err)
				}
				if se, ok := err.(*stripe.Error); ok && se.Type == stripe.ErrorTypeCard {
					return "failed"
				}
				return "error"
			}
			if pi.Status == stripe.PaymentIntentStatusSucceeded {
				return "succeeded"
			}
			return "error"
		}
	default:
		fmt.Fprintln(os.Stderr, "gopeer: unknown -client", *client)
		os.Exit(2)
	}

	lat := make([]float64, *payments)
	outcomes := make([]string, *payments)
	var next int64 = -1
	cpu0 := cpuSeconds()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < *inflight; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(atomic.AddInt64(&next, 1))
				if i >= *payments {
					return
				}
				t0 := time.Now()
				outcomes[i] = submit(fmt.Sprintf("%s%d", *prefix, i))
				lat[i] = float64(time.Since(t0).Microseconds()) / 1000.0
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	cpu := cpuSeconds() - cpu0
	sort.Float64s(lat)
	counts := map[string]int{}
	for _, o := range outcomes {
		counts[o]++
	}
	name := "go-retryablehttp"
	if *client == "stripe-go" {
		name = "stripe-go"
	}
	out := map[string]any{
		"client": name, "ledger": "-", "inflight": *inflight, "payments": *payments,
		"seconds": secs, "payments_per_s": float64(*payments) / secs,
		"p50_ms": percentile(lat, 0.50), "p99_ms": percentile(lat, 0.99),
		"cpu_s": cpu, "cpu_s_per_1000": cpu * 1000 / float64(*payments),
		"peak_rss_mb": peakRSSMB(), "outcomes": counts, "mode": "goroutines",
	}
	var buf bytes.Buffer
	json.NewEncoder(&buf).Encode(out)
	os.Stdout.Write(buf.Bytes())
}
