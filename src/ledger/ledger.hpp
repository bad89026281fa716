// The ledger: the durable state machine of every payment (docs/design.md "Ledger").
//
//   PENDING --claim--> IN_FLIGHT --> SUCCEEDED | FAILED | UNKNOWN
//                          ^                              |
//                          +------ resume / reconcile ----+   (same key, only while it is valid)
//
// A payment's row, with its idempotency key and request fingerprint, is
// committed before the first byte is sent. Claiming is one atomic
// conditional update that takes a lease; every later write is fenced by the
// lease owner, so a worker whose lease was taken over cannot overwrite the
// new owner's state. The ledger stores state, never HTTP, and never a body,
// card number, token or credential.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "money_state.hpp"
#include "operation_rules.hpp"

namespace payretry {

enum class PaymentState { pending, in_flight, succeeded, failed, unknown };

const char* state_name(PaymentState s);                     // "PENDING", ...
std::optional<PaymentState> parse_state(std::string_view s);

struct PaymentRow {
  std::string order_id;
  std::string idempotency_key;
  std::string fingerprint;          // hex HMAC-SHA256 of method, path and body
  PaymentState state = PaymentState::pending;
  std::string delivery;             // "" | "not_sent" | "maybe_processed" | "delivered"
  std::string detail;               // why the state is what it is (redacted)
  std::string provider_payment_id;
  std::string provider_status;
  // Where the money is (money_state.hpp), moved only forward (money_moves) by
  // settlements and by the events that are provably this payment's
  // (event_moves_money). Schema 5.
  MoneyState money_state = MoneyState::unknown;
  int http_status = 0;
  int attempts = 0;
  int64_t created_at = 0;           // Unix ms, like every time here
  int64_t key_expires_at = 0;       // after this the key is never re-sent
  std::string lease_owner;
  int64_t lease_until = 0;
  int64_t updated_at = 0;
  // The scope of the client that made the payment (docs/design.md "Scope"):
  // an opaque id (a keyed hash of its profile, base URL, credential identity
  // and scoping headers) that never holds a secret. Only a client of the
  // same scope acts on the row. "" for a row written before rows had one
  // (schema 2 and older): unscoped.
  std::string scope;
  // The payment's own submission headers (a Stripe-Account, a tenant
  // header), as JSON text [["name","value"],...], "" for none: they scope
  // the provider's store, so every lookup of the payment and every re-send
  // carries them. Set once, when the row is created; never a credential
  // (PaymentFlow refuses one).
  std::string submission_headers;
  // The path the payment was POSTed to when the submit gave its own
  // (pay_submit_options.path), "" for the client's create path: a path may
  // name an account too, so re-sends take it again, and a lookup (which
  // knows only the profile's path) cannot prove absence for such a row.
  std::string submission_path;
  // Schema 6 (operation_rules.hpp): what the row is. A payment's create
  // (operation create, parent and ref ""), or an operation on the payment
  // of order `parent_order_id`, named `operation_ref` by its caller, whose
  // order_id is operation_row_id(parent_order_id, operation, operation_ref).
  // A row written before schema 6 reads as a create.
  OperationKind operation = OperationKind::create;
  std::string parent_order_id;
  std::string operation_ref;
  // In the provider's amount units. A create: what the payment asked (-1
  // not known, as for every row written before schema 6). An operation:
  // its amount as the guard decided it (the rest, when the caller asked
  // -1 and the rest was known; 0 for a cancel).
  int64_t amount = -1;
};

// One entry of a payment's history: a send of the payment request, or a
// status lookup at the provider. Whether the payment may have been processed
// is read from these entries, never from a column that a later write can
// overwrite.
struct AttemptEntry {
  int number = 0;
  std::string kind = "send";        // "send" | "lookup"
  int64_t started_at = 0;
  int64_t ended_at = 0;
  int http_status = 0;
  std::string transport_error;
  std::string verdict;
  std::string reason;
  int64_t delay_ms = -1;
  std::string provider_request_id;
  bool replayed = false;
  // send: whether the provider may have acted on it. nullopt for entries
  // written before this was recorded: read as "may have".
  std::optional<bool> processed;
  // The money state the profile read from this entry's answer or event
  // (unknown: none). For an event it is what moves the row when the event
  // lands (event_moves_money), so a kept event carries it until then.
  // Schema 5; older entries read unknown.
  MoneyState money_state = MoneyState::unknown;
};

// A provider's notification about one payment, verified by the caller and
// reduced to what the ledger keeps: an id and a history entry. Never a
// body, a header, a signature or a secret: the ledger sees none of them.
struct LedgerEvent {
  std::string scope;                // the receiving client's scope (PaymentRow::scope)
  std::string scheme;               // "stripe", "adyen", ...
  std::string event_id;             // the provider's event id, or the fields that identify it
  std::string order_id;             // the payment it names ("" when it names only a provider id)
  std::string provider_payment_id;  // "" when it names only the order
  int64_t received_at = 0;          // Unix ms
  // The history entry it adds: kind "webhook" (any other kind is refused:
  // an event must never read as a send), verdict one of the kEvent* below,
  // the provider's status word (or event type) in `reason`. Its number is
  // the ledger's to give (the row's next) and is 0 while the event is kept.
  AttemptEntry entry;
};

// What an event found, as its entry's verdict: the provider says the
// payment succeeded, or failed, or something that settles nothing (a
// pending status, a type the profile does not map).
inline constexpr const char* kEventSucceeded = "event_succeeded";
inline constexpr const char* kEventFailed = "event_failed";
inline constexpr const char* kEventNoted = "event_noted";

// The state an event's entry moves a row in `from` to, when it lands: one
// rule for every backend (the SQL ones say it again in their statements,
// held equal by the conformance tests) and for the SPIN model. Forward
// only: an UNKNOWN or PENDING row takes the event's final state; a final
// row never moves (a contrary event is recorded in its history, and the
// receiver reports the conflict); an IN_FLIGHT row never gets the event
// (it is kept until the run settles). nullopt: the state stays.
std::optional<PaymentState> event_moves(PaymentState from, const AttemptEntry& entry);
// Whether an event landing on `row` gives it the event's provider payment
// id: only when the row has none and the event moves it (event_moves). A
// noted event (a pending status, or a failure that names the order but was
// never shown to be this row's payment) may be another payment's of the same
// order; its id would steer every later lookup of the row to that payment,
// whose "failed" would end an order whose own payment was charged, and the
// row's own events, naming its real id, would no longer land.
bool event_teaches_id(const PaymentRow& row, const LedgerEvent& event);
// Whether an event landing on `row` moves the row's money state (by
// money_moves, from its entry's money_state): only an event that is
// provably this row's payment's. It names the provider id the row holds,
// or teaches it (event_teaches_id); an event without a provider id only
// when it moves the row's state (event_moves). An event of another payment
// of the same order must never say `paid` or `authorized` for this one:
// the merchant would ship goods for a payment that never moved money.
bool event_moves_money(const PaymentRow& row, const LedgerEvent& event);
// The row's detail once an event moved it.
std::string event_settled_detail(const AttemptEntry& entry);

enum class EventRecording {
  recorded,        // stored, and its entry appended to the row's history
  duplicate,       // (scope, scheme, event_id) was recorded before: nothing changed
  kept_for_later,  // stored unapplied: no row of it in its scope yet, or its row is IN_FLIGHT
};

// The end of one run of attempts.
struct Settlement {
  PaymentState state = PaymentState::unknown;  // succeeded | failed | unknown
  std::string delivery;
  std::string detail;
  // "" keeps the row's: an id once known (from an answer, a lookup or a
  // webhook event) is never forgotten, or an event naming another payment
  // could land on the row by its order alone.
  std::string provider_payment_id;
  std::string provider_status;
  int http_status = 0;
  // What the run read about the money (unknown: nothing). The row moves to
  // money_after(its state, this), never back.
  MoneyState money_state = MoneyState::unknown;
};

// The settlement that leaves `row` as it stands (state UNKNOWN unless it is
// final), and a row with `s` applied: for settling a claimed row back.
Settlement settlement_of(const PaymentRow& row);
PaymentRow with_settlement(PaymentRow row, const Settlement& s);

// The row create_and_claim stores for a new order: the proposal's identity,
// key and fingerprint, IN_FLIGHT under `owner`'s lease, every other column
// at its default. A backend that inserted it answers with this row instead
// of reading it back.
PaymentRow created_row(const PaymentRow& proposed, const std::string& owner, int64_t now, int64_t lease_until);

// ---- operations (operation_rules.hpp) -------------------------------------

// A row's facts as the operation guard reads them.
OperationRun operation_run(PaymentState s);
OperationParent operation_parent(const PaymentRow& row);
OperationSibling operation_sibling(const PaymentRow& row);

// Refuses (LedgerError) a proposal create_operation_and_claim cannot take:
// kind create, ids check_operation_ids refuses, or an order_id other than
// operation_row_id(parent_order_id, operation, operation_ref).
void check_operation_proposal(const PaymentRow& proposed);
// Refuses (LedgerError) an operation row proposed to create_and_claim,
// which would store it past the guard.
void check_create_proposal(const PaymentRow& proposed);

// The guard on the rows a backend read in its transaction: `parent` (the
// row of proposed.parent_order_id, nullopt when none) and `family` (every
// row whose parent_order_id is that order id). "" and `amount` decided
// when allowed (operation_refused).
std::string operation_guard(const PaymentRow& proposed, const std::optional<PaymentRow>& parent,
                            const std::vector<PaymentRow>& family, int64_t& amount);

// Failures of the store itself (locked, read-only, disk full, corrupt,
// server down). Nothing is sent when one of these is thrown before a send.
class LedgerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The durable writes of many payments, applied together (group commit): the
// concurrent engine gathers what its payments need written during one turn of
// its loop and hands them over at once. Each entry has its own answer; one
// entry's failure never fails another. Nothing of an entry may be sent
// before apply() has returned with it done and without error. Each entry
// carries the fencing token of its own claim (`owner`).
struct LedgerBatch {
  struct Create {
    std::string owner;
    PaymentRow proposed;
    int64_t now = 0;
    int64_t lease_until = 0;
    // out
    struct {
      PaymentRow row;
      bool created = false;
      bool key_taken = false;
    } out;
    std::string error;  // a LedgerError's message; empty: done
  };
  struct Record {
    std::string owner;
    std::string order_id;
    AttemptEntry attempt;
    bool ok = false;    // out: false when the lease was lost
    std::string error;
  };
  struct Settle {
    std::string owner;
    std::string order_id;
    std::optional<AttemptEntry> last;
    Settlement settlement;
    int64_t now = 0;
    bool ok = false;
    std::string error;
  };
  std::vector<Create> creates;
  std::vector<Record> records;
  std::vector<Settle> settles;
  bool empty() const { return creates.empty() && records.empty() && settles.empty(); }
};

class Ledger {
 public:
  virtual ~Ledger() = default;

