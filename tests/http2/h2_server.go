// h2_server: a payment endpoint over TLS that speaks HTTP/2 (Go's net/http
// negotiates it through ALPN), for the test that payretry's concurrent engine
// multiplexes many payments over one connection when the provider offers it.
//
//	h2_server CERT_PEM_OUT
//
// Writes its self-signed certificate (for 127.0.0.1) to CERT_PEM_OUT, prints
// "listening on 127.0.0.1:PORT", then serves until stdin closes:
//
//	POST /v1/payments  held 100 ms, then 200 {"id":"pay_N","status":"succeeded"};
//	                   a repeated Idempotency-Key gets the stored answer
//	GET  /__stats      {"connections":N,"http2":N,"max_concurrent":N,"charges":N}
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

type stats struct {
	mu            sync.Mutex
	connections   int
	http2         int
	inFlight      int
	maxConcurrent int
	charges       int
	byKey         map[string]string
}

func selfSigned(pemOut string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "payretry h2 test provider"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(pemOut, certPEM, 0o600); err != nil {
		return tls.Certificate{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: h2_server CERT_PEM_OUT")
		os.Exit(2)
	}
	cert, err := selfSigned(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "h2_server:", err)
		os.Exit(1)
	}
	st := &stats{byKey: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/payments", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		io.Copy(io.Discard, r.Body)
		st.mu.Lock()
		if r.ProtoMajor == 2 {
			st.http2++
		}
		st.inFlight++
		if st.inFlight > st.maxConcurrent {
			st.maxConcurrent = st.inFlight
		}
		st.mu.Unlock()
		time.Sleep(100 * time.Millisecond) // the provider takes its time: requests overlap
		st.mu.Lock()
		st.inFlight--
		key := r.Header.Get("Idempotency-Key")
		body, seen := st.byKey[key]
		if !seen {
			st.charges++
			body = fmt.Sprintf(`{"id":"pay_%d","object":"payment","status":"succeeded"}`, st.charges)
			st.byKey[key] = body
		}
		st.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if seen {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		io.WriteString(w, body)
	})
	mux.HandleFunc("/__stats", func(w http.ResponseWriter, r *http.Request) {
		st.mu.Lock()
		defer st.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]int{"connections": st.connections, "http2": st.http2,
			"max_concurrent": st.maxConcurrent, "charges": st.charges})
	})
	srv := &http.Server{
		Handler:   mux,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateNew {
				st.mu.Lock()
				st.connections++
				st.mu.Unlock()
			}
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "h2_server:", err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	os.Stdout.Sync()
	go func() {
		io.Copy(io.Discard, os.Stdin) // the test closes our stdin (or dies): stop
		os.Exit(0)
	}()
	if err := srv.ServeTLS(ln, "", ""); err != nil {
		fmt.Fprintln(os.Stderr, "h2_server:", err)
		os.Exit(1)
	}
}
