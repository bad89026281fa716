//! The request hook end to end: every create and every lookup signed per
//! `payretry-sim --hmac-secret` (HMAC-SHA256 over method, request target
//! and body, in `X-Signature`), and what a refusing, failing or panicking
//! hook does to a payment.
mod common;

use common::{block_on, body, order, signature, sim_with, Sim};
use payretry::{AttemptInfo, Client, ErrorKind, Headers, Outcome, SubmitOptions};
use std::sync::{Arc, Mutex};

const SECRET: &str = "rust-hook-secret";

fn signed_sim() -> Option<Sim> {
    sim_with(&["--hmac-secret", SECRET])
}

/// What the hook saw of one request: method, request target, attempt
/// number, idempotency key and body.
type Seen = (String, String, u32, String, Vec<u8>);

/// A client of `config` whose hook signs with `secret` and records what it saw.
fn signing_client(config: String, secret: &'static str, seen: Arc<Mutex<Vec<Seen>>>) -> Client {
    Client::builder(config)
        .request_hook(move |info: &AttemptInfo<'_>, headers: &mut Headers<'_>| {
            seen.lock().unwrap().push((
                info.method.to_owned(),
                info.request_target().to_owned(),
                info.attempt,
                info.idempotency_key.to_owned(),
                info.body.to_vec(),
            ));
            headers.add("X-Signature", &signature(secret, info))
        })
        .build()
        .expect("Client::builder")
}

#[test]
fn every_attempt_is_signed() {
    let Some(sim) = signed_sim() else { return };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let c = signing_client(sim.config(""), SECRET, Arc::clone(&seen));

    // A payment whose first response is lost: two signed attempts, one key.
    let retried = order("signed-retry");
    sim.script(&retried, &["lost_response", "none"]);
    let r = c.submit(&retried, &body(&retried), None).unwrap();
    assert_eq!(r.outcome(), Outcome::Succeeded, "{}", r.json());
    assert_eq!(r.attempts(), 2);
    assert_eq!(sim.charges(&retried), 1);
    {
        // The same key and the same bytes (as the profile encodes them) twice.
        let seen = seen.lock().unwrap();
        let key = r.idempotency_key().to_owned();
        let sent = seen[0].4.clone();
        assert!(!sent.is_empty());
        let post = |n| {
            (
                "POST".to_owned(),
                "/v1/payments".to_owned(),
                n,
                key.clone(),
                sent.clone(),
            )
        };
        assert_eq!(*seen, vec![post(1), post(2)]);
    }

    // An async payment: the hook runs on an engine thread.
    let on_engine = order("signed-async");
    let r = block_on(c.submit_async(&on_engine, &body(&on_engine), &SubmitOptions::new())).unwrap();
    assert_eq!(r.outcome(), Outcome::Succeeded, "{}", r.json());
    assert_eq!(sim.charges(&on_engine), 1);

    assert_eq!(sim.stat("bad_signatures"), 0);
    let hook_calls = seen.lock().unwrap().len();
    assert_eq!(hook_calls, 3);
    assert_eq!(sim.stat("signed_requests"), 3);
}