  // Applies every entry of `batch`, each with the meaning of the single call
  // of the same name. The default makes one call (one commit) per entry; a
  // backend overrides it to share one transaction and one flush.
  virtual void apply(LedgerBatch& batch);

  // How many batches each concurrent engine may apply at once, each on a
  // writer thread of its own, so that HTTP goes on during a commit, when
  // `engines` engines of one client share this ledger: 1 (the default) one
  // at a time; more for a store that commits concurrent transactions in
  // parallel; 0 applies each in place on the engine's thread (a ledger that
  // only touches memory, where a hand-over would cost more than the work).
  virtual int concurrent_batches(int /*engines*/) const { return 1; }

  // The per-ledger secret that keys fingerprints: created with the ledger,
  // the same for every process that opens it.
  virtual std::string secret() = 0;

  // Inserts `proposed` as PENDING unless a row for its order id exists, and
  // in the same transaction claims it for `owner` until `lease_until`.
  // Returns the row as it now stands and whether this call created it. A
  // key already used by another order is a LedgerError-free mismatch: the
  // returned row is then that of the *order*, and `key_taken` is set.
  struct CreateOutcome {
    PaymentRow row;
    bool created = false;
    bool key_taken = false;
  };
  virtual CreateOutcome create_and_claim(const PaymentRow& proposed, const std::string& owner,
                                         int64_t now, int64_t lease_until) = 0;

