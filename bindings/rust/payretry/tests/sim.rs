//! Tests of the safe binding against the simulator `payretry-sim` (see
//! common/mod.rs for how it is found and started).
mod common;

use common::{body, json_int, order, sim, Sim};
use payretry::{code, Client, Delivery, Outcome};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Leaves `order` UNKNOWN: every one of the 4 attempts loses its response.
fn lost_four_times(sim: &Sim, c: &Client, order: &str) {
    sim.script(order, &["lost_response"; 4]);
    let r = c.submit(order, &body(order), None).unwrap();
    assert_eq!(r.outcome(), Outcome::Unknown, "{}", r.json());
    assert_eq!(r.delivery(), Delivery::MaybeProcessed, "{}", r.json());
}

#[test]
fn submit_succeeds() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("ok");
    let r = c.submit(&o, &body(&o), None).unwrap();
    assert_eq!(
        (r.outcome(), r.delivery(), r.http_status()),
        (Outcome::Succeeded, Delivery::Delivered, 200)
    );
    assert_eq!(r.attempts(), 1);
    assert!(!r.from_ledger());
    assert_eq!(r.order_id(), o);
    assert!(!r.idempotency_key().is_empty());
    assert!(
        r.provider_payment_id().is_some_and(|id| !id.is_empty()),
        "{}",
        r.json()
    );
    assert!(
        r.body().starts_with(b"{"),
        "{:?}",
        String::from_utf8_lossy(r.body())
    );
    assert!(r.json().starts_with('{'));
    assert_eq!(sim.charges(&o), 1);

    // Again: from the ledger, nothing sent, same key.
    let again = c.submit(&o, &body(&o), None).unwrap();
    assert!(again.from_ledger() && again.outcome() == Outcome::Succeeded);
    assert_eq!(again.idempotency_key(), r.idempotency_key());
    let rec = c.ledger_get(&o).unwrap();
    assert!(rec.contains("SUCCEEDED") && rec.contains(&o), "{rec}");
    assert_eq!(sim.charges(&o), 1);
    // The result outlives its client.
    drop(c);
    assert_eq!(r.outcome(), Outcome::Succeeded);
}

#[test]
fn lost_response_is_retried_with_the_same_key_and_charged_once() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("lost");
    sim.script(&o, &["lost_response", "none"]);
    let key = format!("key-{o}");
    let r = c.submit(&o, &body(&o), Some(&key)).unwrap();
    assert_eq!(r.outcome(), Outcome::Succeeded, "{}", r.json());
    assert_eq!(r.attempts(), 2);
    assert_eq!(r.idempotency_key(), key);
    assert_eq!(sim.charges(&o), 1);
}

#[test]
fn decline_is_failed_not_an_error() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("decline");
    sim.script(&o, &["decline"]);
    let r = c
        .submit(&o, &body(&o), None)
        .expect("a decline is not an error");
    assert_eq!(r.outcome(), Outcome::Failed, "{}", r.json());
    assert!(r.error().is_some_and(|e| !e.is_empty()));
    assert_eq!(sim.charges(&o), 0);
}

