//! The request hook: a Rust closure called before every attempt of every
//! payment and before every status lookup, which may add headers (for
//! example a signature over exactly what is sent) or refuse the request.
//!
//! The closure runs on the thread that made the call for `submit`, `query`
//! and `reconcile`, and on the client's engine threads for
//! [`Client::submit_async`](crate::Client::submit_async): it must be
//! `Send + Sync`. A panic in it never unwinds into C: it is caught and
//! becomes a refusal (`ErrorKind::Hook` when nothing had been sent yet).

use crate::error::{check, cstring, Error};
use payretry_sys as sys;
use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::fmt;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::ptr::NonNull;

/// What is about to be sent, as `pay_attempt_info` describes it. Borrowed
/// from the library for the duration of the hook.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AttemptInfo<'a> {
    /// `"POST"` for a payment; `"GET"` or `"POST"` for a lookup.
    pub method: &'a str,
    /// The full URL.
    pub url: &'a str,
    /// The path with its query, as appended to the config's `base_url`
    /// (e.g. `/v1/payments` or `/v1/payment_intents/pi_1?expand=x`).
    pub path: &'a str,
    pub order_id: &'a str,
    pub idempotency_key: &'a str,
    /// The exact bytes of this attempt's body (empty for a `GET`).
    pub body: &'a [u8],
    /// 1-based attempt number.
    pub attempt: u32,
    /// Wall-clock time of this attempt in Unix milliseconds, for signatures.
    pub unix_time_ms: i64,
}

impl<'a> AttemptInfo<'a> {
    /// The request target exactly as it goes on the request line: the URL
    /// without its scheme and authority (`/prefix/v1/payments?x=1` when the
    /// config's `base_url` carries a path prefix). What request signatures
    /// are usually computed over.
    pub fn request_target(&self) -> &'a str {
        let after_scheme = self.url.find("://").map_or(0, |i| i + 3);
        match self.url[after_scheme..].find('/') {
            Some(i) => &self.url[after_scheme + i..],
            None => "/",
        }
    }
}

/// The extra headers of one attempt. Valid only inside the hook.
pub struct Headers<'a> {
    raw: NonNull<sys::pay_headers>,
    _inside_the_hook: PhantomData<&'a mut sys::pay_headers>,
}

impl Headers<'_> {
    /// Adds a header to this attempt. Names must be HTTP tokens (at most 256
    /// bytes), values printable ASCII without CR or LF (at most 8 KiB), at
    /// most 64 per attempt; the headers payretry sets itself (the
    /// idempotency key, `Content-Type`, `Host`, ...) are refused. A refused
    /// header is an `Err` of kind `InvalidArgument` naming what is wrong,
    /// and is not added.
    pub fn add(&mut self, name: &str, value: &str) -> Result<(), Error> {
        let name = cstring(name, "header name")?;
        let value = cstring(value, "header value")?;
        // SAFETY: raw is the handle of the hook call this Headers lives in;
        // both strings are NUL-terminated and outlive the call.
        check(unsafe { sys::pay_headers_add(self.raw.as_ptr(), name.as_ptr(), value.as_ptr()) })
    }
}

impl fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Headers").finish_non_exhaustive()
    }
}

/// The closure a client keeps, its error already turned into text.
pub(crate) type HookFn =
    dyn Fn(&AttemptInfo<'_>, &mut Headers<'_>) -> Result<(), String> + Send + Sync;

/// Boxes a user's hook, keeping its error's text.
pub(crate) fn boxed<F, E>(hook: F) -> Box<HookFn>
where
    F: Fn(&AttemptInfo<'_>, &mut Headers<'_>) -> Result<(), E> + Send + Sync + 'static,
    E: fmt::Display,
{
    Box::new(move |info: &AttemptInfo<'_>, headers: &mut Headers<'_>| {
        hook(info, headers).map_err(|e| e.to_string())
    })
}

