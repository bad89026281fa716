// The main() around a Go fragment of README.md or docs/*.md:
// run_snippets.py writes the fragment into snippet.go as the body of
//
//	func snippet(ctx context.Context, configJSON string, body []byte) error
//
// (a fragment may `return err`), with the imports it names, and runs this
// module against payretry-sim. DOCS_CONFIG is the config (the simulator's
// address and key, a ledger in the run's own folder), DOCS_BODY a payment
// body for order-1042 (its order in metadata.order_id, as the stripe profile
// requires).
package main

import (
	"context"
	"fmt"
	"os"
)

func main() {
	config, body := os.Getenv("DOCS_CONFIG"), os.Getenv("DOCS_BODY")
	if config == "" || body == "" {
		fmt.Fprintln(os.Stderr, "docs-harness: DOCS_CONFIG and DOCS_BODY must be set (run through tests/docs/run_snippets.py)")
		os.Exit(2)
	}
	if err := snippet(context.Background(), config, []byte(body)); err != nil {
		fmt.Fprintln(os.Stderr, "docs-harness: the fragment returned", err)
		os.Exit(1)
	}
}
