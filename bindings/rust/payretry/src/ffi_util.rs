//! Small helpers for data the library hands over: borrowed C strings and
//! the `pay_buf` a call fills.

use payretry_sys as sys;
use std::ffi::{c_char, CStr};
use std::ptr;

/// Borrows a C string owned by something that outlives `'a`.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn borrowed<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        None
    } else {
        // SAFETY: per this function's contract.
        unsafe { CStr::from_ptr(p) }.to_str().ok()
    }
}

/// Copies a `pay_buf` the library filled, then disposes it (also on unwind).
pub(crate) struct Buf(pub(crate) sys::pay_buf);

impl Buf {
    pub(crate) fn new() -> Buf {
        Buf(sys::pay_buf {
            ptr: ptr::null_mut(),
            size: 0,
        })
    }

    pub(crate) fn text(&self) -> String {
        if self.0.ptr.is_null() {
            return String::new();
        }
        // SAFETY: ptr holds `size` bytes written by the library.
        let bytes = unsafe { std::slice::from_raw_parts(self.0.ptr.cast::<u8>(), self.0.size) };
        String::from_utf8_lossy(bytes).into_owned()
    }

    pub(crate) fn bytes(&self) -> Vec<u8> {
        if self.0.ptr.is_null() {
            return Vec::new();
        }
        // SAFETY: ptr holds `size` bytes written by the library.
        unsafe { std::slice::from_raw_parts(self.0.ptr.cast::<u8>(), self.0.size) }.to_vec()
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: the buf is empty or was filled by the library; dispose zeroes it.
        unsafe { sys::pay_buf_dispose(&mut self.0) }
    }
}
