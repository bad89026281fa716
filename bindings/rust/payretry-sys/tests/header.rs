//! Checks the hand-written declarations in src/lib.rs against the installed C
//! headers: every `PAY_API` function is declared, every declared function
//! exists in the headers, and every error code, outcome, delivery, money
//! state, log level and options-struct version has the header's value.
//!
//! The headers are read from `$PAYRETRY_PREFIX/include`, else from the
//! includedir pkg-config reported to build.rs.
use payretry_sys::*;
use std::collections::BTreeMap;
use std::path::PathBuf;

const LIB_RS: &str = include_str!("../src/lib.rs");

fn include_dir() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PAYRETRY_PREFIX").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p).join("include"));
    }
    option_env!("PAYRETRY_SYS_INCLUDEDIR").map(PathBuf::from)
}

fn header(name: &str) -> String {
    let dir = include_dir().expect("no include dir: set PAYRETRY_PREFIX");
    let path = dir.join("payretry").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn headers() -> String {
    [
        "version.h",
        "errors.h",
        "result.h",
        "buffer.h",
        "client.h",
        "submit.h",
        "async.h",
        "settle.h",
        "ledger.h",
        "webhook.h",
        "operation.h",
    ]
    .iter()
    .map(|h| header(h))
    .collect::<Vec<_>>()
    .join("\n")
}

fn ident_before_paren(s: &str) -> Option<&str> {
    let s = &s[..s.find('(')?];
    let s = s.trim_end();
    let start = s
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    Some(&s[start..])
}

/// Names of the functions declared with PAY_API in the headers.
fn header_functions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("PAY_API ") {
        rest = &rest[i + "PAY_API ".len()..];
        if let Some(name) = ident_before_paren(rest) {
            out.push(name.to_string());
        }
    }
    out
}

/// `pub fn NAME(` declarations in lib.rs.
fn rust_functions() -> Vec<String> {
    LIB_RS
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub fn "))
        .filter_map(|l| l.split('(').next())
        .map(|s| s.trim().to_string())
        .collect()
}

fn parse_int(s: &str) -> Option<i64> {
    s.trim().trim_end_matches(',').trim().parse().ok()
}

/// Every numeric PAY_* constant of the headers: the PAY_ERROR_MAP rows,
/// `PAY_X = N` enumerators and `#define PAY_*_VERSION N`.
fn header_constants(text: &str) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(row) = t.strip_prefix("XX(") {
            let mut parts = row.splitn(3, ',');
            let (name, value) = (parts.next().unwrap().trim(), parts.next().unwrap());
            out.insert(name.to_string(), parse_int(value).expect(t));
        } else if let Some(def) = t.strip_prefix("#define PAY_") {
            let mut parts = def.split_whitespace();
            let name = parts.next().unwrap();
            if name.ends_with("_VERSION") {
                if let Some(v) = parts.next().and_then(parse_int) {
                    out.insert(format!("PAY_{name}"), v);
                }
            }
        } else if t.starts_with("PAY_") && t.contains('=') {
            let (name, value) = t.split_once('=').unwrap();
            let value = value.split("/*").next().unwrap();
            let name = name.trim();
            if name.ends_with('_') {
                continue; // PAY_ERROR_CODE_LAST_: a sentinel, not API
            }
            out.insert(name.to_string(), parse_int(value).expect(t));
        }
    }
    out
}

macro_rules! table {
    ($($c:ident),* $(,)?) => { vec![$((stringify!($c), $c as i64)),*] };
}

