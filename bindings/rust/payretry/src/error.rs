//! Failed calls: [`Error`] (the `PAY_E*` code and the library's message) and
//! [`ErrorKind`], the codes of `PAY_ERROR_MAP` (`payretry/errors.h`) as an enum.

use payretry_sys as sys;
use std::ffi::{c_int, CStr, CString};
use std::fmt;

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

/// What kind of failure an [`Error`] is: one variant per row of
/// `PAY_ERROR_MAP` but `PAY_OK`. A code this binding does not know (a newer
/// library) is [`ErrorKind::Other`] with the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `PAY_ERROR`: an unexpected internal error.
    Internal,
    /// `PAY_EINVALID`: a bad argument, or a call made where it is not allowed.
    InvalidArgument,
    /// `PAY_ENOMEM`: out of memory.
    OutOfMemory,
    /// `PAY_ECONFIG`: the JSON configuration is invalid (the message names the key).
    Config,
    /// `PAY_EMISMATCH`: the key or the order was used before with other parameters.
    Mismatch,
    /// `PAY_ETOOBIG`: the body is larger than the config's `max_body_bytes`.
    TooBig,
    /// `PAY_EKEY`: the caller's idempotency key is unusable.
    Key,
    /// `PAY_EVERSION`: an options struct version the library does not know.
    Version,
    /// `PAY_EHOOK`: the request hook refused before anything was sent.
    Hook,
    /// `PAY_EIO`: an I/O error (e.g. the log file cannot be opened).
    Io,
    /// `PAY_ELEDGER`: the ledger is locked, read-only, full, corrupt or unreachable.
    Ledger,
    /// `PAY_ENOTFOUND`: the order is not in the ledger.
    NotFound,
    /// `PAY_EAGAIN`: no answer yet, wait again.
    Again,
    /// A code this binding does not know.
    Other(i32),
}

impl ErrorKind {
    /// The kind of a `PAY_E*` code.
    pub fn from_code(code: i32) -> ErrorKind {
        match code {
            sys::PAY_ERROR => ErrorKind::Internal,
            sys::PAY_EINVALID => ErrorKind::InvalidArgument,
            sys::PAY_ENOMEM => ErrorKind::OutOfMemory,
            sys::PAY_ECONFIG => ErrorKind::Config,
            sys::PAY_EMISMATCH => ErrorKind::Mismatch,
            sys::PAY_ETOOBIG => ErrorKind::TooBig,
            sys::PAY_EKEY => ErrorKind::Key,
            sys::PAY_EVERSION => ErrorKind::Version,
            sys::PAY_EHOOK => ErrorKind::Hook,
            sys::PAY_EIO => ErrorKind::Io,
            sys::PAY_ELEDGER => ErrorKind::Ledger,
            sys::PAY_ENOTFOUND => ErrorKind::NotFound,
            sys::PAY_EAGAIN => ErrorKind::Again,
            other => ErrorKind::Other(other),
        }
    }

    /// The `PAY_E*` code of this kind.
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::Internal => sys::PAY_ERROR,
            ErrorKind::InvalidArgument => sys::PAY_EINVALID,
            ErrorKind::OutOfMemory => sys::PAY_ENOMEM,
            ErrorKind::Config => sys::PAY_ECONFIG,
            ErrorKind::Mismatch => sys::PAY_EMISMATCH,
            ErrorKind::TooBig => sys::PAY_ETOOBIG,
            ErrorKind::Key => sys::PAY_EKEY,
            ErrorKind::Version => sys::PAY_EVERSION,
            ErrorKind::Hook => sys::PAY_EHOOK,
            ErrorKind::Io => sys::PAY_EIO,
            ErrorKind::Ledger => sys::PAY_ELEDGER,
            ErrorKind::NotFound => sys::PAY_ENOTFOUND,
            ErrorKind::Again => sys::PAY_EAGAIN,
            ErrorKind::Other(code) => code,
        }
    }

    /// The code's name in `payretry/errors.h` (`"PAY_ECONFIG"`), or `None` for
    /// a code this binding does not know.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            ErrorKind::Internal => "PAY_ERROR",
            ErrorKind::InvalidArgument => "PAY_EINVALID",
            ErrorKind::OutOfMemory => "PAY_ENOMEM",
            ErrorKind::Config => "PAY_ECONFIG",
            ErrorKind::Mismatch => "PAY_EMISMATCH",
            ErrorKind::TooBig => "PAY_ETOOBIG",
            ErrorKind::Key => "PAY_EKEY",
            ErrorKind::Version => "PAY_EVERSION",
            ErrorKind::Hook => "PAY_EHOOK",
            ErrorKind::Io => "PAY_EIO",
            ErrorKind::Ledger => "PAY_ELEDGER",
            ErrorKind::NotFound => "PAY_ENOTFOUND",
            ErrorKind::Again => "PAY_EAGAIN",
            ErrorKind::Other(_) => return None,
        })
    }

    /// The library's static description of the code (`pay_strerror`).
    pub fn description(self) -> &'static str {
        // SAFETY: pay_strerror returns a static, never-NULL string for any number.
        unsafe { CStr::from_ptr(sys::pay_strerror(self.code())) }
            .to_str()
            .unwrap_or("unknown error code")
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// A failed call: a negative `PAY_E*` code (see [`code`] and [`Error::kind`])
/// and the library's message for it (never holding a secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: i32,
    pub message: String,
}

