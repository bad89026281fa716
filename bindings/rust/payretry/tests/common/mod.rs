//! What the simulator tests share: starting `payretry-sim` (named by
//! PAYRETRY_SIM, which run_tests.sh sets), its admin API, a fast config, a
//! request signer per the simulator's `--hmac-secret`, and a minimal
//! executor for futures. Without PAYRETRY_SIM the tests print why and pass,
//! unless PAYRETRY_REQUIRE_BINDINGS=1, which turns that into a failure.
//! Each test starts its own simulator (port 0) and kills it when done.
#![allow(dead_code)] // each test file uses its own part of this

use hmac::{Hmac, Mac};
use payretry::{AttemptInfo, Client};
use sha2::Sha256;
use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

pub const API_KEY: &str = "sk_test_rust";

pub struct Sim {
    child: Child,
    pub addr: String, // 127.0.0.1:PORT
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the simulator, or returns None (test skipped) when PAYRETRY_SIM is
/// not set; panics instead under PAYRETRY_REQUIRE_BINDINGS=1.
pub fn sim() -> Option<Sim> {
    sim_with(&[])
}

/// The same, with more command-line options (e.g. `--hmac-secret S`).
pub fn sim_with(extra_args: &[&str]) -> Option<Sim> {
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
        .args(extra_args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {path}: {e}"));
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
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
    pub fn admin(&self, method: &str, path: &str, body: &str) -> String {
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

    pub fn script(&self, order: &str, faults: &[&str]) {
        let faults: Vec<String> = faults.iter().map(|f| format!("\"{f}\"")).collect();
        let body = format!(
            r#"{{"order_id":"{order}","faults":[{}]}}"#,
            faults.join(",")
        );
        self.admin("POST", "/__admin/script", &body);
    }

    pub fn charges(&self, order: &str) -> i64 {
        let body = self.admin("GET", &format!("/__admin/truth?order_id={order}"), "");
        json_int(&body, "charges").unwrap_or_else(|| panic!("no charges in {body}"))
    }

    /// The counter `name` of `GET /__admin/stats`.
    pub fn stat(&self, name: &str) -> i64 {
        let body = self.admin("GET", "/__admin/stats", "");
        let stats: serde_json::Value = serde_json::from_str(&body).unwrap();
        stats[name]
            .as_i64()
            .unwrap_or_else(|| panic!("no {name} in {body}"))
    }

    /// A fast stripe configuration against this simulator; `extra` is
    /// spliced into the top-level object. The ledger is memory: unless
    /// `extra` names one.
    pub fn config(&self, extra: &str) -> String {
        let ledger = if extra.contains("\"ledger\"") {
            ""
        } else {
            r#","ledger":"memory:""#
        };
        self.config_without_ledger(&format!("{ledger}{extra}"))
    }

    /// The same, with no ledger unless `extra` names one.
    pub fn config_without_ledger(&self, extra: &str) -> String {
        format!(
            r#"{{"provider":"stripe","base_url":"http://{}","create_path":"/v1/payments",
               "auth":{{"bearer":"{API_KEY}"}},
               "retry":{{"max_attempts":4,"connect_timeout_ms":300,"attempt_timeout_ms":300,
                         "deadline_ms":6000,"backoff_base_ms":20,"backoff_cap_ms":200,
                         "min_attempt_ms":50,"jitter_seed":7}}{extra}}}"#,
            self.addr
        )
    }

    /// A configuration of `provider` (the simulator's `--profile`) with its
    /// own create path, the same fast retry settings and a memory ledger.
    pub fn provider_config(&self, provider: &str) -> String {
        format!(
            r#"{{"provider":"{provider}","base_url":"http://{}","auth":{{"bearer":"{API_KEY}"}},
               "ledger":"memory:","not_found_grace_ms":0,
               "retry":{{"max_attempts":4,"connect_timeout_ms":300,"attempt_timeout_ms":300,
                         "deadline_ms":6000,"backoff_base_ms":20,"backoff_cap_ms":200,
                         "min_attempt_ms":50,"jitter_seed":7}}}}"#,
            self.addr
        )
    }

    pub fn client(&self) -> Client {
        Client::new(&self.config("")).expect("Client::new")
    }
}

/// The integer value of `"key": N` in a JSON text (enough for these tests).
pub fn json_int(json: &str, key: &str) -> Option<i64> {
    let pat = format!("\"{key}\"");
    let rest = &json[json.find(&pat)? + pat.len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

pub fn order(name: &str) -> String {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    format!(
        "rs-{name}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

pub fn body(order: &str) -> Vec<u8> {
    format!(r#"{{"order_id":"{order}","amount":1000,"currency":"eur"}}"#).into_bytes()
}

/// `v1=<hex HMAC-SHA256(secret, METHOD \n TARGET \n BODY)>`, the
/// `X-Signature` that `payretry-sim --hmac-secret` checks.
pub fn signature(secret: &str, info: &AttemptInfo<'_>) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(info.method.as_bytes());
    mac.update(b"\n");
    mac.update(info.request_target().as_bytes());
    mac.update(b"\n");
    mac.update(info.body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("v1={hex}")
}

/// Runs a future to completion on this thread, parking between polls: the
/// smallest executor, enough to show SubmitFuture needs no runtime.
pub fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(out) => return out,
            Poll::Pending => thread::park(),
        }
    }
}

/// A small HTTP server on 127.0.0.1 that reads requests one connection at
/// a time, hands over each request's head (request line and headers, names
/// as sent) through `heads`, closes the first `lost` connections without an
/// answer (a lost response, as the client sees it), then answers one with a
/// Stripe-shaped success and stops. For what the simulator does not report
/// back, such as the extra headers of every attempt.
pub struct Capture {
    pub addr: String,
    pub heads: mpsc::Receiver<String>,
}

pub fn capture_requests(lost: usize) -> Capture {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for n in 0..=lost {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut reader = BufReader::new(&stream);
            let mut head = String::new();
            let mut content_length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        content_length = value.trim().parse().unwrap_or(0);
                    }
                }
                head.push_str(&line);
            }
            let mut body = vec![0; content_length];
            let _ = reader.read_exact(&mut body);
            if n == lost {
                let answer =
                    r#"{"id":"pi_capture","object":"payment_intent","status":"succeeded"}"#;
                let _ = write!(
                    &stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     Request-Id: req_capture\r\nConnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            }
            let _ = tx.send(head);
            // Dropping the stream closes it: unanswered for the first `lost`.
        }
    });
    Capture { addr, heads: rx }
}

/// The value of header `name` (any case) in a request head.
pub fn header_value<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}
