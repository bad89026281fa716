//! Tests of the safe binding against the simulator `payretry-sim`, named by
//! PAYRETRY_SIM (run_tests.sh sets it). Without it the tests print why and
//! pass, unless PAYRETRY_REQUIRE_BINDINGS=1, which turns that into a failure.
//! Each test starts its own simulator (port 0) and kills it when done.
use payretry::{code, Client, Delivery, Outcome};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::panic::{self, AssertUnwindSafe};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

const API_KEY: &str = "sk_test_rust";

struct Sim {
    child: Child,
    addr: String, // 127.0.0.1:PORT
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the simulator, or returns None (test skipped) when PAYRETRY_SIM is
/// not set; panics instead under PAYRETRY_REQUIRE_BINDINGS=1.
fn sim() -> Option<Sim> {
    let path = std::env::var("PAYRETRY_SIM").unwrap_or_default();
    if path.is_empty() {
        assert!(
            std::env::var("PAYRETRY_REQUIRE_BINDINGS").as_deref() != Ok("1"),
            "PAYRETRY_REQUIRE_BINDINGS=1 but PAYRETRY_SIM is not set"
        );
        eprintln!("skipped: PAYRETRY_SIM is not set (the path of payretry-sim; see README.md)");
        return None;
    }
    let mut child = Command::new(&path)
        .args(["--port", "0", "--api-key", API_KEY, "--threads", "4"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {path}: {e}"));
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        for line in lines.by_ref().map_while(Result::ok) {
            if let Some(addr) = line.split("listening on ").nth(1) {
                let _ = tx.send(addr.trim().to_string());
                break;
            }
        }
        for _ in lines {} // keep draining
    });
    let mut sim = Sim {
        child,
        addr: String::new(),
    };
    sim.addr = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("payretry-sim did not print 'listening on' within 10 s");
    Some(sim)
}

impl Sim {
    /// One HTTP/1.1 request to the admin API; returns the body of a 200.
    fn admin(&self, method: &str, path: &str, body: &str) -> String {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
        assert!(head.starts_with("HTTP/1.1 200"), "{method} {path}: {resp}");
        body.to_string()
    }

    fn script(&self, order: &str, faults: &[&str]) {
        let faults: Vec<String> = faults.iter().map(|f| format!("\"{f}\"")).collect();
        let body = format!(
            r#"{{"order_id":"{order}","faults":[{}]}}"#,
            faults.join(",")
        );
        self.admin("POST", "/__admin/script", &body);
    }

    fn charges(&self, order: &str) -> i64 {
        let body = self.admin("GET", &format!("/__admin/truth?order_id={order}"), "");
        json_int(&body, "charges").unwrap_or_else(|| panic!("no charges in {body}"))
    }

    /// A fast stripe configuration against this simulator; `extra` is
    /// spliced into the top-level object. The ledger is memory: unless
    /// `extra` names one.
    fn config(&self, extra: &str) -> String {
        let ledger = if extra.contains("\"ledger\"") { "" } else { r#","ledger":"memory:""# };
        self.config_without_ledger(&format!("{ledger}{extra}"))
    }

    /// The same, with no ledger unless `extra` names one.
    fn config_without_ledger(&self, extra: &str) -> String {
        format!(
            r#"{{"provider":"stripe","base_url":"http://{}","create_path":"/v1/payments",
               "auth":{{"bearer":"{API_KEY}"}},
               "retry":{{"max_attempts":4,"connect_timeout_ms":300,"attempt_timeout_ms":300,
                         "deadline_ms":6000,"backoff_base_ms":20,"backoff_cap_ms":200,
                         "min_attempt_ms":50,"jitter_seed":7}}{extra}}}"#,
            self.addr
        )
    }

    fn client(&self) -> Client {
        Client::new(&self.config("")).expect("Client::new")
    }
}

/// The integer value of `"key": N` in a JSON text (enough for these tests).
fn json_int(json: &str, key: &str) -> Option<i64> {
    let pat = format!("\"{key}\"");
    let rest = &json[json.find(&pat)? + pat.len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn order(name: &str) -> String {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    format!(
        "rs-{name}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

fn body(order: &str) -> Vec<u8> {
    format!(r#"{{"order_id":"{order}","amount":1000,"currency":"eur"}}"#).into_bytes()
}

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
