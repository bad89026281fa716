//! Starting `payretry-sim` and reading its admin API (plain HTTP/1.1).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub struct Sim {
    child: Child,
    pub addr: String,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sim {
    /// Starts `path` on a free port with these options and waits for its
    /// `listening on` line.
    pub fn start(path: &str, args: &[&str]) -> Result<Sim, String> {
        let mut child = Command::new(path)
            .args(["--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting {path}: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
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
            .map_err(|e| match e {
                mpsc::RecvTimeoutError::Timeout => {
                    format!("{path} did not say 'listening on' within 10 s")
                }
                mpsc::RecvTimeoutError::Disconnected => format!("{path} ended before listening"),
            })?;
        Ok(sim)
    }

    /// One admin request; the JSON body of its 200 answer.
    pub fn admin(&self, method: &str, path: &str, body: &str) -> Result<serde_json::Value, String> {
        let mut s = TcpStream::connect(&self.addr).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        )
        .map_err(|e| e.to_string())?;
        let mut resp = String::new();
        s.read_to_string(&mut resp).map_err(|e| e.to_string())?;
        let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
        if !head.starts_with("HTTP/1.1 200") {
            return Err(format!("{method} {path}: {resp}"));
        }
        serde_json::from_str(body).map_err(|e| format!("{method} {path}: {e}: {body}"))
    }

    pub fn script(&self, order: &str, faults: &[&str]) -> Result<(), String> {
        let body = serde_json::json!({ "order_id": order, "faults": faults }).to_string();
        self.admin("POST", "/__admin/script", &body).map(drop)
    }

    pub fn charges(&self, order: &str) -> Result<i64, String> {
        let truth = self.admin("GET", &format!("/__admin/truth?order_id={order}"), "")?;
        truth["charges"]
            .as_i64()
            .ok_or_else(|| format!("no charges in {truth}"))
    }

    pub fn stat(&self, name: &str) -> Result<i64, String> {
        let stats = self.admin("GET", "/__admin/stats", "")?;
        stats[name]
            .as_i64()
            .ok_or_else(|| format!("no {name} in {stats}"))
    }
}
