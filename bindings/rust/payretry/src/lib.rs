//! Safe binding of payretry's C API (`payretry/payretry.h`).
//!
//! ```no_run
//! let client = payretry::Client::new(r#"{"provider":"stripe","base_url":"https://api.stripe.com",
//!     "auth":{"bearer":"sk_test_..."},"ledger":"sqlite:///var/lib/shop/payments.db"}"#)?;
//! let r = client.submit("order-42", br#"{"amount":1000,"currency":"eur"}"#, None)?;
//! match r.outcome() {
//!     payretry::Outcome::Succeeded => { /* fulfil */ }
//!     payretry::Outcome::Failed => { /* declined: r.error() says why */ }
//!     _ => { /* UNKNOWN / IN_PROGRESS: never re-create; reconcile later */ }
//! }
//! # Ok::<(), payretry::Error>(())
//! ```
//!
//! A declined or undetermined payment is data on [`PayResult`], not an
//! [`Error`]: an `Err` means the call itself could not do its job.
#![deny(unsafe_op_in_unsafe_fn)]

use payretry_sys as sys;
use std::any::Any;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::{self, NonNull};

/// The C error codes (`PAY_E*` of `payretry/errors.h`), as found in [`Error::code`].
pub mod code {
    use payretry_sys as sys;
    pub const ERROR: i32 = sys::PAY_ERROR;
    pub const EINVALID: i32 = sys::PAY_EINVALID;
    pub const ENOMEM: i32 = sys::PAY_ENOMEM;
    pub const ECONFIG: i32 = sys::PAY_ECONFIG;
    pub const EMISMATCH: i32 = sys::PAY_EMISMATCH;
    pub const ETOOBIG: i32 = sys::PAY_ETOOBIG;
    pub const EKEY: i32 = sys::PAY_EKEY;
    pub const EVERSION: i32 = sys::PAY_EVERSION;
    pub const EHOOK: i32 = sys::PAY_EHOOK;
    pub const EIO: i32 = sys::PAY_EIO;
    pub const ELEDGER: i32 = sys::PAY_ELEDGER;
    pub const ENOTFOUND: i32 = sys::PAY_ENOTFOUND;
    pub const EAGAIN: i32 = sys::PAY_EAGAIN;
}

/// A failed call: a negative `PAY_E*` code (see [`code`]) and the library's
/// message for it (never holding a secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: i32,
    pub message: String,
}

impl Error {
    /// Reads the calling thread's last error for a call that returned `rc`,
    /// then clears it so that it cannot leak into the next call's report.
    /// Must run on the thread of the failing call, right after it.
    fn last(rc: c_int) -> Error {
        // SAFETY: pay_error_last never returns NULL; the struct and its message
        // stay valid until the next payretry call on this thread, and we copy
        // both before pay_error_clear.
        unsafe {
            let e = &*sys::pay_error_last();
            let message = if e.code == rc && !e.message.is_null() {
                CStr::from_ptr(e.message).to_string_lossy().into_owned()
            } else {
                CStr::from_ptr(sys::pay_strerror(rc))
                    .to_string_lossy()
                    .into_owned()
            };
            sys::pay_error_clear();
            Error { code: rc, message }
        }
    }

    fn nul(what: &str) -> Error {
        Error {
            code: code::EINVALID,
            message: format!("{what} contains a NUL byte"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "payretry error {}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

fn check(rc: c_int) -> Result<(), Error> {
    if rc < 0 {
        Err(Error::last(rc))
    } else {
        Ok(())
    }
}

fn cstring(s: &str, what: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|_| Error::nul(what))
}

/// Borrows a C string owned by something that outlives `'a`.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for `'a`.
unsafe fn borrowed<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        None
    } else {
        // SAFETY: per this function's contract.
        unsafe { CStr::from_ptr(p) }.to_str().ok()
    }
}

/// Copies a `pay_buf` the library filled, then disposes it (also on unwind).
struct Buf(sys::pay_buf);

impl Buf {
    fn new() -> Buf {
        Buf(sys::pay_buf {
            ptr: ptr::null_mut(),
            size: 0,
        })
    }
    fn text(&self) -> String {
        if self.0.ptr.is_null() {
            return String::new();
        }
        // SAFETY: ptr holds `size` bytes written by the library.
        let bytes = unsafe { std::slice::from_raw_parts(self.0.ptr.cast::<u8>(), self.0.size) };
        String::from_utf8_lossy(bytes).into_owned()
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: the buf is empty or was filled by the library; dispose zeroes it.
        unsafe { sys::pay_buf_dispose(&mut self.0) }
    }
}

/// What the caller may conclude about a payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// Accepted and recorded by the provider: fulfil.
    Succeeded,
    /// Definitive: the provider will not charge for it.
    Failed,
    /// May have been processed: never re-create, query or reconcile later.
    Unknown,
    /// Another worker holds this order right now.
    InProgress,
}

