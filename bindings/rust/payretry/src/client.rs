//! [`Client`] and its [`ClientBuilder`]: one provider profile, retry policy
//! and ledger, and every call made through them.

use crate::error::{check, code, cstring, Error};
use crate::ffi_util::Buf;
use crate::future::SubmitFuture;
use crate::hook::{self, AttemptInfo, Headers, HookFn};
use crate::ledger::LedgerFilter;
use crate::operation::{Operation, OperationOptions};
use crate::options::SubmitOptions;
use crate::reconcile::{body_trampoline, BodyFor, Reconcile};
use crate::result::PayResult;
use crate::webhook::WebhookReply;
use payretry_sys as sys;
use std::ffi::c_void;
use std::fmt;
use std::panic;
use std::ptr::{self, NonNull};

/// A payretry client: one provider profile, retry policy and ledger.
pub struct Client {
    raw: NonNull<sys::pay_client>,
    /// The request hook the C client calls, boxed twice so that the C side
    /// holds a thin pointer to a `Box<HookFn>` that never moves. Dropped
    /// after `pay_client_free` (see Drop), when no hook can run any more.
    hook: Option<Box<Box<HookFn>>>,
}

// SAFETY: client.h: "a pay_client may be shared by any number of threads;
// pay_submit may run concurrently on one client", and pay_query,
// pay_reconcile, pay_ledger_get and pay_client_stats are documented
// thread-safe. The only Rust state the library reaches from other threads is
// the request hook, which is `Send + Sync`. pay_client_free needs that no
// call still runs on it, which Drop's `&mut self` guarantees.
unsafe impl Send for Client {}
unsafe impl Sync for Client {}

