//! `SubmitOptions`: the idempotency key, path and deadline of one payment,
//! as they reach the provider.
mod common;

use common::{body, capture_one_request, header_value, order, sim, API_KEY};
use payretry::{Client, ErrorKind, Outcome, SubmitOptions};
use std::time::{Duration, Instant};

/// A client of a capture server: exactly one attempt, which it answers.
fn capture_client(addr: &str) -> Client {
    Client::new(&format!(
        r#"{{"provider":"stripe","base_url":"http://{addr}","auth":{{"bearer":"{API_KEY}"}},
           "ledger":"memory:","retry":{{"max_attempts":1,"deadline_ms":5000}}}}"#
    ))
    .unwrap()
}

#[test]
fn the_key_and_the_path_go_out_as_given() {
    let capture = capture_one_request();
    let c = capture_client(&capture.addr);
    let o = order("options");
    let opts = SubmitOptions::new()
        .idempotency_key(format!("key-{o}"))
        .path("/v1/payment_intents");
    let r = c.submit_with(&o, &body(&o), &opts).unwrap();
    assert_eq!(r.outcome(), Outcome::Succeeded, "{}", r.json());
    let head = capture.head.recv_timeout(Duration::from_secs(10)).unwrap();
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
