//! Safe binding of payretry's C API (`payretry/payretry.h`).
//!
//! ```no_run
//! let client = payretry::Client::new(r#"{"provider":"stripe","base_url":"https://api.stripe.com",
//!     "auth":{"bearer":"sk_test_..."},"ledger":"sqlite:///var/lib/shop/payments.db"}"#)?;
//! let r = client.submit("order-42", br#"{"amount":1000,"currency":"eur"}"#, None)?;
//! match (r.outcome(), r.money_state()) {
//!     (payretry::Outcome::Succeeded, payretry::MoneyState::Paid) => { /* fulfil */ }
//!     // Took effect, but no money moved yet (Authorized: capture, then
//!     // fulfil): never ship on Succeeded alone; wait for the webhook or query.
//!     (payretry::Outcome::Succeeded, _) => {}
//!     (payretry::Outcome::Failed, _) => { /* declined: r.error() says why */ }
//!     _ => { /* UNKNOWN / IN_PROGRESS: never re-create; reconcile later */ }
//! }
//! # Ok::<(), payretry::Error>(())
//! ```
//!
//! A declined or undetermined payment is data on [`PayResult`], not an
//! [`Error`]: an `Err` means the call itself could not do its job.
//!
//! A request hook signs (or otherwise decorates) every attempt and every
//! status lookup; per-payment settings travel in [`SubmitOptions`]:
//!
//! ```no_run
//! use payretry::{AttemptInfo, Client, Headers, SubmitOptions};
//! use std::time::Duration;
//!
//! # let config_json = "{}";
//! let client = Client::builder(config_json)
//!     .request_hook(|info: &AttemptInfo<'_>, headers: &mut Headers<'_>| {
//!         let stamp = format!("{} {} {}", info.method, info.request_target(), info.unix_time_ms);
//!         headers.add("X-Request-Stamp", &stamp)
//!     })
//!     .build()?;
//! let opts = SubmitOptions::new().deadline(Duration::from_secs(5));
//! let r = client.submit_with("order-42", br#"{"amount":1000}"#, &opts)?;
//! # let _ = r;
//! # Ok::<(), payretry::Error>(())
//! ```
//!
//! With the cargo feature `serde`, the JSON the library writes (results
//! with their attempts, counters, reconcile reports, ledger records) is
//! also available as typed structs (the [`report`] module).
#![deny(unsafe_op_in_unsafe_fn)]

mod client;
mod error;
mod ffi_util;
mod future;
mod hook;
mod ledger;
mod operation;
mod options;
mod reconcile;
#[cfg(feature = "serde")]
pub mod report;
mod result;
mod webhook;

pub use client::{Client, ClientBuilder};
pub use error::{code, Error, ErrorKind};
pub use future::SubmitFuture;
pub use hook::{AttemptInfo, Headers};
pub use ledger::{LedgerFilter, LedgerState};
pub use operation::{Operation, OperationOptions};
pub use options::SubmitOptions;
pub use reconcile::BodyFor;
pub use result::{Delivery, MoneyState, Outcome, PayResult};
pub use webhook::WebhookReply;

use payretry_sys as sys;

/// The library's version string, e.g. "0.1.0".
pub fn version() -> &'static str {
    // SAFETY: pay_version returns a static string.
    unsafe { ffi_util::borrowed(sys::pay_version()) }.unwrap_or("?")
}

/// What the API promises about threads, checked when the crate compiles.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    const fn send<T: Send>() {}
    send_sync::<Client>();
    send_sync::<PayResult>();
    send_sync::<Error>();
    send_sync::<WebhookReply>();
    send::<SubmitFuture>();
};
