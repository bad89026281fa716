//! `Client::submit_async`: a future over `pay_submit_async`, driven by the
//! smallest executor (common::block_on), no runtime.
mod common;

use common::{block_on, body, order, sim};
use payretry::{ErrorKind, Outcome, SubmitFuture, SubmitOptions};
use std::time::Duration;

fn assert_send<T: Send + 'static>(_: &T) {}

#[test]
fn many_payments_in_flight_each_charged_once() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let orders: Vec<String> = (0..16).map(|i| order(&format!("async{i}"))).collect();
    // Every other order loses its first response: retries on the engine thread.
    for o in orders.iter().step_by(2) {
        sim.script(o, &["lost_response", "none"]);
    }
    let futures: Vec<(String, SubmitFuture)> = orders
        .iter()
        .map(|o| {
            (
                o.clone(),
                c.submit_async(o, &body(o), &SubmitOptions::new()),
            )
        })
        .collect();
    assert_send(&futures[0].1);
    for (o, f) in futures {
        let r = block_on(f).unwrap();
        assert_eq!(r.outcome(), Outcome::Succeeded, "{o}: {}", r.json());
        assert_eq!(r.order_id(), o);
        assert_eq!(sim.charges(&o), 1, "{o}");
    }
}

#[test]
fn options_travel_with_the_async_payment() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("async-key");
    let key = format!("key-{o}");
    let opts = SubmitOptions::new()
        .idempotency_key(key.as_str())
        .deadline(Duration::from_secs(3));
    let r = block_on(c.submit_async(&o, &body(&o), &opts)).unwrap();
    assert_eq!(r.idempotency_key(), key);
    // The same order with another body is a caller bug, reported by the future.
    let other = format!(r#"{{"order_id":"{o}","amount":1}}"#);
    let e = block_on(c.submit_async(&o, other.as_bytes(), &opts)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Mismatch, "{e}");
    assert_eq!(sim.charges(&o), 1);
}

#[test]
fn a_refused_start_is_an_error_from_the_future() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let e = block_on(c.submit_async("a\0b", b"{}", &SubmitOptions::new())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let e = block_on(c.submit_async(&order("empty"), b"", &SubmitOptions::new())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let o = order("zero-deadline");
    let e = block_on(c.submit_async(
        &o,
        &body(&o),
        &SubmitOptions::new().deadline(Duration::ZERO),
    ))
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message.contains("deadline"), "{e}");
}

#[test]
fn a_dropped_future_does_not_cancel_the_payment() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("dropped");
    sim.script(&o, &["lost_response", "none"]);
    drop(c.submit_async(&o, &body(&o), &SubmitOptions::new()));
    // Dropping the client waits for the payment to end.
    let stats_before_drop = c.stats().unwrap();
    drop(c);
    assert_eq!(sim.charges(&o), 1, "{stats_before_drop}");
}
