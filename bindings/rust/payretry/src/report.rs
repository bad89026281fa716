//! Typed forms of the JSON the library writes (cargo feature `serde`):
//! a result with its attempts ([`PaymentReport`]), the client's counters
//! ([`Stats`]), a reconcile report ([`ReconcileReport`]) and the ledger's
//! records ([`LedgerRecord`], [`LedgerPayment`]). Each derives `Serialize`
//! and `Deserialize`; members a newer library adds are ignored, and an
//! outcome, delivery or money state name this binding does not know reads
//! as `Unknown`, `MaybeProcessed` or `MoneyState::Unknown` (never as a
//! settled or paid payment). A `money_state` an older library does not
//! write reads as `MoneyState::Unknown`.

use crate::client::Client;
use crate::error::{code, Error};
use crate::ledger::{LedgerFilter, LedgerState};
use crate::reconcile::BodyFor;
use crate::result::{Delivery, MoneyState, Outcome, PayResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One HTTP attempt of a result (`pay_result_json`'s `attempts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Attempt {
    /// 1-based.
    pub attempt: u32,
    pub started_unix_ms: i64,
    pub elapsed_ms: i64,
    /// `None` without a response.
    pub http_status: Option<u16>,
    pub transport_error: Option<String>,
    /// The verdict `classify()` gave the answer, e.g. `"success"`, `"retry"`.
    pub verdict: String,
    pub reason: String,
    pub may_have_processed: bool,
    /// The delay that followed, when one did.
    pub delay_ms: Option<i64>,
    /// `"backoff"` or `"retry_after"`, when a delay followed.
    pub delay_source: Option<String>,
    pub provider_request_id: Option<String>,
    pub replayed: bool,
    pub reused_connection: bool,
}

/// A whole result as [`PayResult::json`] writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PaymentReport {
    pub outcome: Outcome,
    pub delivery: Delivery,
    pub order_id: String,
    pub idempotency_key: String,
    /// 0 when no response decided the outcome.
    pub http_status: u16,
    pub provider_payment_id: Option<String>,
    pub provider_status: Option<String>,
    /// Where the money is: fulfil on `Paid` (or `Authorized` where you
    /// capture later), never on `Outcome::Succeeded` alone.
    #[serde(default)]
    pub money_state: MoneyState,
    pub error: Option<String>,
    pub elapsed_ms: i64,
    pub from_ledger: bool,
    pub queried: bool,
    /// Whether the ledger holds this result (see `ledger_error`).
    pub recorded: bool,
    pub ledger_error: Option<String>,
    pub attempts: Vec<Attempt>,
}

/// The counts of outcomes in [`Stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub struct OutcomeCounts {
    pub succeeded: u64,
    pub failed: u64,
    pub unknown: u64,
    pub in_progress: u64,
}

/// The client's counters ([`Client::stats`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Stats {
    pub attempts: u64,
    pub retries: u64,
    pub retries_by_reason: BTreeMap<String, u64>,
    pub outcomes: OutcomeCounts,
    pub budget_exhausted: u64,
    pub budget_tokens: i64,
    pub replays_blocked: u64,
    pub ledger_batches: u64,
    pub ledger_batch_entries: u64,
    pub ledger_batch_max: u64,
    pub connections_opened: u64,
}

/// A payment reconcile could not settle, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReconcileFailure {
    pub order_id: String,
    pub error: String,
}

/// What [`Client::reconcile`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReconcileReport {
    pub examined: u64,
    #[serde(rename = "SUCCEEDED")]
    pub succeeded: u64,
    #[serde(rename = "FAILED")]
    pub failed: u64,
    #[serde(rename = "UNKNOWN")]
    pub unknown: u64,
    #[serde(rename = "IN_PROGRESS")]
    pub in_progress: u64,
    pub errors: u64,
    pub payments: Vec<PaymentReport>,
    pub failures: Vec<ReconcileFailure>,
}

/// A payment's row in the ledger. Times are Unix milliseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LedgerPayment {
    pub order_id: String,
    pub idempotency_key: String,
    pub state: LedgerState,
    /// `None` before anything was sent.
    pub delivery: Option<Delivery>,
    pub detail: Option<String>,
    pub provider_payment_id: Option<String>,
    pub provider_status: Option<String>,
    /// Where the money is: fulfil on `Paid` (or `Authorized` where you
    /// capture later), never on a `Succeeded` state alone.
    #[serde(default)]
    pub money_state: MoneyState,
    pub http_status: u16,
    pub attempts: u32,
    pub created_at: i64,
    pub key_expires_at: i64,
    pub lease_owner: Option<String>,
    pub lease_until: i64,
    pub updated_at: i64,
}

/// One attempt or lookup as the ledger recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LedgerAttempt {
    pub attempt: u32,
    /// `"send"` (an attempt of the payment) or `"lookup"`.
    pub kind: String,
    pub started_at: i64,
    pub ended_at: i64,
    /// 0 without a response.
    pub http_status: u16,
    pub transport_error: Option<String>,
    pub verdict: String,
    pub reason: String,
    /// What its answer said about the money (`Unknown`: nothing).
    #[serde(default)]
    pub money_state: MoneyState,
    pub delay_ms: Option<i64>,
    pub provider_request_id: Option<String>,
    pub replayed: bool,
    /// `None`: recorded before the ledger kept it (read it as "may have").
    pub may_have_processed: Option<bool>,
}

/// One payment and its history ([`Client::ledger_get`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LedgerRecord {
    pub payment: LedgerPayment,
    pub attempts: Vec<LedgerAttempt>,
}

/// Parses JSON the library wrote; a failure here is a binding/library
/// mismatch, reported as an internal error naming what did not parse.
fn parse<T: serde::de::DeserializeOwned>(json: &str, what: &str) -> Result<T, Error> {
    serde_json::from_str(json).map_err(|e| Error {
        code: code::ERROR,
        message: format!("{what}: the library's JSON does not parse: {e}"),
    })
}

impl PayResult {
    /// The whole result, attempts included, as a typed report.
    pub fn report(&self) -> Result<PaymentReport, Error> {
        parse(self.json(), "result")
    }
}

impl Client {
    /// [`Client::stats`], typed.
    pub fn stats_report(&self) -> Result<Stats, Error> {
        parse(&self.stats()?, "stats")
    }

    /// [`Client::reconcile`], typed.
    pub fn reconcile_report(
        &self,
        body_for: Option<&BodyFor<'_>>,
    ) -> Result<ReconcileReport, Error> {
        parse(&self.reconcile(body_for)?, "reconcile report")
    }

    /// [`Client::ledger_get`], typed.
    pub fn ledger_record(&self, order_id: &str) -> Result<LedgerRecord, Error> {
        parse(&self.ledger_get(order_id)?, "ledger record")
    }

    /// [`Client::ledger_list`], typed.
    pub fn ledger_payments(&self, filter: &LedgerFilter) -> Result<Vec<LedgerPayment>, Error> {
        parse(&self.ledger_list(filter)?, "ledger list")
    }
}