  // An operation (capture, refund, cancel: operation_rules.hpp) on the
  // payment of proposed.parent_order_id, created and claimed as
  // create_and_claim does, in ONE transaction, guarded:
  //  - its row id (proposed.order_id) exists: that row as it stands,
  //    created false, not guarded again (the refund being retried may
  //    itself have moved its payment to partly_refunded);
  //  - else the payment's row and its operation rows are read under a
  //    lock that serialises every operation on that payment (PostgreSQL:
  //    the payment's row FOR UPDATE; SQLite: the write transaction;
  //    memory: the mutex), and operation_refused() decides: refused ->
  //    `refused` says why and nothing is written; allowed -> the row is
  //    inserted and claimed with the amount the guard decided (its key
  //    taken by another row: key_taken, as create_and_claim).
  // Throws LedgerError for a proposal check_operation_proposal refuses.
  struct OperationOutcome : CreateOutcome {
    std::string refused;  // non-empty: nothing written, and why
  };
  virtual OperationOutcome create_operation_and_claim(const PaymentRow& proposed, const std::string& owner,
                                                      int64_t now, int64_t lease_until) = 0;

  // Takes the lease on an existing row: only from PENDING, from UNKNOWN, or
  // from IN_FLIGHT whose lease ended before `now`. True when taken. `owner`
  // is a fencing token new for every claim (never reused by another claim,
  // even of the same client), so that every later write of this run is
  // refused once another claim took the row.
  virtual bool claim(const std::string& order_id, const std::string& owner, int64_t now, int64_t lease_until) = 0;

