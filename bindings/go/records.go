package payretry

// Typed views of the JSON the library writes: a result's attempts, the
// client's counters, and the ledger's rows. Each keeps the JSON it was
// decoded from, so that a member added by a later library is not lost.

import (
	"encoding/json"
	"time"
)

// UnixMS is a time as the library writes it: Unix milliseconds (0: none).
type UnixMS int64

// Time returns t as a time.Time (the zero Time for 0).
func (t UnixMS) Time() time.Time {
	if t == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(t))
}

// Attempt is one attempt of a Result (an element of the result JSON's
// "attempts"). HTTPStatus is 0 when no response arrived.
type Attempt struct {
	Number            int    `json:"attempt"` // 1-based
	StartedUnixMS     UnixMS `json:"started_unix_ms"`
	ElapsedMS         int64  `json:"elapsed_ms"`
	HTTPStatus        int    `json:"http_status"`
	TransportError    string `json:"transport_error"`
	Verdict           string `json:"verdict"`
	Reason            string `json:"reason"`
	MayHaveProcessed  bool   `json:"may_have_processed"`
	DelayMS           int64  `json:"delay_ms"`     // the wait after it, when one followed
	DelaySource       string `json:"delay_source"` // "backoff" or "retry_after", when one followed
	ProviderRequestID string `json:"provider_request_id"`
	Replayed          bool   `json:"replayed"`
	ReusedConnection  bool   `json:"reused_connection"`
}

// resultDetail is the part of the result JSON the typed accessors do not give.
type resultDetail struct {
	ElapsedMS   int64     `json:"elapsed_ms"`
	Queried     bool      `json:"queried"`
	Recorded    bool      `json:"recorded"`
	LedgerError string    `json:"ledger_error"`
	Attempts    []Attempt `json:"attempts"`
}

// decodeDetail fills the members of r read from its JSON.
func (r *Result) decodeDetail() error {
	var d resultDetail
	if err := json.Unmarshal([]byte(r.JSON), &d); err != nil {
		return err
	}
	r.Elapsed = time.Duration(d.ElapsedMS) * time.Millisecond
	r.Queried, r.Recorded, r.LedgerError, r.AttemptLog = d.Queried, d.Recorded, d.LedgerError, d.Attempts
	return nil
}

// Stats is the client's counters (pay_client_stats).
type Stats struct {
	Attempts           int64            `json:"attempts"`
	Retries            int64            `json:"retries"`
	RetriesByReason    map[string]int64 `json:"retries_by_reason"`
	Outcomes           map[string]int64 `json:"outcomes"`       // payment runs by outcome ("SUCCEEDED", ...)
	LedgerAnswers      map[string]int64 `json:"ledger_answers"` // submissions answered from the ledger, by outcome
	Settlements        map[string]int64 `json:"settlements"`    // payments a lookup examined, by the outcome it left
	LookupAttempts     int64            `json:"lookup_attempts"`
	InFlight           int64            `json:"in_flight"` // payments running now
	BudgetExhausted    int64            `json:"budget_exhausted"`
	BudgetTokens       int64            `json:"budget_tokens"`
	ReplaysBlocked     int64            `json:"replays_blocked"`
	LedgerBatches      int64            `json:"ledger_batches"`       // group commits of the engine threads
	LedgerBatchEntries int64            `json:"ledger_batch_entries"` // writes in them
	LedgerBatchMax     int64            `json:"ledger_batch_max"`     // the most writes in one
	ConnectionsOpened  int64            `json:"connections_opened"`
	JSON               string           `json:"-"` // the counters as the library wrote them
}

// LedgerPayment is one payment's row in the ledger.
type LedgerPayment struct {
	OrderID           string `json:"order_id"`
	IdempotencyKey    string `json:"idempotency_key"`
	State             string `json:"state"`    // "PENDING", "IN_FLIGHT", "SUCCEEDED", "FAILED", "UNKNOWN"
	Delivery          string `json:"delivery"` // "not_sent", "maybe_processed", "delivered"; "" while none
	Detail            string `json:"detail"`
	ProviderPaymentID string `json:"provider_payment_id"`
	ProviderStatus    string `json:"provider_status"`
	// MoneyState: fulfil on MoneyPaid (or MoneyAuthorized where you capture
	// later), never on a SUCCEEDED State alone.
	MoneyState   MoneyState `json:"money_state"`
	HTTPStatus   int        `json:"http_status"`
	Attempts     int        `json:"attempts"`
	CreatedAt    UnixMS     `json:"created_at"`
	KeyExpiresAt UnixMS     `json:"key_expires_at"`
	LeaseOwner   string     `json:"lease_owner"`
	LeaseUntil   UnixMS     `json:"lease_until"`
	UpdatedAt    UnixMS     `json:"updated_at"`
}

// LedgerAttempt is one attempt or lookup in a payment's ledger history.
type LedgerAttempt struct {
	Number            int        `json:"attempt"`
	Kind              string     `json:"kind"` // "send" (a create) or "lookup"
	StartedAt         UnixMS     `json:"started_at"`
	EndedAt           UnixMS     `json:"ended_at"`
	HTTPStatus        int        `json:"http_status"`
	TransportError    string     `json:"transport_error"`
	Verdict           string     `json:"verdict"`
	Reason            string     `json:"reason"`
	MoneyState        MoneyState `json:"money_state"` // what its answer said about the money (MoneyUnknown: nothing)
	DelayMS           *int64     `json:"delay_ms"`    // nil: no wait followed
	ProviderRequestID string     `json:"provider_request_id"`
	Replayed          bool       `json:"replayed"`
	// nil: recorded before the ledger kept it, which counts as "may have".
	MayHaveProcessed *bool `json:"may_have_processed"`
}

// LedgerRecord is what the ledger holds about one payment (pay_ledger_get).
type LedgerRecord struct {
	Payment  LedgerPayment   `json:"payment"`
	Attempts []LedgerAttempt `json:"attempts"`
	JSON     string          `json:"-"` // the record as the library wrote it
}