fn rust_constants() -> BTreeMap<&'static str, i64> {
    table![
        PAY_OK,
        PAY_ERROR,
        PAY_EINVALID,
        PAY_ENOMEM,
        PAY_ECONFIG,
        PAY_EMISMATCH,
        PAY_ETOOBIG,
        PAY_EKEY,
        PAY_EVERSION,
        PAY_EHOOK,
        PAY_EIO,
        PAY_ELEDGER,
        PAY_ENOTFOUND,
        PAY_EAGAIN,
        PAY_OUTCOME_SUCCEEDED,
        PAY_OUTCOME_FAILED,
        PAY_OUTCOME_UNKNOWN,
        PAY_OUTCOME_IN_PROGRESS,
        PAY_DELIVERY_NOT_SENT,
        PAY_DELIVERY_MAYBE_PROCESSED,
        PAY_DELIVERY_DELIVERED,
        PAY_MONEY_UNKNOWN,
        PAY_MONEY_AWAITING_CUSTOMER,
        PAY_MONEY_PENDING,
        PAY_MONEY_AUTHORIZED,
        PAY_MONEY_PAID,
        PAY_MONEY_PARTLY_REFUNDED,
        PAY_MONEY_REFUNDED,
        PAY_MONEY_FAILED,
        PAY_LOG_DEBUG,
        PAY_LOG_INFO,
        PAY_LOG_WARN,
        PAY_LOG_ERROR,
        PAY_CLIENT_OPTIONS_VERSION,
        PAY_SUBMIT_OPTIONS_VERSION,
        PAY_RECONCILE_OPTIONS_VERSION,
        PAY_BATCH_OPTIONS_VERSION,
        PAY_WEBHOOK_REQUEST_VERSION,
        PAY_OPERATION_CAPTURE,
        PAY_OPERATION_REFUND,
        PAY_OPERATION_CANCEL,
        PAY_OPERATION_OPTIONS_VERSION,
    ]
    .into_iter()
    .collect()
}

/// Skips (or fails under PAYRETRY_REQUIRE_BINDINGS=1) without headers.
fn have_headers() -> bool {
    let ok = include_dir().is_some_and(|d| d.join("payretry/errors.h").is_file());
    if !ok {
        assert!(
            std::env::var("PAYRETRY_REQUIRE_BINDINGS").as_deref() != Ok("1"),
            "PAYRETRY_REQUIRE_BINDINGS=1 but the payretry headers were not found"
        );
        eprintln!("skipped: payretry headers not found (set PAYRETRY_PREFIX)");
    }
    ok
}

#[test]
fn every_header_function_is_declared_and_vice_versa() {
    if !have_headers() {
        return;
    }
    let c: Vec<String> = header_functions(&headers());
    let rust = rust_functions();
    assert!(
        c.len() >= 30,
        "found only {} PAY_API functions: {c:?}",
        c.len()
    );
    let missing: Vec<_> = c.iter().filter(|f| !rust.contains(f)).collect();
    assert!(
        missing.is_empty(),
        "declared in the headers, not in lib.rs: {missing:?}"
    );
    let extra: Vec<_> = rust.iter().filter(|f| !c.contains(f)).collect();
    assert!(
        extra.is_empty(),
        "declared in lib.rs, not in the headers: {extra:?}"
    );
}

#[test]
fn every_constant_matches_the_header() {
    if !have_headers() {
        return;
    }
    let c = header_constants(&headers());
    let rust = rust_constants();
    assert!(c.len() >= 27, "parsed only {c:?}");
    for (name, value) in &c {
        assert_eq!(
            rust.get(name.as_str()),
            Some(value),
            "{name}: header says {value}"
        );
    }
    for name in rust.keys() {
        assert!(c.contains_key(*name), "{name} is not in the headers");
    }
}

#[test]
fn library_version_is_in_the_probed_range() {
    if !have_headers() {
        return;
    }
    // SAFETY: pay_version/pay_version_number take nothing and return a static string / int.
    let (s, n) = unsafe {
        (
            std::ffi::CStr::from_ptr(pay_version())
                .to_str()
                .unwrap()
                .to_owned(),
            pay_version_number(),
        )
    };
    assert!((100..10000).contains(&n), "version number {n}");
    assert!(s.starts_with("0."), "version {s}");
}
