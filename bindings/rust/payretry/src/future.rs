//! [`SubmitFuture`]: a payment started with `pay_submit_async`, as a
//! `std::future::Future`. No runtime is needed: the library's engine thread
//! reports the answer through the done callback, which wakes the task.

use crate::error::Error;
use crate::hook;
use crate::result::PayResult;
use payretry_sys as sys;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// What the done callback and the future share.
#[derive(Default)]
struct Slot {
    answer: Option<Result<PayResult, Error>>,
    waker: Option<Waker>,
}

pub(crate) struct Shared {
    /// To find the request hook's words when it refused this payment.
    order_id: String,
    slot: Mutex<Slot>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        // A poisoned lock only means a waker panicked while we held it; the
        // slot itself is always whole.
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A payment started by [`Client::submit_async`](crate::Client::submit_async).
///
/// The payment started when `submit_async` returned, like a spawned task:
/// it is in the ledger and runs to its end on the client's engine thread
/// whether or not this future is polled. Dropping the future does not cancel
/// the payment; it only drops its answer (a later `submit` of the same order
/// reads it from the ledger). Resolves to what `submit` would have returned.
///
/// The task is woken from the library's engine thread, whose done callback
/// must not wait: the waker should schedule the task (as executors do), not
/// poll it inline there.
#[must_use = "the payment runs anyway; without awaiting this its answer is lost"]
pub struct SubmitFuture {
    state: State,
}

enum State {
    /// `pay_submit_async` refused: nothing started.
    Refused(Option<Error>),
    Started(Arc<Shared>),
}

impl SubmitFuture {
    pub(crate) fn refused(error: Error) -> SubmitFuture {
        SubmitFuture {
            state: State::Refused(Some(error)),
        }
    }

    /// A new shared slot, and the payload to hand to `pay_submit_async`
    /// (one reference, given back by the done callback or by [`Self::not_started`]).
    pub(crate) fn start(order_id: &str) -> (Arc<Shared>, *mut c_void) {
        let shared = Arc::new(Shared {
            order_id: order_id.to_owned(),
            slot: Mutex::new(Slot::default()),
        });
        let payload = Arc::into_raw(Arc::clone(&shared)).cast_mut().cast();
        (shared, payload)
    }

    /// Takes back the payload of a `pay_submit_async` that returned an error
    /// (the done callback will never run).
    ///
    /// # Safety
    /// `payload` came from [`Self::start`] and was not handed to a callback.
    pub(crate) unsafe fn not_started(payload: *mut c_void, error: Error) -> SubmitFuture {
        // SAFETY: per the contract, this is the reference start() leaked.
        drop(unsafe { Arc::from_raw(payload.cast_const().cast::<Shared>()) });
        SubmitFuture::refused(error)
    }

    pub(crate) fn started(shared: Arc<Shared>) -> SubmitFuture {
        SubmitFuture {
            state: State::Started(shared),
        }
    }
}

impl Future for SubmitFuture {
    type Output = Result<PayResult, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().state {
            State::Refused(error) => match error.take() {
                Some(e) => Poll::Ready(Err(e)),
                None => panic!("SubmitFuture polled after it completed"),
            },
            State::Started(shared) => {
                let mut slot = shared.lock();
                match slot.answer.take() {
                    Some(answer) => Poll::Ready(answer),
                    None => {
                        slot.waker = Some(cx.waker().clone());
                        Poll::Pending
                    }
                }
            }
        }
    }
}

impl std::fmt::Debug for SubmitFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Refused(_) => "refused",
            State::Started(_) => "started",
        };
        f.debug_struct("SubmitFuture")
            .field("state", &state)
            .finish()
    }
}

/// The `pay_done_cb` of [`SubmitFuture`]: called exactly once per started
/// payment, on an engine thread. Stores the answer and wakes the task; never
/// blocks beyond the slot's lock, and never unwinds into C.
pub(crate) unsafe extern "C" fn done(
    rc: c_int,
    result: *mut sys::pay_result,
    message: *const c_char,
    payload: *mut c_void,
) {
    // SAFETY: payload is the reference SubmitFuture::start leaked for this
    // payment; the library calls us once, so it is taken back once.
    let shared = unsafe { Arc::from_raw(payload.cast_const().cast::<Shared>()) };
    let answer = if rc == 0 {
        // SAFETY: rc 0: `result` is ours to free.
        unsafe { PayResult::from_raw(result) }
    } else {
        let text = if message.is_null() {
            String::new()
        } else {
            // SAFETY: a NUL-terminated message valid during the callback.
            unsafe { CStr::from_ptr(message) }
                .to_string_lossy()
                .into_owned()
        };
        Err(Error {
            code: rc,
            message: text,
        })
    };
    let _ = panic::catch_unwind(AssertUnwindSafe(move || {
        // A refusing hook ran on this engine thread: its own words are here.
        let answer = answer.map_err(|e| hook::explain(e, &shared.order_id));
        let waker = {
            let mut slot = shared.lock();
            slot.answer = Some(answer);
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }));
}
