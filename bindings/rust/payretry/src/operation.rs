//! [`Operation`] and [`OperationOptions`]: captures, refunds and cancels of a
//! payment already submitted (`pay_submit_operation`).

use crate::error::{cstring, Error};
use payretry_sys as sys;
use std::ffi::{c_int, CString};
use std::fmt;
use std::ptr;
use std::time::Duration;

/// What [`Client::submit_operation`](crate::Client::submit_operation) does to
/// a payment (`pay_operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// Take (part of) an authorized hold.
    Capture,
    /// Give (part of) a paid payment back.
    Refund,
    /// Void a payment no money has moved for yet.
    Cancel,
}

impl Operation {
    pub(crate) fn to_c(self) -> c_int {
        match self {
            Operation::Capture => sys::PAY_OPERATION_CAPTURE,
            Operation::Refund => sys::PAY_OPERATION_REFUND,
            Operation::Cancel => sys::PAY_OPERATION_CANCEL,
        }
    }

    /// The kind's name in the operation's ledger row id ("refund").
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Capture => "capture",
            Operation::Refund => "refund",
            Operation::Cancel => "cancel",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One operation's settings. `ref` is required: your name for the operation,
/// unique per payment and kind ("r1"; visible ASCII, no spaces). The same ref
/// again is the same operation (its stored key and bytes, or
/// [`ErrorKind::Mismatch`](crate::ErrorKind::Mismatch) if asked otherwise):
/// an UNKNOWN operation is settled by submitting it again with the same ref,
/// never a new one (that would be a second refund).
///
/// ```
/// let opts = payretry::OperationOptions::new("r1").amount(400);
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperationOptions {
    reference: String,
    amount: i64,
    body: Option<String>,
    target_id: Option<String>,
    deadline: Option<Duration>,
}

impl OperationOptions {
    /// The operation named `reference`, for all that is left (amount 0).
    pub fn new(reference: impl Into<String>) -> OperationOptions {
        OperationOptions {
            reference: reference.into(),
            ..OperationOptions::default()
        }
    }

    /// In the provider's units, as the payment's amount was; 0 (the
    /// default): all that is left, as the ledger counts it. Ignored for a
    /// cancel; negative is refused.
    pub fn amount(mut self, amount: i64) -> OperationOptions {
        self.amount = amount;
        self
    }

    /// A JSON object of further fields the provider takes (a reason,
    /// metadata); never the fields payretry writes (the amount, the
    /// payment's id, the key).
    pub fn body(mut self, json_object: impl Into<String>) -> OperationOptions {
        self.body = Some(json_object.into());
        self
    }

    /// The second id the provider's path names, where it names one (PayPal
    /// refunds a capture: its id).
    pub fn target_id(mut self, id: impl Into<String>) -> OperationOptions {
        self.target_id = Some(id.into());
        self
    }

    /// The operation's deadline: the smaller of this and the client's.
    /// Rounded up to whole milliseconds; zero is refused.
    pub fn deadline(mut self, deadline: Duration) -> OperationOptions {
        self.deadline = Some(deadline);
        self
    }

    pub(crate) fn to_c(&self) -> Result<COperationOptions, Error> {
        if self.amount < 0 {
            return Err(Error::invalid("amount: negative; 0 asks for the rest"));
        }
        let deadline_ms = match self.deadline {
            None => 0,
            Some(d) if d.is_zero() => {
                return Err(Error::invalid("deadline: must be at least 1 ms"))
            }
            Some(d) => u32::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u32::MAX),
        };
        Ok(COperationOptions {
            reference: cstring(&self.reference, "ref")?,
            amount: self.amount,
            body: self
                .body
                .as_deref()
                .map(|b| cstring(b, "body"))
                .transpose()?,
            target_id: self
                .target_id
                .as_deref()
                .map(|t| cstring(t, "target_id"))
                .transpose()?,
            deadline_ms,
        })
    }
}

/// `OperationOptions` converted for one C call: owns the C strings that
/// [`COperationOptions::raw`] points into.
pub(crate) struct COperationOptions {
    reference: CString,
    amount: i64,
    body: Option<CString>,
    target_id: Option<CString>,
    deadline_ms: u32,
}

impl COperationOptions {
    /// The struct to pass; its pointers are valid while `self` is.
    pub(crate) fn raw(&self) -> sys::pay_operation_options {
        sys::pay_operation_options {
            version: sys::PAY_OPERATION_OPTIONS_VERSION,
            ref_: self.reference.as_ptr(),
            amount: self.amount,
            body: self.body.as_ref().map_or(ptr::null(), |b| b.as_ptr()),
            target_id: self.target_id.as_ref().map_or(ptr::null(), |t| t.as_ptr()),
            deadline_ms: self.deadline_ms,
        }
    }
}