  // Appends an attempt, fenced by the lease. False when `owner` no longer
  // holds the lease (nothing written).
  virtual bool record_attempt(const std::string& order_id, const std::string& owner, const AttemptEntry& a) = 0;

  // Records the final attempt (if any) and the settlement in one commit,
  // releasing the lease. Fenced like record_attempt.
  virtual bool settle(const std::string& order_id, const std::string& owner, const AttemptEntry* last,
                      const Settlement& s, int64_t now) = 0;

  virtual std::optional<PaymentRow> get(const std::string& order_id) = 0;
  virtual std::vector<AttemptEntry> attempts(const std::string& order_id) = 0;
  // The payment's operation rows (captures, refunds, cancels: every row
  // whose parent_order_id is `order_id`), in row id order; none for an
  // order with none, or for an operation's own row id.
  virtual std::vector<PaymentRow> operations_of(const std::string& order_id) = 0;
  // The row of `scope` that holds the provider id `provider_payment_id`:
  // the first by row id, the row record_event lands an event naming only
  // that id on; nullopt when none does (or the id is "").
  virtual std::optional<PaymentRow> find_by_provider_id(const std::string& scope,
                                                        const std::string& provider_payment_id) = 0;
  // Rows in `state` (all states when nullopt) last updated before
  // `updated_before` (Unix ms; 0 = no limit), and of `scope` when one is
  // given ("" selects the unscoped rows), oldest first, at most `limit`.
  // The scope is a filter of the query itself, so that the rows of other
  // clients on a shared ledger never fill a page (reconcile would then
  // starve).
  virtual std::vector<PaymentRow> list(std::optional<PaymentState> state, int64_t updated_before, int limit,
                                       const std::optional<std::string>& scope) = 0;