impl Drop for Client {
    fn drop(&mut self) {
        // SAFETY: we own the client and no call can be running (&mut self).
        // It waits for every payment of submit_async to be reported, so no
        // hook and no done callback runs after it; only then is `hook` dropped.
        unsafe { sys::pay_client_free(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("raw", &self.raw)
            .field("request_hook", &self.hook.is_some())
            .finish()
    }
}

/// Builds a [`Client`] from a JSON configuration and what JSON cannot carry.
///
/// ```no_run
/// let client = payretry::Client::builder(r#"{"provider":"stripe", "...": "..."}"#)
///     .request_hook(|info: &payretry::AttemptInfo<'_>, headers: &mut payretry::Headers<'_>| {
///         headers.add("X-Attempt", &info.attempt.to_string())
///     })
///     .build()?;
/// # Ok::<(), payretry::Error>(())
/// ```
pub struct ClientBuilder {
    config_json: String,
    hook: Option<Box<HookFn>>,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The configuration may hold secrets: never print it.
        f.debug_struct("ClientBuilder")
            .field("request_hook", &self.hook.is_some())
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// Sets the request hook, called before every attempt of every payment
    /// and before every status lookup (`query`, `reconcile`), so that a
    /// provider which signs its requests gets signed lookups too. It may add
    /// headers with [`Headers::add`]; returning `Err` refuses the request:
    /// the call fails with [`ErrorKind::Hook`](crate::ErrorKind::Hook) (its
    /// message ends with the hook's own words) if nothing of the payment had
    /// been sent yet, or returns an UNKNOWN result if an earlier attempt may
    /// have been processed; a refused lookup leaves the payment as it was.
    /// A panic in the hook is caught and refuses the same way.
    ///
    /// It runs on the calling thread for `submit` and `query`, and on the
    /// client's engine threads for `submit_async`, several at once: keep it
    /// short. Its running time counts against the payment's deadline.
    pub fn request_hook<F, E>(mut self, hook: F) -> ClientBuilder
    where
        F: Fn(&AttemptInfo<'_>, &mut Headers<'_>) -> Result<(), E> + Send + Sync + 'static,
        E: fmt::Display,
    {
        self.hook = Some(hook::boxed(hook));
        self
    }

    /// Creates the client. A bad configuration is an `Err` of kind
    /// [`ErrorKind::Config`](crate::ErrorKind::Config) whose message names the key.
    pub fn build(self) -> Result<Client, Error> {
        let cfg = cstring(&self.config_json, "config_json")?;
        let hook: Option<Box<Box<HookFn>>> = self.hook.map(Box::new);
        let opts = sys::pay_client_options {
            version: sys::PAY_CLIENT_OPTIONS_VERSION,
            log_cb: None,
            log_payload: ptr::null_mut(),
            request_hook: hook.as_ref().map(|_| hook::trampoline as _),
            hook_payload: hook.as_deref().map_or(ptr::null_mut(), |h| {
                ptr::from_ref::<Box<HookFn>>(h).cast_mut().cast::<c_void>()
            }),
        };
        let mut raw = ptr::null_mut();
        // SAFETY: out-pointer, a NUL-terminated string, options read during
        // the call; the hook payload outlives the client (Client's Drop).
        check(unsafe { sys::pay_client_new(&mut raw, cfg.as_ptr(), &opts) })?;
        NonNull::new(raw)
            .map(|raw| Client { raw, hook })
            .ok_or_else(|| Error {
                code: code::ERROR,
                message: "no client returned".into(),
            })
    }
}

impl Client {
    /// Creates a client from a JSON configuration, which must name its
    /// `"ledger"` (`"sqlite:///abs/path.db"`, `"postgresql://..."`, or
    /// `"memory:"` written out). A bad configuration is an `Err` with code
    /// [`code::ECONFIG`] whose message names the key.
    pub fn new(config_json: &str) -> Result<Client, Error> {
        Client::builder(config_json).build()
    }

    /// A builder, for a client with a request hook.
    pub fn builder(config_json: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            config_json: config_json.into(),
            hook: None,
        }
    }

    fn ptr(&self) -> *mut sys::pay_client {
        self.raw.as_ptr()
    }

    /// Submits one payment: POSTs `body` (identical bytes on every attempt)
    /// under one idempotency key (`key`, or a fresh UUIDv4), retrying only
    /// what can recover. A decline is `Ok` with [`Outcome::Failed`](crate::Outcome::Failed).
    pub fn submit(
        &self,
        order_id: &str,
        body: &[u8],
        key: Option<&str>,
    ) -> Result<PayResult, Error> {
        let opts = match key {
            Some(k) => SubmitOptions::new().idempotency_key(k),
            None => SubmitOptions::new(),
        };
        self.submit_with(order_id, body, &opts)
    }

    /// [`Client::submit`] with every per-payment setting.
    pub fn submit_with(
        &self,
        order_id: &str,
        body: &[u8],
        options: &SubmitOptions,
    ) -> Result<PayResult, Error> {
        let order = cstring(order_id, "order_id")?;
        let c_opts = options.to_c()?;
        let raw_opts = c_opts.raw();
        let mut out = ptr::null_mut();
        // SAFETY: all pointers are valid for the call; the client is thread-safe.
        check(unsafe {
            sys::pay_submit(
                &mut out,
                self.ptr(),
                order.as_ptr(),
                body.as_ptr().cast(),
                body.len(),
                &raw_opts,
            )
        })
        .map_err(|e| hook::explain(e, order_id))?;
        // SAFETY: a result the library returned.
        unsafe { PayResult::from_raw(out) }
    }

    /// Starts one payment on the client's engine threads and returns at
    /// once; the future resolves to what [`Client::submit_with`] would have
    /// returned. The body is copied. The payment runs to its end whether or
    /// not the future is polled or kept (see [`SubmitFuture`]); dropping the
    /// client waits for it. Needs no particular async runtime.
    pub fn submit_async(
        &self,
        order_id: &str,
        body: &[u8],
        options: &SubmitOptions,
    ) -> SubmitFuture {
        let order = match cstring(order_id, "order_id") {
            Ok(o) => o,
            Err(e) => return SubmitFuture::refused(e),
        };
        let c_opts = match options.to_c() {
            Ok(o) => o,
            Err(e) => return SubmitFuture::refused(e),
        };
        let raw_opts = c_opts.raw();
        let (shared, payload) = SubmitFuture::start(order_id);
        // SAFETY: valid pointers for the call (the body is copied); payload
        // is one Arc reference, taken back by future::done, called exactly
        // once when this returns 0, and by not_started otherwise.
        let rc = unsafe {
            sys::pay_submit_async(
                self.ptr(),
                order.as_ptr(),
                body.as_ptr().cast(),
                body.len(),
                &raw_opts,
                Some(crate::future::done),
                payload,
            )
        };
        match check(rc) {
            Ok(()) => SubmitFuture::started(shared),
            // SAFETY: the call failed, so the done callback never runs.
            Err(e) => unsafe { SubmitFuture::not_started(payload, e) },
        }
    }

    /// Captures, refunds or cancels the payment of `order_id` (one this
    /// client's ledger holds), as safely as the payment itself: the
    /// operation is a ledger row of its own (`"<order_id> <kind> <ref>"`, the
    /// result's order id), its key and what was asked committed before the
    /// first byte, then sent, retried and settled as a payment is. The result
    /// is the operation's (money `Paid` for a capture, `Refunded` for a
    /// refund, `Failed` for a cancel, or `Unknown` where the provider tells it
    /// later); the payment's money moves forward with it
    /// ([`Client::ledger_get`]).
    ///
    /// `Err`, with nothing sent: [`code::EINVALID`] for an operation the
    /// payment does not allow (not settled, its money not where the
    /// operation applies, an amount beyond what is left: every capture and
    /// refund that did not fail counts as spent, UNKNOWN ones too) or a
    /// provider whose profile does not send it; [`code::ENOTFOUND`] for an
    /// order not in the ledger; [`code::EMISMATCH`] for a ref asked before
    /// with other parameters.
    pub fn submit_operation(
        &self,
        order_id: &str,
        kind: Operation,
        options: &OperationOptions,
    ) -> Result<PayResult, Error> {
        let order = cstring(order_id, "order_id")?;
        let c_opts = options.to_c()?;
        let raw_opts = c_opts.raw();
        let mut out = ptr::null_mut();
        // SAFETY: all pointers are valid for the call; the client is thread-safe.
        check(unsafe {
            sys::pay_submit_operation(&mut out, self.ptr(), order.as_ptr(), kind.to_c(), &raw_opts)
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

    /// Hands payretry a provider's notification (webhook) exactly as the HTTP
    /// server received it and returns what to answer (`pay_webhook_apply`):
    /// `method` ("POST"), `url` the full URL the provider called (scheme and
    /// host included: Square signs it), every header (names in any case;
    /// `&str`, `String`, bytes or `http::HeaderValue` alike), and the raw
    /// body bytes before any parsing. The notification is verified with the
    /// config's `"webhook"` secrets and each event it names is recorded once,
    /// settling an UNKNOWN payment it reports as succeeded or failed. A
    /// forged, stale or unstorable notification is a reply (400, 503), not
    /// an `Err`; an `Err` is a failed call: `ErrorKind::Config` (the profile
    /// reads no notifications, or a secret its scheme needs is missing),
    /// `ErrorKind::InvalidArgument` (a NUL in a string). Blocks on the ledger (and,
    /// for Mollie, on the provider's lookup).
    ///
    /// ```no_run
    /// # let client = payretry::Client::new("{}")?;
    /// # let (signature, body): (&str, &[u8]) = ("t=...,v1=...", b"{}");
    /// let reply = client.apply_webhook(
    ///     "POST",
    ///     "https://shop.example/hooks/stripe",
    ///     &[("Stripe-Signature", signature), ("Content-Type", "application/json")],
    ///     body,
    /// )?;
    /// // answer reply.status, reply.content_type (when not empty) and reply.body
    /// # Ok::<(), payretry::Error>(())
    /// ```
    pub fn apply_webhook<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &self,
        method: &str,
        url: &str,
        headers: &[(N, V)],
        body: &[u8],
    ) -> Result<WebhookReply, Error> {
        crate::webhook::apply(self.ptr(), method, url, headers, body)
    }

    /// One payment as recorded in the ledger, as JSON (`{"payment": {...}, "attempts": [...]}`).
    pub fn ledger_get(&self, order_id: &str) -> Result<String, Error> {
        let order = cstring(order_id, "order_id")?;
        let mut buf = Buf::new();
        // SAFETY: valid pointers for the call.
        check(unsafe { sys::pay_ledger_get(&mut buf.0, self.ptr(), order.as_ptr()) })?;
        Ok(buf.text())
    }

    /// The payments `filter` selects, oldest update first, as a JSON array
    /// of the `"payment"` objects of [`Client::ledger_get`].
    pub fn ledger_list(&self, filter: &LedgerFilter) -> Result<String, Error> {
        let state = filter
            .state
            .map(|s| cstring(s.as_str(), "state"))
            .transpose()?;
        let mut buf = Buf::new();
        // SAFETY: valid pointers for the call.
        check(unsafe {
            sys::pay_ledger_list(
                &mut buf.0,
                self.ptr(),
                state.as_ref().map_or(ptr::null(), |s| s.as_ptr()),
                filter.updated_before_unix_ms,
                filter.limit,
            )
        })?;
        Ok(buf.text())
    }

    /// Deletes the SUCCEEDED and FAILED payments (and their attempts) last
    /// updated before `updated_before_unix_ms`, and returns how many. Never
    /// an UNKNOWN, PENDING or IN_FLIGHT one. An order pruned and submitted
    /// again is a new payment under a new key: prune only what no one will
    /// submit again (the library refuses a cutoff younger than a day, or than
    /// the provider's key retention).
    pub fn ledger_prune(&self, updated_before_unix_ms: i64) -> Result<u64, Error> {
        let mut pruned: u64 = 0;
        // SAFETY: valid pointers for the call.
        check(unsafe { sys::pay_ledger_prune(self.ptr(), updated_before_unix_ms, &mut pruned) })?;
        Ok(pruned)
    }

    /// The client's counters as JSON.
    pub fn stats(&self) -> Result<String, Error> {
        let mut buf = Buf::new();
        // SAFETY: valid pointers for the call.
        check(unsafe { sys::pay_client_stats(&mut buf.0, self.ptr()) })?;
        Ok(buf.text())
    }

    /// The client's metrics as Prometheus text (exposition format 0.0.4,
    /// names prefixed `payretry_`): payment runs by outcome and delivery,
    /// answers from the ledger, settlements by lookup, attempts by verdict
    /// and reason, retries, the retry budget, payments in flight,
    /// connections, and latency histograms. Serve it on a `/metrics`
    /// endpoint as is.
    pub fn metrics(&self) -> Result<String, Error> {
        let mut buf = Buf::new();
        // SAFETY: valid pointers for the call; thread-safe.
        check(unsafe { sys::pay_client_metrics(&mut buf.0, self.ptr()) })?;
        Ok(buf.text())
    }

    /// Reopens the config's log file by its path, for log rotation (after
    /// the file was moved away, on SIGHUP say). `Ok` too when the config
    /// names no log file; `Err` of kind [`ErrorKind::Io`](crate::ErrorKind::Io)
    /// when it cannot be opened, and the old file stays in use.
    pub fn reopen_log(&self) -> Result<(), Error> {
        // SAFETY: a valid client; thread-safe.
        check(unsafe { sys::pay_client_reopen_log(self.ptr()) })
    }
}
