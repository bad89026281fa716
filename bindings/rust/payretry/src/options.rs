//! [`SubmitOptions`]: the per-payment settings of `pay_submit_options`.

use crate::error::{cstring, Error};
use payretry_sys as sys;
use std::ffi::CString;
use std::ptr;
use std::time::Duration;

/// Per-payment settings for [`Client::submit_with`](crate::Client::submit_with)
/// and [`Client::submit_async`](crate::Client::submit_async). The default is
/// a fresh idempotency key, the profile's create path and the client's deadline.
///
/// ```
/// use std::time::Duration;
/// let opts = payretry::SubmitOptions::new()
///     .idempotency_key("order-42-v1")
///     .deadline(Duration::from_secs(5));
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubmitOptions {
    idempotency_key: Option<String>,
    path: Option<String>,
    deadline: Option<Duration>,
    headers: Vec<(String, String)>,
    traceparent: Option<String>,
}

impl SubmitOptions {
    /// The defaults.
    pub fn new() -> SubmitOptions {
        SubmitOptions::default()
    }

    /// The idempotency key of every attempt (default: a fresh UUIDv4 from
    /// the CSPRNG). Keep it with the order: a retry of the order must carry it.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> SubmitOptions {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The create path (default: the profile's `create_path`).
    pub fn path(mut self, path: impl Into<String>) -> SubmitOptions {
        self.path = Some(path.into());
        self
    }

    /// The payment's deadline: the smaller of this and the client's is used.
    /// Rounded up to whole milliseconds; zero is refused at submission.
    pub fn deadline(mut self, deadline: Duration) -> SubmitOptions {
        self.deadline = Some(deadline);
        self
    }

    /// Adds a header to every attempt of this payment (not to its lookups).
    /// Names must be HTTP tokens and values printable without CR or LF, at
    /// most 64 headers; the headers payretry owns (the idempotency key,
    /// authentication, `Content-Type`, `traceparent`) cannot be set here.
    /// A refused header fails the submission with `InvalidArgument` naming
    /// it, and nothing is sent.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> SubmitOptions {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The W3C trace context of this payment,
    /// `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`: sent as
    /// `traceparent` on every attempt and written in each log line of the
    /// payment. A malformed one fails the submission with `InvalidArgument`.
    pub fn traceparent(mut self, traceparent: impl Into<String>) -> SubmitOptions {
        self.traceparent = Some(traceparent.into());
        self
    }

    /// The C form, with the strings it points to.
    pub(crate) fn to_c(&self) -> Result<CSubmitOptions, Error> {
        let deadline_ms = match self.deadline {
            None => 0,
            Some(d) if d.is_zero() => {
                return Err(Error::invalid("deadline: must be at least 1 ms"));
            }
            // Round up, so that a sub-millisecond deadline is not "none" (0).
            Some(d) => u32::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u32::MAX),
        };
        let headers = self
            .headers
            .iter()
            .map(|(name, value)| {
                Ok((
                    cstring(name, "header name")?,
                    cstring(value, "header value")?,
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        // Points into `headers`' heap strings, which stay put when the
        // CSubmitOptions moves.
        let c_headers = headers
            .iter()
            .map(|(name, value)| sys::pay_header {
                name: name.as_ptr(),
                value: value.as_ptr(),
            })
            .collect();
        Ok(CSubmitOptions {
            idempotency_key: self
                .idempotency_key
                .as_deref()
                .map(|k| cstring(k, "idempotency key"))
                .transpose()?,
            path: self
                .path
                .as_deref()
                .map(|p| cstring(p, "path"))
                .transpose()?,
            deadline_ms,
            _header_strings: headers,
            c_headers,
            traceparent: self
                .traceparent
                .as_deref()
                .map(|t| cstring(t, "traceparent"))
                .transpose()?,
        })
    }
}

/// `SubmitOptions` converted for one C call: owns the C strings that
/// [`CSubmitOptions::raw`] points into.
pub(crate) struct CSubmitOptions {
    idempotency_key: Option<CString>,
    path: Option<CString>,
    deadline_ms: u32,
    /// Owns the strings `c_headers` points to (only kept alive, never read).
    _header_strings: Vec<(CString, CString)>,
    c_headers: Vec<sys::pay_header>,
    traceparent: Option<CString>,
}

impl CSubmitOptions {
    /// The struct to pass; its pointers are valid while `self` is.
    pub(crate) fn raw(&self) -> sys::pay_submit_options {
        sys::pay_submit_options {
            version: sys::PAY_SUBMIT_OPTIONS_VERSION,
            idempotency_key: self
                .idempotency_key
                .as_ref()
                .map_or(ptr::null(), |k| k.as_ptr()),
            path: self.path.as_ref().map_or(ptr::null(), |p| p.as_ptr()),
            deadline_ms: self.deadline_ms,
            headers: if self.c_headers.is_empty() {
                ptr::null()
            } else {
                self.c_headers.as_ptr()
            },
            header_count: self.c_headers.len(),
            traceparent: self
                .traceparent
                .as_ref()
                .map_or(ptr::null(), |t| t.as_ptr()),
        }
    }
}
