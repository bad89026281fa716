//! `Client::metrics` (Prometheus text) and `Client::reopen_log` against the
//! simulator.
mod common;

use common::{body, order, sim};
use payretry::{Client, ErrorKind, Outcome};
use std::collections::BTreeMap;

/// The samples of a Prometheus text exposition, `name{labels}` to value,
/// after checking the shape of every line: each sample belongs to a family
/// announced before it by `# HELP` and `# TYPE`, every name is prefixed
/// `payretry_`, and every value is a number.
fn samples(text: &str) -> BTreeMap<String, f64> {
    let mut families: BTreeMap<String, (bool, Option<String>)> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            assert!(!help.is_empty(), "HELP without text: {line}");
            families.entry(name.to_owned()).or_default().0 = true;
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect(line);
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            families.entry(name.to_owned()).or_default().1 = Some(kind.to_owned());
        } else {
            assert!(
                !line.starts_with('#') && !line.is_empty(),
                "unexpected line: {line:?}"
            );
            let (series, value) = line.rsplit_once(' ').expect(line);
            let name = series.split('{').next().unwrap();
            assert!(name.starts_with("payretry_"), "{line}");
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| {
                    let base = name.strip_suffix(suffix)?;
                    (families.get(base)?.1.as_deref() == Some("histogram")).then_some(base)
                })
                .unwrap_or(name);
            let announced = families.get(family);
            assert!(
                announced.is_some_and(|(help, kind)| *help && kind.is_some()),
                "{line}: no # HELP and # TYPE for {family} before it"
            );
            let value: f64 = value.parse().unwrap_or_else(|e| panic!("{line}: {e}"));
            assert!(
                out.insert(series.to_owned(), value).is_none(),
                "twice: {line}"
            );
        }
    }
    out
}

#[test]
fn metrics_count_what_the_payments_did() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let ok = order("metrics-ok");
    sim.script(&ok, &["503", "none"]);
    assert_eq!(
        c.submit(&ok, &body(&ok), None).unwrap().outcome(),
        Outcome::Succeeded
    );
    let declined = order("metrics-decline");
    sim.script(&declined, &["decline"]);
    assert_eq!(
        c.submit(&declined, &body(&declined), None)
            .unwrap()
            .outcome(),
        Outcome::Failed
    );
    let unknown = order("metrics-unknown");
    sim.script(&unknown, &["lost_response"; 4]);
    assert_eq!(
        c.submit(&unknown, &body(&unknown), None).unwrap().outcome(),
        Outcome::Unknown
    );
    // Submitted again: answered from the ledger, not a payment run.
    assert!(c.submit(&ok, &body(&ok), None).unwrap().from_ledger());

    let text = c.metrics().unwrap();
    let m = samples(&text);
    let get = |series: &str| {
        *m.get(series)
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    };
    assert_eq!(
        get(r#"payretry_payments_total{outcome="SUCCEEDED",delivery="delivered"}"#),
        1.0
    );
    assert_eq!(
        get(r#"payretry_payments_total{outcome="FAILED",delivery="delivered"}"#),
        1.0
    );
    assert_eq!(
        get(r#"payretry_payments_total{outcome="UNKNOWN",delivery="maybe_processed"}"#),
        1.0
    );
    let runs: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("payretry_payments_total{"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(runs, 3.0, "{text}");
    assert_eq!(
        get(r#"payretry_ledger_answers_total{outcome="SUCCEEDED"}"#),
        1.0
    );
    // 2 + 1 + 4 attempts, none of them still in flight.
    assert_eq!(get("payretry_attempts_started_total"), 7.0);
    assert_eq!(get("payretry_in_flight_payments"), 0.0);
    assert_eq!(get("payretry_payment_duration_seconds_count"), 3.0);
    assert_eq!(
        get(r#"payretry_payment_duration_seconds_bucket{le="+Inf"}"#),
        3.0
    );
    assert_eq!(get("payretry_attempt_duration_seconds_count"), 7.0);
}

#[test]
fn reopen_log_follows_a_rotated_file() {
    let Some(sim) = sim() else { return };
    let dir = std::env::temp_dir().join(format!("payretry-rs-reopen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("payretry.jsonl");
    let rotated = dir.join("payretry.jsonl.1");
    let c = Client::new(&sim.config(&format!(r#","log":{{"path":"{}"}}"#, log.display()))).unwrap();

    let before = order("before-rotation");
    c.submit(&before, &body(&before), None).unwrap();
    std::fs::rename(&log, &rotated).unwrap();
    c.reopen_log().unwrap();
    let after = order("after-rotation");
    c.submit(&after, &body(&after), None).unwrap();

    // The directory gone: the log cannot be reopened, and the old file stays.
    let text = |p: &std::path::Path| std::fs::read_to_string(p).unwrap();
    let (old, new) = (text(&rotated), text(&log));
    std::fs::remove_dir_all(&dir).unwrap();
    let e = c.reopen_log().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    let still = order("after-failed-reopen");
    c.submit(&still, &body(&still), None).unwrap();

    assert!(old.contains(&before) && !old.contains(&after), "{old}");
    assert!(new.contains(&after) && !new.contains(&before), "{new}");
    // Without a log file in the config there is nothing to reopen.
    sim.client().reopen_log().unwrap();
}
