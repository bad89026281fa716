//! The ledger listing and the typed reports (cargo feature `serde`) against
//! the simulator.
#![cfg(feature = "serde")]
mod common;

use common::{body, order, sim, Sim};
use payretry::report::PaymentReport;
use payretry::{Client, Delivery, LedgerFilter, LedgerState, Outcome};

/// Leaves `order` UNKNOWN: every one of the 4 attempts loses its response.
fn leave_unknown(sim: &Sim, c: &Client, order: &str) {
    sim.script(order, &["lost_response"; 4]);
    let r = c.submit(order, &body(order), None).unwrap();
    assert_eq!(r.outcome(), Outcome::Unknown, "{}", r.json());
}

#[test]
fn a_result_report_has_every_attempt() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("report");
    sim.script(&o, &["503", "none"]);
    let r = c.submit(&o, &body(&o), None).unwrap();
    let rep: PaymentReport = r.report().unwrap();
    assert_eq!(
        (rep.outcome, rep.delivery),
        (Outcome::Succeeded, Delivery::Delivered)
    );
    assert_eq!(rep.order_id, o);
    assert_eq!(rep.idempotency_key, r.idempotency_key());
    assert!(rep.recorded && rep.ledger_error.is_none() && !rep.from_ledger);
    assert_eq!(rep.attempts.len(), 2, "{}", r.json());
    let (first, second) = (&rep.attempts[0], &rep.attempts[1]);
    assert_eq!((first.attempt, first.http_status), (1, Some(503)));
    assert!(
        first.delay_ms.is_some() && first.delay_source.is_some(),
        "{first:?}"
    );
    assert_eq!((second.attempt, second.http_status), (2, Some(200)));
    assert_eq!(second.delay_ms, None);
    // Serialize gives the same data back.
    let again: PaymentReport = serde_json::from_str(&serde_json::to_string(&rep).unwrap()).unwrap();
    assert_eq!(again, rep);
}

#[test]
fn stats_count_attempts_retries_and_outcomes() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let ok = order("stats-ok");
    sim.script(&ok, &["503", "none"]);
    c.submit(&ok, &body(&ok), None).unwrap();
    let declined = order("stats-decline");
    sim.script(&declined, &["decline"]);
    c.submit(&declined, &body(&declined), None).unwrap();

    let stats = c.stats_report().unwrap();
    assert_eq!(stats.attempts, 3, "{stats:?}");
    assert_eq!(stats.retries, 1, "{stats:?}");
    assert_eq!(
        stats.retries_by_reason.values().sum::<u64>(),
        1,
        "{stats:?}"
    );
    assert_eq!(
        (stats.outcomes.succeeded, stats.outcomes.failed),
        (1, 1),
        "{stats:?}"
    );
    assert_eq!(
        (stats.outcomes.unknown, stats.outcomes.in_progress),
        (0, 0),
        "{stats:?}"
    );
}

#[test]
fn the_ledger_lists_payments_by_state() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let paid: Vec<String> = (0..3).map(|i| order(&format!("list{i}"))).collect();
    for o in &paid {
        c.submit(o, &body(o), None).unwrap();
    }
    let unknown = order("list-unknown");
    leave_unknown(&sim, &c, &unknown);

    let all = c.ledger_payments(&LedgerFilter::new()).unwrap();
    assert_eq!(all.len(), 4, "{all:?}");
    // Oldest update first.
    assert!(
        all.windows(2).all(|w| w[0].updated_at <= w[1].updated_at),
        "{all:?}"
    );

    let settled = c
        .ledger_payments(&LedgerFilter::new().state(LedgerState::Succeeded))
        .unwrap();
    let mut ids: Vec<&str> = settled.iter().map(|p| p.order_id.as_str()).collect();
    ids.sort_unstable();
    let mut want: Vec<&str> = paid.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(ids, want);
    assert!(settled
        .iter()
        .all(|p| p.delivery == Some(Delivery::Delivered)));

    let open = c
        .ledger_payments(&LedgerFilter::new().state(LedgerState::Unknown))
        .unwrap();
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(
        (open[0].order_id.as_str(), open[0].attempts),
        (unknown.as_str(), 4)
    );

    assert_eq!(
        c.ledger_payments(&LedgerFilter::new().limit(2))
            .unwrap()
            .len(),
        2
    );
    let none = c
        .ledger_payments(&LedgerFilter::new().updated_before_unix_ms(all[0].updated_at))
        .unwrap();
    assert!(none.is_empty(), "{none:?}");
    // The raw JSON is the same list.
    let raw: serde_json::Value =
        serde_json::from_str(&c.ledger_list(&LedgerFilter::new()).unwrap()).unwrap();
    assert_eq!(raw.as_array().map(Vec::len), Some(4));

    let rec = c.ledger_record(&unknown).unwrap();
    assert_eq!(rec.payment.state, LedgerState::Unknown);
    assert_eq!(rec.attempts.len(), 4, "{rec:?}");
    assert!(
        rec.attempts
            .iter()
            .all(|a| a.kind == "send" && a.may_have_processed == Some(true)),
        "{rec:?}"
    );
}

#[test]
fn a_reconcile_report_counts_what_it_settled() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("reconcile-report");
    leave_unknown(&sim, &c, &o);
    let rep = c
        .reconcile_report(Some(&|id: &str| Some(body(id))))
        .unwrap();
    assert_eq!(
        (rep.examined, rep.succeeded, rep.unknown, rep.errors),
        (1, 1, 0, 0),
        "{rep:?}"
    );
    assert_eq!(rep.payments.len(), 1);
    assert_eq!(rep.payments[0].order_id, o);
    assert_eq!(rep.payments[0].outcome, Outcome::Succeeded);
    assert!(rep.failures.is_empty());
    assert_eq!(sim.charges(&o), 1);
}
