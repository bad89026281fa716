//! The body callback of `pay_reconcile`, for [`Client::reconcile`](crate::Client::reconcile).

use payretry_sys as sys;
use std::any::Any;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{self, AssertUnwindSafe};

/// The body callback of [`Client::reconcile`](crate::Client::reconcile): the
/// exact bytes first submitted for an order, or `None` when the application
/// no longer has them.
pub type BodyFor<'a> = dyn Fn(&str) -> Option<Vec<u8>> + 'a;

/// What one `pay_reconcile` call shares with its body callback.
pub(crate) struct Reconcile<'a> {
    pub(crate) body_for: &'a BodyFor<'a>,
    /// A panic of `body_for`, resumed once `pay_reconcile` has returned.
    pub(crate) panic: Option<Box<dyn Any + Send>>,
}

/// `pay_body_cb` trampoline. A panic must not unwind into C: it is caught,
/// kept, reported to C as "no body" (the payment stays UNKNOWN), and resumed
/// by `Client::reconcile` once the C call has returned. After a panic the
/// closure is not called again.
pub(crate) unsafe extern "C" fn body_trampoline(
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
