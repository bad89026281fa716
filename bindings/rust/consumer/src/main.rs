//! payretry-hmac-consumer SIM_PATH: an application of the Rust binding that
//! signs every payment attempt and every status lookup through its request
//! hook, against `payretry-sim --hmac-secret`, and checks what the
//! simulator saw. Exits 0 when every check passed, 1 otherwise.
mod sign;
mod sim;

use payretry::{AttemptInfo, Client, Headers, Outcome, SubmitOptions};
use sim::Sim;
use std::sync::atomic::{AtomicUsize, Ordering};

const SECRET: &str = "consumer-hmac-secret";
const API_KEY: &str = "sk_test_consumer";

/// Checkout.com, whose lookups go by reference (`GET /payments?reference=`),
/// so that a payment left UNKNOWN is settled by a signed lookup.
const PROVIDER: &str = "checkout_com";

fn config(sim: &Sim) -> String {
    format!(
        r#"{{"provider":"{PROVIDER}","base_url":"http://{}","auth":{{"bearer":"{API_KEY}"}},
           "ledger":"memory:","not_found_grace_ms":0,
           "retry":{{"max_attempts":4,"connect_timeout_ms":300,"attempt_timeout_ms":300,
                     "deadline_ms":6000,"backoff_base_ms":20,"backoff_cap_ms":200,
                     "min_attempt_ms":50,"jitter_seed":7}}}}"#,
        sim.addr
    )
}

/// How many requests the hook signed with the simulator's secret.
static SIGNED: AtomicUsize = AtomicUsize::new(0);

/// A client that signs with `secret` (the simulator's, or a wrong one).
fn signing_client(sim: &Sim, secret: &'static str) -> Result<Client, String> {
    Client::builder(config(sim))
        .request_hook(move |info: &AttemptInfo<'_>, headers: &mut Headers<'_>| {
            headers.add(sign::HEADER, &sign::signature(secret, info))?;
            if secret == SECRET {
                SIGNED.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), payretry::Error>(())
        })
        .build()
        .map_err(|e| e.to_string())
}