/// Checkout.com looks a payment up by reference (`GET /payments?reference=`):
/// the lookup is signed too, its query included.
#[test]
fn every_lookup_is_signed() {
    let Some(sim) = sim_with(&["--hmac-secret", SECRET, "--profile", "checkout_com"]) else {
        return;
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let c = signing_client(
        sim.provider_config("checkout_com"),
        SECRET,
        Arc::clone(&seen),
    );
    let o = order("signed-lookup");
    sim.script(
        &o,
        &["429", "lost_response", "lost_response", "lost_response"],
    );
    let r = c.submit(&o, &body(&o), None).unwrap();
    assert_eq!(r.outcome(), Outcome::Unknown, "{}", r.json());
    let q = c.query(&o).unwrap();
    assert_eq!(q.outcome(), Outcome::Succeeded, "{}", q.json());
    assert_eq!(sim.charges(&o), 1);

    let seen = seen.lock().unwrap();
    let gets: Vec<&Seen> = seen.iter().filter(|s| s.0 == "GET").collect();
    assert!(!gets.is_empty(), "{seen:?}");
    assert!(
        gets.iter().all(|g| g.1.contains('?') && g.4.is_empty()),
        "{gets:?}"
    );
    assert_eq!(sim.stat("bad_signatures"), 0);
    assert_eq!(
        sim.stat("signed_requests"),
        i64::try_from(seen.len()).unwrap()
    );
}

#[test]
fn a_hook_with_the_wrong_secret_leaves_the_payment_not_charged() {
    let Some(sim) = signed_sim() else { return };
    let c = signing_client(sim.config(""), "not-the-secret", Arc::default());
    let o = order("bad-secret");
    let r = c.submit(&o, &body(&o), None).unwrap();
    // Refused as an authentication error: final, and nothing charged.
    assert_eq!(r.outcome(), Outcome::Failed, "{}", r.json());
    assert_eq!(r.http_status(), 401, "{}", r.json());
    assert_eq!(sim.charges(&o), 0);
    assert!(sim.stat("bad_signatures") >= 1);
    assert_eq!(sim.stat("signed_requests"), 0);
}

#[test]
fn a_refusing_hook_sends_nothing_and_says_why() {
    let Some(sim) = signed_sim() else { return };
    let c = Client::builder(sim.config(""))
        .request_hook(|info: &AttemptInfo<'_>, _: &mut Headers<'_>| {
            Err(format!("no signing key for {}", info.order_id))
        })
        .build()
        .unwrap();
    let o = order("refused");
    let e = c.submit(&o, &body(&o), None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Hook, "{e}");
    assert_eq!(e.message, format!("request hook: no signing key for {o}"));
    assert_eq!(sim.charges(&o), 0);

    // The same on an engine thread, through the future.
    let o = order("refused-async");
    let e = block_on(c.submit_async(&o, &body(&o), &SubmitOptions::new())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Hook, "{e}");
    assert!(
        e.message.ends_with(&format!("no signing key for {o}")),
        "{e}"
    );
    assert_eq!(sim.charges(&o), 0);
    assert_eq!(sim.stat("signed_requests") + sim.stat("bad_signatures"), 0);
}

#[test]
fn a_refused_header_is_an_error_the_hook_can_pass_on() {
    let Some(sim) = signed_sim() else { return };
    let c = Client::builder(sim.config(""))
        .request_hook(|info: &AttemptInfo<'_>, headers: &mut Headers<'_>| {
            headers.add("X-Signature", &signature(SECRET, info))?;
            let e = headers.add("Bad Name", "x").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
            let e = headers.add("X-Ok", "line\r\nbreak").unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
            headers.add("Idempotency-Key", "mine")
        })
        .build()
        .unwrap();
    let o = order("reserved");
    let e = c.submit(&o, &body(&o), None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Hook, "{e}");
    assert!(e.message.contains("Idempotency-Key"), "{e}");
    assert_eq!(sim.charges(&o), 0);
}

#[test]
fn a_panicking_hook_is_a_hook_error_and_the_client_goes_on() {
    let Some(sim) = signed_sim() else { return };
    let c = Client::builder(sim.config(""))
        .request_hook(|info: &AttemptInfo<'_>, headers: &mut Headers<'_>| {
            if info.order_id.contains("boom") {
                panic!("hook exploded");
            }
            headers.add("X-Signature", &signature(SECRET, info))
        })
        .build()
        .unwrap();
    let o = order("boom");
    let e = c.submit(&o, &body(&o), None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Hook, "{e}");
    assert!(e.message.contains("panicked: hook exploded"), "{e}");
    // On an engine thread the panic is caught there too.
    let o = order("boom-async");
    let e = block_on(c.submit_async(&o, &body(&o), &SubmitOptions::new())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Hook, "{e}");

    let fine = order("after-panic");
    let r = c.submit(&fine, &body(&fine), None).unwrap();
    assert_eq!(r.outcome(), Outcome::Succeeded, "{}", r.json());
    assert_eq!(sim.stat("bad_signatures"), 0);
}

#[test]
fn a_hook_refusing_a_later_attempt_leaves_the_payment_unknown() {
    let Some(sim) = signed_sim() else { return };
    let c = Client::builder(sim.config(""))
        .request_hook(|info: &AttemptInfo<'_>, headers: &mut Headers<'_>| {
            if info.attempt > 1 {
                return Err("signing service down".to_string());
            }
            headers
                .add("X-Signature", &signature(SECRET, info))
                .map_err(|e| e.to_string())
        })
        .build()
        .unwrap();
    let o = order("later-refusal");
    sim.script(&o, &["lost_response", "none"]);
    // The first attempt may have charged: this is UNKNOWN, not an error.
    let r = c.submit(&o, &body(&o), None).unwrap();
    assert_eq!(r.outcome(), Outcome::Unknown, "{}", r.json());
    assert!(
        r.error().is_some_and(|e| e.contains("hook")),
        "{}",
        r.json()
    );
    assert_eq!(sim.charges(&o), 1);
}

/// One hook, called at once from caller threads and from engine threads.
#[test]
fn one_hook_signs_for_many_threads_at_once() {
    let Some(sim) = signed_sim() else { return };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let c = Arc::new(signing_client(sim.config(""), SECRET, Arc::clone(&seen)));
    let orders: Vec<String> = (0..16).map(|i| order(&format!("threads{i}"))).collect();
    for o in orders.iter().step_by(3) {
        sim.script(o, &["lost_response", "none"]);
    }
    let (on_threads, on_engine) = orders.split_at(8);
    let futures: Vec<_> = on_engine
        .iter()
        .map(|o| c.submit_async(o, &body(o), &SubmitOptions::new()))
        .collect();
    let threads: Vec<_> = on_threads
        .iter()
        .cloned()
        .map(|o| {
            let c = Arc::clone(&c);
            std::thread::spawn(move || c.submit(&o, &body(&o), None).unwrap())
        })
        .collect();
    for t in threads {
        let r = t.join().unwrap();
        assert_eq!(r.outcome(), Outcome::Succeeded, "{}", r.json());
    }
    for f in futures {
        let r = block_on(f).unwrap();
        assert_eq!(r.outcome(), Outcome::Succeeded, "{}", r.json());
    }
    for o in &orders {
        assert_eq!(sim.charges(o), 1, "{o}");
    }
    let hook_calls = seen.lock().unwrap().len();
    assert!(hook_calls >= orders.len(), "{hook_calls}");
    assert_eq!(
        sim.stat("signed_requests"),
        i64::try_from(hook_calls).unwrap()
    );
    assert_eq!(sim.stat("bad_signatures"), 0);
}
