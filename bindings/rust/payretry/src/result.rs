//! [`PayResult`]: what one submission or query ended as, with its
//! [`Outcome`], [`Delivery`] and [`MoneyState`].

use crate::error::{code, Error};
use crate::ffi_util::borrowed;
use payretry_sys as sys;
use std::ffi::c_char;
use std::fmt;
use std::ptr::NonNull;

/// What the caller may conclude about a payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "SCREAMING_SNAKE_CASE"))]
#[non_exhaustive]
pub enum Outcome {
    /// Accepted and recorded by the provider: the request took effect.
    /// Whether money moved is [`MoneyState`]: never fulfil on this alone.
    Succeeded,
    /// Definitive: the provider will not charge for it.
    Failed,
    /// Another worker holds this order right now.
    InProgress,
    /// May have been processed: never re-create, query or reconcile later.
    /// Last, so that serde reads a name this binding does not know (a newer
    /// library) as this one: the outcome that never leads to a duplicate charge.
    #[cfg_attr(feature = "serde", serde(other))]
    Unknown,
}

/// How far the request got, summed over every attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum Delivery {
    /// No attempt can have been processed by the provider.
    NotSent,
    /// The provider answered definitively.
    Delivered,
    /// Some attempt may have been processed; no answer proves what. (Last, so
    /// that serde can read a name this binding does not know as this one.)
    #[cfg_attr(feature = "serde", serde(other))]
    MaybeProcessed,
}

/// Where the money is, beside whether the request took effect: a
/// [`Outcome::Succeeded`] create of a PayPal order, or of a Stripe
/// PaymentIntent that needs 3-D Secure, has moved no money. Fulfil on
/// [`MoneyState::Paid`] (or [`MoneyState::Authorized`] where you capture
/// later), never on `Succeeded` alone. It only moves forward.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum MoneyState {
    /// Nothing moved; the customer (or your confirm) is next: do not ship.
    AwaitingCustomer,
    /// The provider, a bank or the method is deciding: do not ship.
    Pending,
    /// Held, not captured: capture, then fulfil.
    Authorized,
    /// Captured: fulfil.
    Paid,
    /// Paid, and part of it went back.
    PartlyRefunded,
    /// Paid, and all of it went back.
    Refunded,
    /// Final: no money moved or will; a new try is a new order.
    Failed,
    /// No word read yet, or one the profile does not map: wait, query.
    /// Last, so that serde reads a name this binding does not know (a state
    /// a newer library appended) as this one, which never fulfils.
    #[default]
    #[cfg_attr(feature = "serde", serde(other))]
    Unknown,
}

impl MoneyState {
    /// The library's name of the state (`pay_money_state_name`), e.g. `"paid"`.
    pub fn as_str(self) -> &'static str {
        match self {
            MoneyState::Unknown => "unknown",
            MoneyState::AwaitingCustomer => "awaiting_customer",
            MoneyState::Pending => "pending",
            MoneyState::Authorized => "authorized",
            MoneyState::Paid => "paid",
            MoneyState::PartlyRefunded => "partly_refunded",
            MoneyState::Refunded => "refunded",
            MoneyState::Failed => "failed",
        }
    }

    /// The state of a `pay_money_state` value; one this binding does not
    /// know (a newer library) reads as `Unknown`, as the C name reads "?".
    pub(crate) fn from_c(value: std::ffi::c_int) -> MoneyState {
        match value {
            sys::PAY_MONEY_AWAITING_CUSTOMER => MoneyState::AwaitingCustomer,
            sys::PAY_MONEY_PENDING => MoneyState::Pending,
            sys::PAY_MONEY_AUTHORIZED => MoneyState::Authorized,
            sys::PAY_MONEY_PAID => MoneyState::Paid,
            sys::PAY_MONEY_PARTLY_REFUNDED => MoneyState::PartlyRefunded,
            sys::PAY_MONEY_REFUNDED => MoneyState::Refunded,
            sys::PAY_MONEY_FAILED => MoneyState::Failed,
            _ => MoneyState::Unknown,
        }
    }
}

impl fmt::Display for MoneyState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of one submission, query or ledger read. Owns the C
/// `pay_result` and frees it on drop; it stays valid after its
/// [`Client`](crate::Client) is dropped.
pub struct PayResult {
    raw: NonNull<sys::pay_result>,
}

// SAFETY: result.h: "a pay_result is immutable once returned; any thread may
// read it, and several threads may read it at once. It does not refer to its
// client". PayResult exposes only reads, and frees it once, in Drop.
unsafe impl Send for PayResult {}
unsafe impl Sync for PayResult {}

impl Drop for PayResult {
    fn drop(&mut self) {
        // SAFETY: we own the result; it is freed exactly once.
        unsafe { sys::pay_result_free(self.raw.as_ptr()) }
    }
}