  // Deletes every SUCCEEDED and FAILED payment last updated before
  // `updated_before` (Unix ms, > 0), with its history, in one transaction;
  // returns how many. Never an UNKNOWN, PENDING or IN_FLIGHT one: those still
  // need settling, and forgetting one would let its order be paid again. A
  // final row never changes again, so no run can be holding one. (A pruned
  // order submitted again is a new payment: prune only what is past any
  // chance of a re-submission.)
  //
  // A payment and its operation rows go together, only when every one of
  // them is final and last updated before the cut: a payment with an open
  // operation stays (the operation still needs settling, and its lookups
  // name the payment; a re-submission of a forgotten order would be a new
  // payment, and the open operation would then count against it), and an
  // operation row never goes before its payment (the guard would no
  // longer count it, and a refund already made could be made again).
  //
  // The events go with them: those applied to a pruned row, and those kept
  // for later (never applied) received before `updated_before` (see
  // record_event: by then their row has had every chance to appear).
  virtual int64_t prune_settled(int64_t updated_before) = 0;

  // ---- webhook events (docs/design.md "Ledger"), "apply once" -------------
  //
  // In one transaction: if (scope, scheme, event_id) was recorded before,
  // `duplicate` and nothing changes. Otherwise the event is stored, and it
  // lands on its row when the row exists and is not IN_FLIGHT: its entry is
  // appended to the row's history, numbered as the row's next entry; the
  // row takes the event's provider payment id when it has none yet; and the
  // row's state moves as event_moves() says (in the same commit: an event
  // is never recorded without the state change it causes). The answer is
  // then `recorded`. Otherwise (no such row yet, or a row IN_FLIGHT) the
  // event is kept unapplied: `kept_for_later`. A row under a claim is never
  // written beneath it: its run settles it, and its entries are numbered
  // after the count it claimed at.
  //
  // Its row: the order's, in the event's scope, unless that row already has
  // a provider payment id and the event names another (then it is another
  // payment's event, whatever order it names); else the first row (by
  // order id) of the scope with the event's provider payment id.
  // Throws LedgerError for an event check_ledger_event() refuses.
  virtual EventRecording record_event(const LedgerEvent& e) = 0;
  // The events kept for later that name `order_id` or, when not empty,
  // `provider_payment_id`, in `scope`: oldest received first (then by
  // scheme and event id). For a payment that appears (or takes its provider
  // id, or is settled) after its webhook came.
  virtual std::vector<LedgerEvent> kept_events(const std::string& scope, const std::string& order_id,
                                               const std::string& provider_payment_id) = 0;
  // Marks the kept event (scope, scheme, event_id of `e`) applied and lands
  // it on its row in the same transaction, as record_event would have. False when it was applied already, is not
  // stored, or its row is missing or IN_FLIGHT (then it stays kept).
  virtual bool apply_kept_event(const LedgerEvent& e) = 0;
};

// Refuses (LedgerError) an event without a scheme or an event id, one that
// names neither an order nor a provider payment id, and one whose entry is
// not of kind "webhook" (read as a send, it would say the payment may have
// been processed).
void check_ledger_event(const LedgerEvent& e);

// Opens the ledger named by `url`: "memory:" (or "memory:?max_settled=N",
// ledger_memory.hpp), "sqlite:///abs/path.db",
// "postgresql://..." (or "postgres://..."). `secret` overrides the stored
// per-ledger secret when not empty. `timeout_ms` bounds every wait for the
// store (a lock, a pooled connection, a statement); past it the call fails
// with a LedgerError. Throws LedgerError.
std::unique_ptr<Ledger> open_ledger(const std::string& url, const std::string& secret, int64_t timeout_ms = 5000);

// Whether `url` names the memory ledger ("memory:", with or without
// parameters): keys that live in this process only.
bool is_memory_ledger_url(const std::string& url);

}  // namespace payretry