/// A config without "ledger" used to keep keys in memory silently; now the
/// in-memory ledger must be written out, and the error says so.
#[test]
fn config_without_a_ledger_is_econfig_naming_it() {
    let Some(sim) = sim() else { return };
    let e = Client::new(&sim.config_without_ledger("")).unwrap_err();
    assert_eq!(e.code, code::ECONFIG);
    assert!(e.message.starts_with("ledger: is required"), "{e}");
    assert!(e.message.contains("\"memory:\""), "{e}");
    Client::new(&sim.config_without_ledger(r#","ledger":"memory:""#)).expect("memory: written out");
}

#[test]
fn bad_config_and_bad_arguments_are_errors() {
    let Some(sim) = sim() else { return };
    let e = Client::new(&sim.config(r#","ledger":"nope:""#)).unwrap_err();
    assert_eq!(e.code, code::ECONFIG);
    assert_eq!(e.code, -4);
    assert!(e.message.contains("ledger"), "{e}");
    assert!(e.to_string().contains("ledger"));
    let _: &dyn std::error::Error = &e;

    let c = sim.client();
    let e = c.submit("a\0b", b"{}", None).unwrap_err();
    assert_eq!(e.code, code::EINVALID, "{e}");
    let e = Client::new("{\0}").unwrap_err();
    assert_eq!(e.code, code::EINVALID, "{e}");
    let e = c.submit(&order("empty"), b"", None).unwrap_err();
    assert_eq!(e.code, code::EINVALID, "{e}");
    let e = c.ledger_get("never-submitted").unwrap_err();
    assert_eq!(e.code, code::ENOTFOUND, "{e}");
    let e = c.query("never-submitted").unwrap_err();
    assert_eq!(e.code, code::ENOTFOUND, "{e}");
}

#[test]
fn other_body_for_the_same_order_is_a_mismatch() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("mismatch");
    c.submit(&o, &body(&o), None).unwrap();
    let other = format!(r#"{{"order_id":"{o}","amount":2000,"currency":"eur"}}"#);
    let e = c.submit(&o, other.as_bytes(), None).unwrap_err();
    assert_eq!(e.code, code::EMISMATCH);
    assert_eq!(e.code, -5);
    assert!(!e.message.is_empty());
    assert_eq!(sim.charges(&o), 1);
}

#[test]
fn one_client_shared_by_eight_threads() {
    let Some(sim) = sim() else { return };
    let c = Arc::new(sim.client());
    let orders: Vec<String> = (0..8).map(|i| order(&format!("thread{i}"))).collect();
    // Every other order loses its first response, so retries overlap too.
    for o in orders.iter().step_by(2) {
        sim.script(o, &["lost_response", "none"]);
    }
    let handles: Vec<_> = orders
        .iter()
        .cloned()
        .map(|o| {
            let c = Arc::clone(&c);
            std::thread::spawn(move || c.submit(&o, &body(&o), None).map(|r| (o, r)))
        })
        .collect();
    for h in handles {
        let (o, r) = h.join().unwrap().unwrap();
        // A result may move to, and be read on, another thread.
        let r = std::thread::spawn(move || r).join().unwrap();
        assert_eq!(r.outcome(), Outcome::Succeeded, "{o}: {}", r.json());
        assert_eq!(sim.charges(&o), 1, "{o}");
    }
    assert!(c.stats().unwrap().starts_with('{'));
}

#[test]
fn reconcile_settles_an_unknown_payment_with_its_body() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("reconcile");
    lost_four_times(&sim, &c, &o);
    assert_eq!(c.query(&o).unwrap().outcome(), Outcome::Unknown);

    let rep = c.reconcile(None).unwrap();
    assert_eq!(
        (json_int(&rep, "examined"), json_int(&rep, "UNKNOWN")),
        (Some(1), Some(1)),
        "{rep}"
    );

    let asked = std::cell::RefCell::new(Vec::new());
    let body_for = |id: &str| {
        asked.borrow_mut().push(id.to_string());
        Some(body(id))
    };
    let rep = c.reconcile(Some(&body_for)).unwrap();
    assert_eq!(json_int(&rep, "SUCCEEDED"), Some(1), "{rep}");
    assert_eq!(*asked.borrow(), vec![o.clone()]);
    assert_eq!(sim.charges(&o), 1);

    let r = c.submit(&o, &body(&o), None).unwrap();
    assert!(
        r.outcome() == Outcome::Succeeded && r.from_ledger(),
        "{}",
        r.json()
    );
}

#[test]
fn a_panicking_body_for_leaves_the_payment_unknown() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("panic");
    lost_four_times(&sim, &c, &o);

    let calls = AtomicUsize::new(0);
    let body_for = |_: &str| -> Option<Vec<u8>> {
        calls.fetch_add(1, Ordering::Relaxed);
        panic!("boom")
    };
    // The panic does not cross C (that would abort): it resumes here.
    let caught = panic::catch_unwind(AssertUnwindSafe(|| c.reconcile(Some(&body_for))));
    let payload = caught.expect_err("the panic should resume after pay_reconcile");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
    assert_eq!(calls.load(Ordering::Relaxed), 1);

    assert!(c.ledger_get(&o).unwrap().contains("UNKNOWN"));
    assert_eq!(c.query(&o).unwrap().outcome(), Outcome::Unknown);
    // The client still works, and a later reconcile with a body settles it.
    let rep = c.reconcile(Some(&|id: &str| Some(body(id)))).unwrap();
    assert_eq!(json_int(&rep, "SUCCEEDED"), Some(1), "{rep}");
    assert_eq!(sim.charges(&o), 1);
}
