//! [`Client::apply_webhook`](crate::Client::apply_webhook): a provider's
//! notification as the HTTP server received it, and what to answer.

use crate::error::{check, Error};
use crate::ffi_util::Buf;
use payretry_sys as sys;
use std::ffi::{c_void, CString};
use std::ptr;

/// What to answer the provider, and what the notification did: send
/// `status`, a `Content-Type: content_type` header when it is not empty,
/// and `body`, as they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookReply {
    /// The HTTP status: the provider's ack (2xx) when accepted, 400 when
    /// refused (not verified, malformed, stale; nothing changed), 503 when
    /// verified but not stored (the provider delivers it again).
    pub status: i32,
    /// Empty: send no Content-Type.
    pub content_type: String,
    /// May be empty (Adyen's is `[accepted]`, Alipay's `success`).
    pub body: Vec<u8>,
    /// The library's JSON account: `{"verdict": "accepted" | "refused" |
    /// "retry", "why", "scheme", "status", "events": [{"event_id", "type",
    /// "order_id", "provider_payment_id", "provider_status", "money_state",
    /// "finding", "effect", "state_before", "state_after", "why"}]}`
    /// (webhook.h); `money_state` is a [`MoneyState`](crate::MoneyState)
    /// name. Fulfil on `paid` (or `authorized` where you capture later),
    /// never on a `SUCCEEDED` `state_after` alone.
    pub outcome: String,
}

/// A C copy of `s`; a NUL inside is an error naming `what`.
fn c_bytes(s: &[u8], what: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|_| Error::nul(what))
}

pub(crate) fn apply(
    client: *mut sys::pay_client,
    method: &str,
    url: &str,
    headers: &[(impl AsRef<[u8]>, impl AsRef<[u8]>)],
    body: &[u8],
) -> Result<WebhookReply, Error> {
    let method = c_bytes(method.as_bytes(), "webhook method")?;
    let url = c_bytes(url.as_bytes(), "webhook URL")?;
    let strings = headers
        .iter()
        .map(|(n, v)| {
            Ok((
                c_bytes(n.as_ref(), "webhook header name")?,
                c_bytes(v.as_ref(), "webhook header value")?,
            ))
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let pairs: Vec<sys::pay_header> = strings
        .iter()
        .map(|(n, v)| sys::pay_header {
            name: n.as_ptr(),
            value: v.as_ptr(),
        })
        .collect();
    let request = sys::pay_webhook_request {
        version: sys::PAY_WEBHOOK_REQUEST_VERSION,
        method: method.as_ptr(),
        url: url.as_ptr(),
        headers: if pairs.is_empty() {
            ptr::null()
        } else {
            pairs.as_ptr()
        },
        header_count: pairs.len(),
        body: if body.is_empty() {
            ptr::null()
        } else {
            body.as_ptr().cast::<c_void>()
        },
        body_len: body.len(),
    };
    let empty = || sys::pay_buf {
        ptr: ptr::null_mut(),
        size: 0,
    };
    let mut reply = sys::pay_webhook_reply {
        status: 0,
        content_type: empty(),
        body: empty(),
        outcome: empty(),
    };
    // SAFETY: every pointer is valid for the call; the library fills `reply`
    // (zeroes it on an error).
    let rc = unsafe { sys::pay_webhook_apply(&mut reply, client, &request) };
    // Each buffer is disposed when its Buf drops, also on an error.
    let (content_type, reply_body, outcome) =
        (Buf(reply.content_type), Buf(reply.body), Buf(reply.outcome));
    let status = reply.status;
    check(rc)?;
    Ok(WebhookReply {
        status,
        content_type: content_type.text(),
        body: reply_body.bytes(),
        outcome: outcome.text(),
    })
}
