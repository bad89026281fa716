package payretry_test

import (
	"context"
	"encoding/json"
	"testing"

	payretry "github.com/payretry/payretry/bindings/go"
)

// The names are pay_money_state_name's, in the C enum's order (PAY_MONEY_UNKNOWN
// = 0 ... PAY_MONEY_FAILED = 7); a value it does not name is "?", as there.
func TestMoneyStateNamesAreTheLibrarysAndAnUnnamedValueIsAQuestionMark(t *testing.T) {
	want := []string{"unknown", "awaiting_customer", "pending", "authorized", "paid", "partly_refunded", "refunded", "failed"}
	states := []payretry.MoneyState{payretry.MoneyUnknown, payretry.MoneyAwaitingCustomer, payretry.MoneyPending,
		payretry.MoneyAuthorized, payretry.MoneyPaid, payretry.MoneyPartlyRefunded, payretry.MoneyRefunded, payretry.MoneyFailed}
	for i, m := range states {
		if int(m) != i || m.String() != want[i] {
			t.Fatalf("state %d: %d %q, want %d %q", i, int(m), m.String(), i, want[i])
		}
		var back payretry.MoneyState
		if err := json.Unmarshal([]byte(`"`+want[i]+`"`), &back); err != nil || back != m {
			t.Fatalf("%q read back as %v (%v)", want[i], back, err)
		}
	}
	for _, m := range []payretry.MoneyState{-1, 8} {
		if m.String() != "?" {
			t.Fatalf("MoneyState(%d).String() = %q, want \"?\"", int(m), m.String())
		}
	}
}

// A state a later library appends must not break decoding the record, and
// must not read as one that fulfils.
func TestAMoneyStateNameThisPackageDoesNotKnowReadsAsUnknown(t *testing.T) {
	var rec payretry.LedgerRecord
	doc := `{"payment":{"order_id":"o1","state":"SUCCEEDED","money_state":"chargeback_reversed"},
	         "attempts":[{"attempt":1,"money_state":"paid"},{"attempt":2}]}`
	if err := json.Unmarshal([]byte(doc), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Payment.OrderID != "o1" || rec.Payment.MoneyState != payretry.MoneyUnknown {
		t.Fatalf("payment: %+v", rec.Payment)
	}
	if len(rec.Attempts) != 2 || rec.Attempts[0].MoneyState != payretry.MoneyPaid || rec.Attempts[1].MoneyState != payretry.MoneyUnknown {
		t.Fatalf("attempts: %+v", rec.Attempts)
	}
	out, err := json.Marshal(rec.Attempts[0])
	if err != nil || !json.Valid(out) {
		t.Fatalf("%s %v", out, err)
	}
	var back map[string]any
	if err := json.Unmarshal(out, &back); err != nil || back["money_state"] != "paid" {
		t.Fatalf("marshalled: %s", out)
	}
}

// moneyStateIn is the "money_state" member of the JSON object doc.
func moneyStateIn(t *testing.T, doc string) string {
	t.Helper()
	var m struct {
		MoneyState *string `json:"money_state"`
	}
	if err := json.Unmarshal([]byte(doc), &m); err != nil || m.MoneyState == nil {
		t.Fatalf("no money_state in %s (%v)", doc, err)
	}
	return *m.MoneyState
}

// Whatever the engine read from the provider, Result.MoneyState is the C
// accessor's value, the result JSON names the same state, and the ledger's
// row and its entries carry one.
func TestResultAndLedgerCarryTheMoneyStateTheLibraryReports(t *testing.T) {
	need(t)
	c := newClient(t, config(t, nil, nil))
	ok, declined := newOrder(t), newOrder(t)
	script(t, declined, "decline")
	for _, order := range []string{ok, declined} {
		r, err := c.Submit(context.Background(), payretry.Payment{OrderID: order, Body: body(order)})
		if err != nil {
			t.Fatal(err)
		}
		if got := moneyStateIn(t, r.JSON); got != r.MoneyState.String() {
			t.Fatalf("%s: MoneyState %v, JSON %q", order, r.MoneyState, got)
		}
		rec, err := c.LedgerGet(order)
		if err != nil {
			t.Fatal(err)
		}
		var raw struct {
			Payment  json.RawMessage   `json:"payment"`
			Attempts []json.RawMessage `json:"attempts"`
		}
		if err := json.Unmarshal([]byte(rec.JSON), &raw); err != nil || len(raw.Attempts) != len(rec.Attempts) || len(raw.Attempts) == 0 {
			t.Fatalf("%s: %v %s", order, err, rec.JSON)
		}
		if got := moneyStateIn(t, string(raw.Payment)); got != rec.Payment.MoneyState.String() || rec.Payment.MoneyState != r.MoneyState {
			t.Fatalf("%s: ledger row %v (JSON %q), result %v", order, rec.Payment.MoneyState, got, r.MoneyState)
		}
		for i, a := range raw.Attempts {
			if got := moneyStateIn(t, string(a)); got != rec.Attempts[i].MoneyState.String() {
				t.Fatalf("%s entry %d: %v, JSON %q", order, i, rec.Attempts[i].MoneyState, got)
			}
		}
	}
}
