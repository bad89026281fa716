//! `SubmitOptions`: the idempotency key, path and deadline of one payment,
//! as they reach the provider.
mod common;

use common::{block_on, body, capture_requests, header_value, order, sim, API_KEY};
use payretry::{Client, ErrorKind, Outcome, SubmitOptions};
use std::time::{Duration, Instant};

/// A client of a capture server at `addr`; `extra` is spliced into the config.
fn capture_client(addr: &str, extra: &str) -> Client {
    Client::new(&format!(
        r#"{{"provider":"stripe","base_url":"http://{addr}","auth":{{"bearer":"{API_KEY}"}},
           "ledger":"memory:","retry":{{"max_attempts":3,"deadline_ms":5000,
           "backoff_base_ms":10,"backoff_cap_ms":50}}{extra}}}"#
    ))
    .unwrap()
}

#[test]
fn the_key_and_the_path_go_out_as_given() {
    let capture = capture_requests(0);
    let c = capture_client(&capture.addr, "");
    let o = order("options");
    let opts = SubmitOptions::new()
        .idempotency_key(format!("key-{o}"))
        .path("/v1/payment_intents");
    let r = c.submit_with(&o, &body(&o), &opts).unwrap();
    assert_eq!(r.outcome(), Outcome::Succeeded, "{}", r.json());
    let head = capture.heads.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        head.starts_with("POST /v1/payment_intents HTTP/1.1\r\n"),
        "{head}"
    );
    assert_eq!(
        header_value(&head, "Idempotency-Key"),
        Some(format!("key-{o}").as_str()),
        "{head}"
    );
}

#[test]
fn a_short_deadline_ends_the_payment_early() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("deadline");
    // `slow` holds the request 2 s; the client's deadline is 6 s.
    sim.script(&o, &["slow", "slow", "slow", "slow"]);
    let started = Instant::now();
    let r = c
        .submit_with(
            &o,
            &body(&o),
            &SubmitOptions::new().deadline(Duration::from_millis(400)),
        )
        .unwrap();
    let took = started.elapsed();
    assert_eq!(r.outcome(), Outcome::Unknown, "{}", r.json());
    assert!(
        took < Duration::from_millis(1500),
        "took {took:?}: {}",
        r.json()
    );
}

#[test]
fn bad_options_are_refused_before_anything_is_sent() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("bad-options");
    let cases = [
        (
            SubmitOptions::new().idempotency_key("a\0b"),
            ErrorKind::InvalidArgument,
        ),
        (
            SubmitOptions::new().idempotency_key("line\r\nbreak"),
            ErrorKind::Key,
        ),
        (
            SubmitOptions::new().path("a\0b"),
            ErrorKind::InvalidArgument,
        ),
        (
            SubmitOptions::new().deadline(Duration::ZERO),
            ErrorKind::InvalidArgument,
        ),
    ];
    for (opts, kind) in cases {
        let e = c.submit_with(&o, &body(&o), &opts).unwrap_err();
        assert_eq!(e.kind(), kind, "{opts:?}: {e}");
    }
    assert_eq!(sim.charges(&o), 0);
}

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn headers_and_traceparent_go_out_on_every_attempt_and_in_the_log() {
    let capture = capture_requests(1);
    let log_dir = std::env::temp_dir().join(format!("payretry-rs-trace-{}", std::process::id()));
    std::fs::create_dir_all(&log_dir).unwrap();
    let log = log_dir.join("attempts.jsonl");
    let c = capture_client(
        &capture.addr,
        &format!(r#","log":{{"path":"{}","level":"debug"}}"#, log.display()),
    );
    let o = order("trace");
    let opts = SubmitOptions::new()
        .header("X-Tenant", "shop-7")
        .header("X-Request-Source", "rust test")
        .traceparent(TRACEPARENT);
    let r = c.submit_with(&o, &body(&o), &opts).unwrap();
    assert_eq!(r.outcome(), Outcome::Succeeded, "{}", r.json());
    assert_eq!(r.attempts(), 2, "{}", r.json());
    drop(c); // flushes and closes the log
    for n in 1..=2 {
        let head = capture.heads.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(
            header_value(&head, "X-Tenant"),
            Some("shop-7"),
            "attempt {n}: {head}"
        );
        assert_eq!(
            header_value(&head, "X-Request-Source"),
            Some("rust test"),
            "attempt {n}: {head}"
        );
        assert_eq!(
            header_value(&head, "traceparent"),
            Some(TRACEPARENT),
            "attempt {n}: {head}"
        );
        assert_eq!(
            header_value(&head, "Idempotency-Key"),
            Some(r.idempotency_key()),
            "{head}"
        );
    }
    let lines = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_dir_all(&log_dir);
    let of_this_payment: Vec<&str> = lines.lines().filter(|l| l.contains(&o)).collect();
    assert!(of_this_payment.len() >= 2, "{lines}");
    for line in of_this_payment {
        assert!(line.contains(TRACEPARENT), "{line}");
    }
}

#[test]
fn headers_travel_with_an_async_payment_too() {
    let capture = capture_requests(0);
    let c = capture_client(&capture.addr, "");
    let o = order("trace-async");
    let opts = SubmitOptions::new()
        .header("X-Tenant", "shop-8")
        .traceparent(TRACEPARENT);
    let r = block_on(c.submit_async(&o, &body(&o), &opts)).unwrap();
    assert_eq!(r.outcome(), Outcome::Succeeded, "{}", r.json());
    let head = capture.heads.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(header_value(&head, "X-Tenant"), Some("shop-8"), "{head}");
    assert_eq!(
        header_value(&head, "traceparent"),
        Some(TRACEPARENT),
        "{head}"
    );
}

#[test]
fn refused_headers_and_a_malformed_traceparent_send_nothing() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("bad-headers");
    let too_many = (0..65).fold(SubmitOptions::new(), |opts, i| {
        opts.header(format!("X-H{i}"), "v")
    });
    let cases = [
        (
            SubmitOptions::new().header("Idempotency-Key", "mine"),
            "Idempotency-Key",
        ),
        (
            SubmitOptions::new().header("Authorization", "Bearer x"),
            "Authorization",
        ),
        (
            SubmitOptions::new().header("Content-Type", "text/plain"),
            "Content-Type",
        ),
        (
            SubmitOptions::new().header("traceparent", TRACEPARENT),
            "traceparent",
        ),
        (
            SubmitOptions::new().header("Bad Name", "v"),
            "not an HTTP token",
        ),
        (SubmitOptions::new().header("X-Ok", "line\r\nbreak"), "X-Ok"),
        (too_many, "64"),
        (
            SubmitOptions::new().traceparent("00-not-a-trace-01"),
            "traceparent",
        ),
    ];
    for (opts, named) in cases {
        let e = c.submit_with(&o, &body(&o), &opts).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{opts:?}: {e}");
        assert!(
            e.message.contains(named),
            "{opts:?}: {e} should name {named}"
        );
        let e = block_on(c.submit_async(&o, &body(&o), &opts)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "async {opts:?}: {e}");
    }
    assert_eq!(sim.charges(&o), 0);
    assert_eq!(sim.stat("requests"), 0);
}
