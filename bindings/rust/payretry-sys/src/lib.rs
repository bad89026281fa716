//! Raw declarations of the payretry C API (`payretry/payretry.h`), written by
//! hand (no bindgen). Everything here is `unsafe` to use; see the `payretry`
//! crate for the safe wrapper. `tests/header.rs` checks these declarations
//! against the installed headers (function names and every constant).
#![allow(non_camel_case_types)]
#![no_std]

use core::ffi::{c_char, c_int, c_uint, c_void};
use core::marker::{PhantomData, PhantomPinned};

macro_rules! opaque {
    ($($name:ident),* $(,)?) => {$(
        /// Opaque C type, only ever used behind a pointer. Zero-sized,
        /// `!Send`, `!Sync`, `!Unpin`.
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}
opaque!(pay_client, pay_result, pay_headers, pay_body, pay_pending);

// ---- errors.h ---------------------------------------------------------------
pub const PAY_OK: c_int = 0;
pub const PAY_ERROR: c_int = -1;
pub const PAY_EINVALID: c_int = -2;
pub const PAY_ENOMEM: c_int = -3;
pub const PAY_ECONFIG: c_int = -4;
pub const PAY_EMISMATCH: c_int = -5;
pub const PAY_ETOOBIG: c_int = -6;
pub const PAY_EKEY: c_int = -7;
pub const PAY_EVERSION: c_int = -8;
pub const PAY_EHOOK: c_int = -9;
pub const PAY_EIO: c_int = -10;
pub const PAY_ELEDGER: c_int = -11;
pub const PAY_ENOTFOUND: c_int = -12;
pub const PAY_EAGAIN: c_int = -13;

#[repr(C)]
#[derive(Debug)]
pub struct pay_error {
    pub code: c_int,
    /// Never NULL.
    pub message: *const c_char,
}

// ---- result.h ---------------------------------------------------------------
pub const PAY_OUTCOME_SUCCEEDED: c_int = 1;
pub const PAY_OUTCOME_FAILED: c_int = 2;
pub const PAY_OUTCOME_UNKNOWN: c_int = 3;
pub const PAY_OUTCOME_IN_PROGRESS: c_int = 4;

pub const PAY_DELIVERY_NOT_SENT: c_int = 1;
pub const PAY_DELIVERY_MAYBE_PROCESSED: c_int = 2;
pub const PAY_DELIVERY_DELIVERED: c_int = 3;

pub const PAY_MONEY_UNKNOWN: c_int = 0;
pub const PAY_MONEY_AWAITING_CUSTOMER: c_int = 1;
pub const PAY_MONEY_PENDING: c_int = 2;
pub const PAY_MONEY_AUTHORIZED: c_int = 3;
pub const PAY_MONEY_PAID: c_int = 4;
pub const PAY_MONEY_PARTLY_REFUNDED: c_int = 5;
pub const PAY_MONEY_REFUNDED: c_int = 6;
pub const PAY_MONEY_FAILED: c_int = 7;

// ---- client.h, buffer.h, submit.h, async.h, settle.h ------------------------
pub const PAY_LOG_DEBUG: c_int = 10;
pub const PAY_LOG_INFO: c_int = 20;
pub const PAY_LOG_WARN: c_int = 30;
pub const PAY_LOG_ERROR: c_int = 40;

pub const PAY_CLIENT_OPTIONS_VERSION: c_uint = 1;
pub const PAY_SUBMIT_OPTIONS_VERSION: c_uint = 2;
pub const PAY_RECONCILE_OPTIONS_VERSION: c_uint = 1;
pub const PAY_BATCH_OPTIONS_VERSION: c_uint = 1;

pub type pay_log_cb =
    Option<unsafe extern "C" fn(level: c_int, line: *const c_char, payload: *mut c_void)>;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pay_attempt_info {
    pub method: *const c_char,
    pub url: *const c_char,
    pub path: *const c_char,
    pub order_id: *const c_char,
    pub idempotency_key: *const c_char,
    pub body: *const c_void,
    pub body_len: usize,
    pub attempt: c_uint,
    pub unix_time_ms: i64,
}

pub type pay_request_hook = Option<
    unsafe extern "C" fn(
        headers: *mut pay_headers,
        info: *const pay_attempt_info,
        payload: *mut c_void,
    ) -> c_int,
>;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pay_client_options {
    pub version: c_uint,
    pub log_cb: pay_log_cb,
    pub log_payload: *mut c_void,
    pub request_hook: pay_request_hook,
    pub hook_payload: *mut c_void,
}

/// One extra header of a submission (pay_submit_options version 2).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pay_header {
    pub name: *const c_char,
    pub value: *const c_char,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pay_submit_options {
    pub version: c_uint,
    pub idempotency_key: *const c_char,
    pub path: *const c_char,
    pub deadline_ms: u32,
    // version 2
    pub headers: *const pay_header,
    pub header_count: usize,
    pub traceparent: *const c_char,
}

#[repr(C)]
#[derive(Debug)]
pub struct pay_buf {
    /// NUL-terminated; NULL when empty.
    pub ptr: *mut c_char,
    /// Excluding the NUL.
    pub size: usize,
}

pub type pay_body_cb = Option<
    unsafe extern "C" fn(
        out: *mut pay_body,
        order_id: *const c_char,
        payload: *mut c_void,
    ) -> c_int,
>;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pay_reconcile_options {
    pub version: c_uint,
    pub body_for: pay_body_cb,
    pub body_payload: *mut c_void,
    pub limit: u32,
    pub older_than_ms: i64,
}

/// One payment of pay_submit_batch: inputs, then what the call wrote.
#[repr(C)]
#[derive(Debug)]
pub struct pay_batch_item {
    pub order_id: *const c_char,
    pub body: *const c_void,
    pub body_len: usize,
    pub idempotency_key: *const c_char,
    pub path: *const c_char,
    pub deadline_ms: u32,
    pub rc: c_int,
    pub result: *mut pay_result,
    pub message: [c_char; 256],
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pay_batch_options {
    pub version: c_uint,
    pub max_in_flight: usize,
}

pub type pay_done_cb = Option<
    unsafe extern "C" fn(
        rc: c_int,
        result: *mut pay_result,
        message: *const c_char,
        payload: *mut c_void,
    ),
>;

// ---- operation.h ------------------------------------------------------------
pub const PAY_OPERATION_CAPTURE: c_int = 1;
pub const PAY_OPERATION_REFUND: c_int = 2;
pub const PAY_OPERATION_CANCEL: c_int = 3;
pub const PAY_OPERATION_OPTIONS_VERSION: c_uint = 1;

/// A capture, refund or cancel of a payment (`pay_submit_operation`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pay_operation_options {
    pub version: c_uint,
    /// Required: the caller's name for the operation.
    pub ref_: *const c_char,
    /// 0: the rest.
    pub amount: i64,
    /// A JSON object of further fields; NULL: none.
    pub body: *const c_char,
    /// NULL: none.
    pub target_id: *const c_char,
    pub deadline_ms: u32,
}

// ---- webhook.h --------------------------------------------------------------
pub const PAY_WEBHOOK_REQUEST_VERSION: c_uint = 1;

/// What the HTTP server received from the provider, as it received it.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pay_webhook_request {
    pub version: c_uint,
    pub method: *const c_char,
    /// The full URL the provider called; NULL: "".
    pub url: *const c_char,
    pub headers: *const pay_header,
    pub header_count: usize,
    /// The raw body bytes.
    pub body: *const c_void,
    pub body_len: usize,
}

/// What to answer the provider, and what the notification did (JSON).
#[repr(C)]
#[derive(Debug)]
pub struct pay_webhook_reply {
    pub status: c_int,
    pub content_type: pay_buf,
    pub body: pay_buf,
    pub outcome: pay_buf,
}

extern "C" {
    // errors.h
    pub fn pay_error_last() -> *const pay_error;
    pub fn pay_error_clear();
    pub fn pay_strerror(code: c_int) -> *const c_char;

    // result.h
    pub fn pay_result_outcome(r: *const pay_result) -> c_int;
    pub fn pay_result_delivery(r: *const pay_result) -> c_int;
    pub fn pay_result_http_status(r: *const pay_result) -> c_int;
    pub fn pay_result_body(r: *const pay_result, len: *mut usize) -> *const c_char;
    pub fn pay_result_order_id(r: *const pay_result) -> *const c_char;
    pub fn pay_result_idempotency_key(r: *const pay_result) -> *const c_char;
    pub fn pay_result_provider_payment_id(r: *const pay_result) -> *const c_char;
    pub fn pay_result_provider_status(r: *const pay_result) -> *const c_char;
    pub fn pay_result_money_state(r: *const pay_result) -> c_int;
    pub fn pay_result_from_ledger(r: *const pay_result) -> c_int;
    pub fn pay_result_attempts(r: *const pay_result) -> c_int;
    pub fn pay_result_error(r: *const pay_result) -> *const c_char;
    pub fn pay_result_ledger_error(r: *const pay_result) -> *const c_char;
    pub fn pay_result_json(r: *const pay_result) -> *const c_char;
    pub fn pay_result_free(r: *mut pay_result);
    pub fn pay_outcome_name(outcome: c_int) -> *const c_char;
    pub fn pay_delivery_name(delivery: c_int) -> *const c_char;
    pub fn pay_money_state_name(state: c_int) -> *const c_char;

    // client.h, buffer.h, submit.h, async.h, settle.h, ledger.h, version.h
    pub fn pay_headers_add(
        headers: *mut pay_headers,
        name: *const c_char,
        value: *const c_char,
    ) -> c_int;
    pub fn pay_client_options_init(opts: *mut pay_client_options, version: c_uint) -> c_int;
    pub fn pay_client_new(
        out: *mut *mut pay_client,
        config_json: *const c_char,
        opts: *const pay_client_options,
    ) -> c_int;
    pub fn pay_client_free(client: *mut pay_client);
    pub fn pay_submit_options_init(opts: *mut pay_submit_options, version: c_uint) -> c_int;
    pub fn pay_submit(
        out: *mut *mut pay_result,
        client: *mut pay_client,
        order_id: *const c_char,
        body: *const c_void,
        body_len: usize,
        opts: *const pay_submit_options,
    ) -> c_int;
    pub fn pay_batch_options_init(opts: *mut pay_batch_options, version: c_uint) -> c_int;
    pub fn pay_submit_batch(
        items: *mut pay_batch_item,
        count: usize,
        client: *mut pay_client,
        opts: *const pay_batch_options,
    ) -> c_int;
    pub fn pay_submit_async(
        client: *mut pay_client,
        order_id: *const c_char,
        body: *const c_void,
        body_len: usize,
        opts: *const pay_submit_options,
        done: pay_done_cb,
        payload: *mut c_void,
    ) -> c_int;
    pub fn pay_submit_start(
        out: *mut *mut pay_pending,
        client: *mut pay_client,
        order_id: *const c_char,
        body: *const c_void,
        body_len: usize,
        opts: *const pay_submit_options,
    ) -> c_int;
    pub fn pay_pending_wait(
        out: *mut *mut pay_result,
        pending: *mut pay_pending,
        timeout_ms: c_int,
    ) -> c_int;
    pub fn pay_pending_free(pending: *mut pay_pending);
    pub fn pay_buf_dispose(buf: *mut pay_buf);
    pub fn pay_client_stats(out: *mut pay_buf, client: *const pay_client) -> c_int;
    pub fn pay_client_metrics(out: *mut pay_buf, client: *const pay_client) -> c_int;
    pub fn pay_client_reopen_log(client: *mut pay_client) -> c_int;
    pub fn pay_query(
        out: *mut *mut pay_result,
        client: *mut pay_client,
        order_id: *const c_char,
    ) -> c_int;
    pub fn pay_operation_options_init(opts: *mut pay_operation_options, version: c_uint) -> c_int;
    pub fn pay_submit_operation(
        out: *mut *mut pay_result,
        client: *mut pay_client,
        order_id: *const c_char,
        kind: c_int,
        opts: *const pay_operation_options,
    ) -> c_int;
    pub fn pay_body_set(body: *mut pay_body, data: *const c_void, len: usize) -> c_int;
    pub fn pay_reconcile_options_init(opts: *mut pay_reconcile_options, version: c_uint) -> c_int;
    pub fn pay_reconcile(
        out: *mut pay_buf,
        client: *mut pay_client,
        opts: *const pay_reconcile_options,
    ) -> c_int;
    pub fn pay_ledger_get(
        out: *mut pay_buf,
        client: *mut pay_client,
        order_id: *const c_char,
    ) -> c_int;
    pub fn pay_ledger_list(
        out: *mut pay_buf,
        client: *mut pay_client,
        state: *const c_char,
        updated_before_unix_ms: i64,
        limit: u32,
    ) -> c_int;
    pub fn pay_ledger_prune(
        client: *mut pay_client,
        updated_before_unix_ms: i64,
        pruned: *mut u64,
    ) -> c_int;
    // webhook.h
    pub fn pay_webhook_reply_dispose(reply: *mut pay_webhook_reply);
    pub fn pay_webhook_apply(
        reply: *mut pay_webhook_reply,
        client: *mut pay_client,
        request: *const pay_webhook_request,
    ) -> c_int;
    pub fn pay_version() -> *const c_char;
    pub fn pay_version_number() -> c_int;
}