thread_local! {
    /// The last refusal of a hook on this thread: (order id, why). The C
    /// library reports a refusal as `PAY_EHOOK` "returned 1"; this carries
    /// the closure's own words to the call (or the done callback) that reports
    /// it, which runs on the same thread as the hook did.
    static LAST_REFUSAL: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

/// Takes this thread's last hook refusal if it was for `order_id`.
pub(crate) fn take_refusal(order_id: &str) -> Option<String> {
    LAST_REFUSAL.with(|slot| {
        let mut slot = slot.borrow_mut();
        match slot.as_ref() {
            Some((order, _)) if order == order_id => slot.take().map(|(_, why)| why),
            _ => None,
        }
    })
}

/// What the trampoline returns to refuse; the library's message then ends
/// with "returned 1", which [`explain`] replaces by the hook's own words.
const REFUSED: c_int = 1;

/// Puts the hook's own words in a `PAY_EHOOK` error of `order_id`
/// ("request hook: returned 1" becomes "request hook: <why>").
pub(crate) fn explain(mut error: Error, order_id: &str) -> Error {
    if error.code == sys::PAY_EHOOK {
        if let Some(why) = take_refusal(order_id) {
            let code_text = format!("returned {REFUSED}");
            error.message = match error.message.strip_suffix(&code_text) {
                Some(prefix) => format!("{prefix}{why}"),
                None => format!("{}: {why}", error.message),
            };
        }
    }
    error
}

fn panic_text(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// # Safety
/// `p` is NULL or a NUL-terminated string valid for `'a`.
unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, String> {
    if p.is_null() {
        return Ok("");
    }
    // SAFETY: per this function's contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| format!("attempt info: {what} is not UTF-8"))
}

/// # Safety
/// `info` points to a `pay_attempt_info` valid for `'a`.
unsafe fn attempt_info<'a>(info: &'a sys::pay_attempt_info) -> Result<AttemptInfo<'a>, String> {
    let body = if info.body.is_null() || info.body_len == 0 {
        &[][..]
    } else {
        // SAFETY: the library hands `body_len` bytes valid during the hook.
        unsafe { std::slice::from_raw_parts(info.body.cast::<u8>(), info.body_len) }
    };
    // SAFETY: every string of pay_attempt_info is valid during the hook.
    unsafe {
        Ok(AttemptInfo {
            method: text(info.method, "method")?,
            url: text(info.url, "url")?,
            path: text(info.path, "path")?,
            order_id: text(info.order_id, "order_id")?,
            idempotency_key: text(info.idempotency_key, "idempotency_key")?,
            body,
            attempt: info.attempt,
            unix_time_ms: info.unix_time_ms,
        })
    }
}

/// The `pay_request_hook` a client with a Rust hook registers. `payload` is
/// the client's `Box<HookFn>` (as `*const Box<HookFn>`), alive until
/// `pay_client_free` has returned. Returns 0 to send, 1 to refuse; a panic
/// is caught here and refuses.
pub(crate) unsafe extern "C" fn trampoline(
    headers: *mut sys::pay_headers,
    info: *const sys::pay_attempt_info,
    payload: *mut c_void,
) -> c_int {
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| -> Result<(), (String, String)> {
        let (Some(raw), Some(info)) = (NonNull::new(headers), NonNull::new(info.cast_mut())) else {
            return Err((String::new(), "no headers or attempt info".into()));
        };
        // SAFETY: the library passes a pay_attempt_info valid during the hook.
        let info = unsafe { info.as_ref() };
        // SAFETY: see above.
        let info = unsafe { attempt_info(info) }.map_err(|why| (String::new(), why))?;
        // SAFETY: payload is the client's Box<HookFn>, which outlives the
        // C client (see Client's Drop); the closure is Sync, so calls on
        // several threads at once are fine.
        let hook = unsafe { &*payload.cast_const().cast::<Box<HookFn>>() };
        let mut headers = Headers {
            raw,
            _inside_the_hook: PhantomData,
        };
        let order = info.order_id;
        match panic::catch_unwind(AssertUnwindSafe(|| hook(&info, &mut headers))) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(why)) => Err((order.to_owned(), why)),
            Err(p) => Err((
                order.to_owned(),
                format!("the request hook panicked: {}", panic_text(&*p)),
            )),
        }
    }));
    match outcome {
        Ok(Ok(())) => 0,
        Ok(Err(refusal)) => {
            // try_with: never panic here, even during thread teardown.
            let _ = LAST_REFUSAL.try_with(|slot| {
                if let Ok(mut slot) = slot.try_borrow_mut() {
                    *slot = Some(refusal);
                }
            });
            REFUSED
        }
        Err(_) => REFUSED,
    }
}