impl PayResult {
    /// # Safety
    /// `raw` is NULL or a result the library returned to us (ours to free).
    pub(crate) unsafe fn from_raw(raw: *mut sys::pay_result) -> Result<PayResult, Error> {
        NonNull::new(raw)
            .map(|raw| PayResult { raw })
            .ok_or_else(|| Error {
                code: code::ERROR,
                message: "no result returned".into(),
            })
    }

    fn ptr(&self) -> *const sys::pay_result {
        self.raw.as_ptr()
    }

    fn str_field(
        &self,
        f: unsafe extern "C" fn(*const sys::pay_result) -> *const c_char,
    ) -> Option<&str> {
        // SAFETY: every string accessor of result.h returns NULL or a string
        // borrowed from the result, valid until pay_result_free (our Drop).
        unsafe { borrowed(f(self.ptr())) }
    }

    /// The outcome. A value this binding does not know (a newer library)
    /// reads as `Unknown`, the one that never leads to a duplicate charge.
    pub fn outcome(&self) -> Outcome {
        // SAFETY: valid result.
        match unsafe { sys::pay_result_outcome(self.ptr()) } {
            sys::PAY_OUTCOME_SUCCEEDED => Outcome::Succeeded,
            sys::PAY_OUTCOME_FAILED => Outcome::Failed,
            sys::PAY_OUTCOME_IN_PROGRESS => Outcome::InProgress,
            _ => Outcome::Unknown,
        }
    }

    /// The delivery class; an unknown value reads as `MaybeProcessed`.
    pub fn delivery(&self) -> Delivery {
        // SAFETY: valid result.
        match unsafe { sys::pay_result_delivery(self.ptr()) } {
            sys::PAY_DELIVERY_NOT_SENT => Delivery::NotSent,
            sys::PAY_DELIVERY_DELIVERED => Delivery::Delivered,
            _ => Delivery::MaybeProcessed,
        }
    }

    /// Where the money is. Fulfil on [`MoneyState::Paid`] (or
    /// [`MoneyState::Authorized`] where you capture later), never on
    /// [`Outcome::Succeeded`] alone.
    pub fn money_state(&self) -> MoneyState {
        // SAFETY: valid result.
        MoneyState::from_c(unsafe { sys::pay_result_money_state(self.ptr()) })
    }

    /// HTTP status of the deciding response; 0 when no response decided it.
    pub fn http_status(&self) -> u16 {
        // SAFETY: valid result.
        let s = unsafe { sys::pay_result_http_status(self.ptr()) };
        u16::try_from(s).unwrap_or(0)
    }

    /// The deciding response's body (empty when there was none).
    pub fn body(&self) -> &[u8] {
        let mut len = 0usize;
        // SAFETY: valid result; the bytes are borrowed from it.
        let p = unsafe { sys::pay_result_body(self.ptr(), &mut len) };
        if p.is_null() || len == 0 {
            return &[];
        }
        // SAFETY: p points to len bytes owned by the result.
        unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
    }

    /// The order id.
    pub fn order_id(&self) -> &str {
        self.str_field(sys::pay_result_order_id).unwrap_or("")
    }

    /// The idempotency key used on every attempt.
    pub fn idempotency_key(&self) -> &str {
        self.str_field(sys::pay_result_idempotency_key)
            .unwrap_or("")
    }

    /// The provider's payment id, when the deciding response had one.
    pub fn provider_payment_id(&self) -> Option<&str> {
        self.str_field(sys::pay_result_provider_payment_id)
    }

    /// The provider's own status word (e.g. "succeeded"), when present.
    pub fn provider_status(&self) -> Option<&str> {
        self.str_field(sys::pay_result_provider_status)
    }

    /// Why the outcome is not plainly SUCCEEDED (e.g. "declined: card_declined").
    pub fn error(&self) -> Option<&str> {
        self.str_field(sys::pay_result_error)
    }

    /// `None` when the ledger holds this result; otherwise why the ledger
    /// could not record it. Treat the result as its outcome says, and never
    /// submit the order again as a new payment.
    pub fn ledger_error(&self) -> Option<&str> {
        self.str_field(sys::pay_result_ledger_error)
    }

    /// Number of HTTP attempts made.
    pub fn attempts(&self) -> u32 {
        // SAFETY: valid result.
        u32::try_from(unsafe { sys::pay_result_attempts(self.ptr()) }).unwrap_or(0)
    }

    /// True when the outcome was read from the ledger and nothing was sent.
    pub fn from_ledger(&self) -> bool {
        // SAFETY: valid result.
        unsafe { sys::pay_result_from_ledger(self.ptr()) == 1 }
    }

    /// The whole result as one JSON object (without the body).
    pub fn json(&self) -> &str {
        self.str_field(sys::pay_result_json).unwrap_or("{}")
    }
}

impl fmt::Debug for PayResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PayResult")
            .field("outcome", &self.outcome())
            .field("delivery", &self.delivery())
            .field("money_state", &self.money_state())
            .field("json", &self.json())
            .finish()
    }
}