impl Error {
    /// The kind of failure, from [`Error::code`].
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::from_code(self.code)
    }

    /// Reads the calling thread's last error for a call that returned `rc`,
    /// then clears it so that it cannot leak into the next call's report.
    /// Must run on the thread of the failing call, right after it.
    pub(crate) fn last(rc: c_int) -> Error {
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

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error {
            code: code::EINVALID,
            message: message.into(),
        }
    }

    pub(crate) fn nul(what: &str) -> Error {
        Error::invalid(format!("{what} contains a NUL byte"))
    }
}

/// `PAY_ECONFIG: provider: unknown provider ...`: the code's name, which a
/// reader can look up (`errors.h`, the docs), then the library's message; a
/// code this binding does not know shows its number, `PAY_E(-99): ...`.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind().name() {
            Some(name) => write!(f, "{name}: {}", self.message),
            None => write!(f, "PAY_E({}): {}", self.code, self.message),
        }
    }
}

impl std::error::Error for Error {}

/// `Ok` for a non-negative return code, else the thread's last error.
pub(crate) fn check(rc: c_int) -> Result<(), Error> {
    if rc < 0 {
        Err(Error::last(rc))
    } else {
        Ok(())
    }
}

pub(crate) fn cstring(s: &str, what: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|_| Error::nul(what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_of_the_map_has_its_own_kind_and_back() {
        let codes = [
            code::ERROR,
            code::EINVALID,
            code::ENOMEM,
            code::ECONFIG,
            code::EMISMATCH,
            code::ETOOBIG,
            code::EKEY,
            code::EVERSION,
            code::EHOOK,
            code::EIO,
            code::ELEDGER,
            code::ENOTFOUND,
            code::EAGAIN,
        ];
        let mut kinds = Vec::new();
        for c in codes {
            let kind = ErrorKind::from_code(c);
            assert!(!matches!(kind, ErrorKind::Other(_)), "{c} has no kind");
            assert_eq!(kind.code(), c);
            assert!(!kinds.contains(&kind), "{kind:?} twice");
            kinds.push(kind);
            // SAFETY: pay_strerror returns a static string for any number.
            let text = unsafe { CStr::from_ptr(sys::pay_strerror(c)) }
                .to_str()
                .unwrap();
            assert_eq!(kind.to_string(), text);
        }
        assert_eq!(ErrorKind::from_code(-99), ErrorKind::Other(-99));
        assert_eq!(ErrorKind::Other(-99).code(), -99);
        assert_eq!(ErrorKind::Other(-99).description(), "unknown error code");
        let e = Error {
            code: code::ELEDGER,
            message: "locked".into(),
        };
        assert_eq!(e.kind(), ErrorKind::Ledger);
    }

    #[test]
    fn an_error_shows_the_codes_name_and_the_librarys_message() {
        let e = Error {
            code: code::ELEDGER,
            message: "ledger (sqlite): database is locked".into(),
        };
        assert_eq!(
            e.to_string(),
            "PAY_ELEDGER: ledger (sqlite): database is locked"
        );
        let newer = Error {
            code: -99,
            message: "unknown error code".into(),
        };
        assert_eq!(newer.to_string(), "PAY_E(-99): unknown error code");
        // From the library itself: a misspelt provider, named with the one meant.
        let e = match crate::Client::new(
            r#"{"provider":"stripee","base_url":"http://127.0.0.1:9","ledger":"memory:"}"#,
        ) {
            Ok(_) => panic!("an unknown provider was accepted"),
            Err(e) => e,
        };
        let text = e.to_string();
        assert!(
            text.starts_with(
                r#"PAY_ECONFIG: provider: unknown provider "stripee"; did you mean "stripe"?"#
            ),
            "{text}"
        );
    }

    /// The names are errors.h's, row by row: a code added there without a
    /// name here fails. The header is the installed one (PAYRETRY_PREFIX,
    /// which run_tests.sh sets).
    #[test]
    fn every_name_is_the_one_errors_h_gives_its_code() {
        let Some(prefix) = std::env::var_os("PAYRETRY_PREFIX").filter(|p| !p.is_empty()) else {
            assert!(
                std::env::var("PAYRETRY_REQUIRE_BINDINGS").as_deref() != Ok("1"),
                "PAYRETRY_REQUIRE_BINDINGS=1 but PAYRETRY_PREFIX is not set"
            );
            eprintln!("skipped: PAYRETRY_PREFIX is not set (an installed prefix; see README.md)");
            return;
        };
        let path = std::path::Path::new(&prefix).join("include/payretry/errors.h");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut rows = 0;
        for line in text.lines() {
            let Some(row) = line.trim().strip_prefix("XX(") else {
                continue;
            };
            let mut parts = row.splitn(3, ',');
            let name = parts.next().unwrap().trim();
            let value: i32 = parts.next().unwrap().trim().parse().expect(line);
            if value == 0 {
                continue; // PAY_OK: a success, never an Error
            }
            assert_eq!(ErrorKind::from_code(value).name(), Some(name), "{line}");
            rows += 1;
        }
        assert!(rows >= 13, "only {rows} codes read from {}", path.display());
    }
}