/// How far the request got, summed over every attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Delivery {
    /// No attempt can have been processed by the provider.
    NotSent,
    /// Some attempt may have been processed; no answer proves what.
    MaybeProcessed,
    /// The provider answered definitively.
    Delivered,
}

/// The outcome of one submission, query or ledger read. Owns the C
/// `pay_result` and frees it on drop; it stays valid after its [`Client`]
/// is dropped.
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
    /// `raw` is NULL or a result the library returned to us.
    unsafe fn from_raw(raw: *mut sys::pay_result) -> Result<PayResult, Error> {
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
            .field("json", &self.json())
            .finish()
    }
}

/// A payretry client: one provider profile, retry policy and ledger.
pub struct Client {
    raw: NonNull<sys::pay_client>,
}

// SAFETY: client.h: "a pay_client may be shared by any number of threads;
// pay_submit may run concurrently on one client", and pay_query,
// pay_reconcile, pay_ledger_get and pay_client_stats are documented
// thread-safe. Client registers no log callback or request hook, so no Rust
// state is reachable from other threads through it. pay_client_free needs
// that no call still runs on it, which Drop's `&mut self` guarantees.
unsafe impl Send for Client {}
unsafe impl Sync for Client {}

impl Drop for Client {
    fn drop(&mut self) {
        // SAFETY: we own the client and no call can be running (&mut self).
        unsafe { sys::pay_client_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("raw", &self.raw).finish()
    }
}

/// The body callback of [`Client::reconcile`]: the exact bytes first
/// submitted for an order, or `None` when the application no longer has them.
pub type BodyFor<'a> = dyn Fn(&str) -> Option<Vec<u8>> + 'a;

struct Reconcile<'a> {
    body_for: &'a BodyFor<'a>,
    panic: Option<Box<dyn Any + Send>>,
}