fn body(order: &str) -> Vec<u8> {
    format!(r#"{{"order_id":"{order}","amount":1500,"currency":"eur"}}"#).into_bytes()
}

/// A named check of `main`.
type Check<'a> = (&'a str, &'a dyn Fn() -> Result<(), String>);

fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

/// Payments signed on every attempt, one of them retried after a 429 (which
/// the simulator sends with `Retry-After: 0`), and one on an engine thread:
/// each charged exactly once.
fn signed_payments(sim: &Sim, c: &Client) -> Result<(), String> {
    let orders: Vec<String> = (0..4).map(|i| format!("consumer-pay-{i}")).collect();
    sim.script(&orders[0], &["429", "none"])?;
    for o in &orders {
        let r = c.submit(o, &body(o), None).map_err(|e| e.to_string())?;
        ensure(r.outcome() == Outcome::Succeeded, || {
            format!("{o}: {}", r.json())
        })?;
    }
    let on_engine = "consumer-async";
    let r = block_on(c.submit_async(on_engine, &body(on_engine), &SubmitOptions::new()))
        .map_err(|e| e.to_string())?;
    ensure(r.outcome() == Outcome::Succeeded, || {
        format!("{on_engine}: {}", r.json())
    })?;
    for o in orders.iter().map(String::as_str).chain([on_engine]) {
        let n = sim.charges(o)?;
        ensure(n == 1, || format!("{o} charged {n} times"))?;
    }
    Ok(())
}

/// A payment left UNKNOWN, then settled by signed lookups: `query`, then
/// `reconcile` with its body.
fn signed_lookups(sim: &Sim, c: &Client) -> Result<(), String> {
    let o = "consumer-unknown";
    sim.script(o, &["lost_response"; 4])?;
    let r = c.submit(o, &body(o), None).map_err(|e| e.to_string())?;
    ensure(r.outcome() == Outcome::Unknown, || {
        format!("{o} should be UNKNOWN: {}", r.json())
    })?;
    let bad_before = sim.stat("bad_signatures")?;
    let q = c.query(o).map_err(|e| e.to_string())?;
    ensure(q.outcome() != Outcome::Failed, || {
        format!("query: {}", q.json())
    })?;
    let report = c
        .reconcile_report(Some(&|id: &str| Some(body(id))))
        .map_err(|e| e.to_string())?;
    ensure(report.errors == 0 && report.unknown == 0, || {
        format!("reconcile: {report:?}")
    })?;
    let settled = c.submit(o, &body(o), None).map_err(|e| e.to_string())?;
    ensure(settled.outcome() == Outcome::Succeeded, || {
        format!("{o}: {}", settled.json())
    })?;
    ensure(sim.charges(o)? == 1, || {
        format!("{o} not charged exactly once")
    })?;
    let bad = sim.stat("bad_signatures")?;
    ensure(bad == bad_before, || {
        format!("lookups met {} bad signatures", bad - bad_before)
    })
}

/// A hook with the wrong secret: refused by the provider as an
/// authentication error (final: FAILED), never charged.
fn wrong_secret(sim: &Sim) -> Result<(), String> {
    let c = signing_client(sim, "not-the-secret")?;
    let o = "consumer-wrong-secret";
    let r = c.submit(o, &body(o), None).map_err(|e| e.to_string())?;
    ensure(
        r.outcome() == Outcome::Failed && r.http_status() == 401,
        || format!("{o}: {}", r.json()),
    )?;
    ensure(sim.charges(o)? == 0, || format!("{o} was charged"))?;
    ensure(sim.stat("bad_signatures")? > 0, || {
        "no bad signature counted".into()
    })
}

/// Runs a future on this thread (the binding needs no runtime).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

fn main() {
    let Some(sim_path) = std::env::args().nth(1) else {
        eprintln!("usage: payretry-hmac-consumer PATH_OF_PAYRETRY_SIM");
        std::process::exit(2);
    };
    let sim = match Sim::start(
        &sim_path,
        &[
            "--api-key",
            API_KEY,
            "--hmac-secret",
            SECRET,
            "--profile",
            PROVIDER,
            "--retry-after-s",
            "0",
        ],
    ) {
        Ok(sim) => sim,
        Err(e) => {
            eprintln!("payretry-hmac-consumer: {e}");
            std::process::exit(1);
        }
    };
    let client = match signing_client(&sim, SECRET) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("payretry-hmac-consumer: {e}");
            drop(sim); // process::exit skips destructors: stop the simulator first
            std::process::exit(1);
        }
    };
    let checks: [Check<'_>; 3] = [
        ("signed payments", &|| signed_payments(&sim, &client)),
        ("signed lookups", &|| signed_lookups(&sim, &client)),
        ("wrong secret", &|| wrong_secret(&sim)),
    ];
    let mut failed = 0;
    for (name, check) in checks {
        match check() {
            Ok(()) => println!("ok: {name}"),
            Err(e) => {
                failed += 1;
                println!("FAILED: {name}: {e}");
            }
        }
    }
    // The simulator verified every request the good client's hook signed,
    // and refused the one the wrong secret signed.
    let signed_by_hook = i64::try_from(SIGNED.load(Ordering::Relaxed)).unwrap_or(-1);
    match (sim.stat("signed_requests"), sim.stat("bad_signatures")) {
        (Ok(signed), Ok(1)) if signed == signed_by_hook && signed >= 8 => {
            println!("ok: signed_requests {signed}, as many as the hook signed")
        }
        other => {
            failed += 1;
            println!("FAILED: simulator counters {other:?}, the hook signed {signed_by_hook}");
        }
    }
    println!(
        "payretry-hmac-consumer: {} passed, {failed} failed",
        4 - failed
    );
    // process::exit runs no destructor: the client and the simulator go
    // first, or the simulator would outlive this program (and hold the
    // output pipe of whoever ran it open).
    drop(client);
    drop(sim);
    std::process::exit(i32::from(failed > 0));
}
