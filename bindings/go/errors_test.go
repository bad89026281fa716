package payretry_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	payretry "github.com/payretry/payretry/bindings/go"
)

// An error reads as the code's name, which a reader can look up, then the
// library's message: "payretry: PAY_ECONFIG: provider: unknown provider ...".
func TestAnErrorShowsTheCodesNameAndTheLibrarysMessage(t *testing.T) {
	need(t)
	_, err := payretry.NewClient(`{"provider":"stripee","base_url":"http://127.0.0.1:9","ledger":"memory:"}`)
	if err == nil {
		t.Fatal("an unknown provider was accepted")
	}
	const want = `payretry: PAY_ECONFIG: provider: unknown provider "stripee"; did you mean "stripe"?`
	if msg := err.Error(); !strings.HasPrefix(msg, want) {
		t.Errorf("got  %s\nwant %s ...", msg, want)
	}
	if got := payretry.ErrorCode(-99).String(); got != "PAY_E(-99)" {
		t.Errorf("a code this binding does not know: %s", got)
	}
}

// The names are errors.h's, row by row: a code added to the C table without
// a name here fails. The header is the installed one (PAYRETRY_PREFIX).
func TestEveryCodeIsNamedAsErrorsHNamesIt(t *testing.T) {
	need(t)
	path := filepath.Join(os.Getenv("PAYRETRY_PREFIX"), "include", "payretry", "errors.h")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(string(text), "\n") {
		row, ok := strings.CutPrefix(strings.TrimSpace(line), "XX(")
		if !ok {
			continue
		}
		parts := strings.SplitN(row, ",", 3)
		name := strings.TrimSpace(parts[0])
		value, err := strconv.Atoi(strings.TrimSpace(parts[1]))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if value == 0 {
			continue // PAY_OK: a success, never an Error
		}
		if got := payretry.ErrorCode(value).String(); got != name {
			t.Errorf("code %d: named %s, errors.h says %s", value, got, name)
		}
		rows++
	}
	if rows < 13 {
		t.Errorf("only %d codes read from %s", rows, path)
	}
}