/// `pay_body_cb` trampoline. A panic must not unwind into C: it is caught,
/// kept, reported to C as "no body" (the payment stays UNKNOWN), and resumed
/// by `Client::reconcile` once the C call has returned. After a panic the
/// closure is not called again.
unsafe extern "C" fn body_trampoline(
    out: *mut sys::pay_body,
    order_id: *const c_char,
    payload: *mut c_void,
) -> c_int {
    // SAFETY: payload is the &mut Reconcile that Client::reconcile passed, alive
    // for the whole pay_reconcile call, which calls us on its own thread, one
    // call at a time (settle.cpp); nothing else touches it meanwhile.
    let state = unsafe { &mut *payload.cast::<Reconcile<'_>>() };
    if state.panic.is_some() || order_id.is_null() {
        return -1;
    }
    // SAFETY: order_id is a NUL-terminated string valid during the call.
    let Ok(order) = (unsafe { CStr::from_ptr(order_id) }).to_str() else {
        return -1;
    };
    let f = state.body_for;
    match panic::catch_unwind(AssertUnwindSafe(|| f(order))) {
        Ok(Some(bytes)) => {
            // SAFETY: out is valid inside the callback; bytes outlives the call.
            unsafe { sys::pay_body_set(out, bytes.as_ptr().cast(), bytes.len()) }
        }
        Ok(None) => 1,
        Err(p) => {
            state.panic = Some(p);
            -1
        }
    }
}

impl Client {
    /// Creates a client from a JSON configuration, which must name its
    /// `"ledger"` (`"sqlite:///abs/path.db"`, `"postgresql://..."`, or
    /// `"memory:"` written out). A bad configuration is an `Err` with code
    /// [`code::ECONFIG`] whose message names the key.
    pub fn new(config_json: &str) -> Result<Client, Error> {
        let cfg = cstring(config_json, "config_json")?;
        let mut raw = ptr::null_mut();
        // SAFETY: out-pointer and a NUL-terminated string; NULL options.
        check(unsafe { sys::pay_client_new(&mut raw, cfg.as_ptr(), ptr::null()) })?;
        NonNull::new(raw)
            .map(|raw| Client { raw })
            .ok_or_else(|| Error {
                code: code::ERROR,
                message: "no client returned".into(),
            })
    }

    fn ptr(&self) -> *mut sys::pay_client {
        self.raw.as_ptr()
    }

    /// Submits one payment: POSTs `body` (identical bytes on every attempt)
    /// under one idempotency key (`key`, or a fresh UUIDv4), retrying only
    /// what can recover. A decline is `Ok` with [`Outcome::Failed`].
    pub fn submit(
        &self,
        order_id: &str,
        body: &[u8],
        key: Option<&str>,
    ) -> Result<PayResult, Error> {
        let order = cstring(order_id, "order_id")?;
        let key = key.map(|k| cstring(k, "idempotency key")).transpose()?;
        let opts = sys::pay_submit_options {
            version: sys::PAY_SUBMIT_OPTIONS_VERSION,
            idempotency_key: key.as_ref().map_or(ptr::null(), |k| k.as_ptr()),
            path: ptr::null(),
            deadline_ms: 0,
        };
        let mut out = ptr::null_mut();
        // SAFETY: all pointers are valid for the call; the client is thread-safe.
        check(unsafe {
            sys::pay_submit(
                &mut out,
                self.ptr(),
                order.as_ptr(),
                body.as_ptr().cast(),
                body.len(),
                &opts,
            )
        })?;
        // SAFETY: a result the library returned.
        unsafe { PayResult::from_raw(out) }
    }

    /// Asks the provider (or the ledger, when settled) what happened to one
    /// payment. `Err` with [`code::ENOTFOUND`] for an order never submitted.
    pub fn query(&self, order_id: &str) -> Result<PayResult, Error> {
        let order = cstring(order_id, "order_id")?;
        let mut out = ptr::null_mut();
        // SAFETY: valid pointers for the call.
        check(unsafe { sys::pay_query(&mut out, self.ptr(), order.as_ptr()) })?;
        // SAFETY: a result the library returned.
        unsafe { PayResult::from_raw(out) }
    }

    /// Settles every UNKNOWN payment and returns the JSON report
    /// (`{"examined", "SUCCEEDED", "FAILED", "UNKNOWN", ..., "payments", "failures"}`).
    ///
    /// `body_for(order_id)` gives the exact bytes first submitted, for a
    /// same-key re-send, or `None` when the application no longer has them
    /// (the payment stays UNKNOWN). If it panics, the payment stays UNKNOWN,
    /// it is not called again, and the panic resumes here after the C call
    /// has returned (it never unwinds through C).
    pub fn reconcile(&self, body_for: Option<&BodyFor<'_>>) -> Result<String, Error> {
        let mut state = body_for.map(|body_for| Reconcile {
            body_for,
            panic: None,
        });
        let opts = sys::pay_reconcile_options {
            version: sys::PAY_RECONCILE_OPTIONS_VERSION,
            body_for: state.as_ref().map(|_| body_trampoline as _),
            body_payload: state
                .as_mut()
                .map_or(ptr::null_mut(), |s| ptr::from_mut(s).cast()),
            limit: 0,
            older_than_ms: 0,
        };
        let mut buf = Buf::new();
        // SAFETY: valid pointers; `state` outlives the call (see body_trampoline).
        let rc = unsafe { sys::pay_reconcile(&mut buf.0, self.ptr(), &opts) };
        let result = check(rc).map(|()| buf.text());
        drop(buf);
        if let Some(p) = state.and_then(|s| s.panic) {
            panic::resume_unwind(p);
        }
        result
    }

    /// One payment as recorded in the ledger, as JSON (`{"payment": {...}, "attempts": [...]}`).
    pub fn ledger_get(&self, order_id: &str) -> Result<String, Error> {
        let order = cstring(order_id, "order_id")?;
        let mut buf = Buf::new();
        // SAFETY: valid pointers for the call.
        check(unsafe { sys::pay_ledger_get(&mut buf.0, self.ptr(), order.as_ptr()) })?;
        Ok(buf.text())
    }

    /// The client's counters as JSON.
    pub fn stats(&self) -> Result<String, Error> {
        let mut buf = Buf::new();
        // SAFETY: valid pointers for the call.
        check(unsafe { sys::pay_client_stats(&mut buf.0, self.ptr()) })?;
        Ok(buf.text())
    }
}

/// The library's version string, e.g. "0.1.0".
pub fn version() -> &'static str {
    // SAFETY: pay_version returns a static string.
    unsafe { borrowed(sys::pay_version()) }.unwrap_or("?")
}
