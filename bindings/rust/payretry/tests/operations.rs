//! Captures, refunds and cancels (`Client::submit_operation`) against the
//! simulator in Stripe mode and a SQLite ledger: the simulator's truth
//! (`GET /__admin/truth?order_id=...`) says what moved, and a refund that
//! does not fit is refused before any byte.
mod common;

use payretry::{code, Client, MoneyState, Operation, OperationOptions, Outcome};

/// The stripe profile's own create path (a PaymentIntent, whose id the
/// refund names) and a SQLite ledger in a folder of its own.
struct Setup {
    sim: common::Sim,
    client: Client,
    dir: std::path::PathBuf,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn setup(name: &str) -> Option<Setup> {
    let sim = common::sim()?;
    let dir = std::env::temp_dir().join(common::order(name));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = sim.provider_config("stripe").replace(
        r#""ledger":"memory:""#,
        &format!(r#""ledger":"sqlite://{}/ops.db""#, dir.display()),
    );
    assert!(cfg.contains("sqlite://"), "{cfg}");
    let client = Client::new(&cfg).expect("Client::new");
    Some(Setup { sim, client, dir })
}

fn stripe_body(order: &str, hold: bool) -> Vec<u8> {
    let extra = if hold {
        r#","confirm":true,"payment_method":"pm_card_visa","capture_method":"manual""#
    } else {
        ""
    };
    format!(r#"{{"amount":1000,"currency":"usd","metadata":{{"order_id":"{order}"}}{extra}}}"#)
        .into_bytes()
}

/// The simulator's truth of the order's one payment.
fn truth(sim: &common::Sim, order: &str) -> serde_json::Value {
    let body = sim.admin("GET", &format!("/__admin/truth?order_id={order}"), "");
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    let payments = doc["payments"].as_array().expect("payments");
    assert_eq!(payments.len(), 1, "{body}");
    payments[0].clone()
}

fn money_of_row(client: &Client, order: &str) -> String {
    let row: serde_json::Value = serde_json::from_str(&client.ledger_get(order).unwrap()).unwrap();
    row["payment"]["money_state"].as_str().unwrap().to_string()
}

#[test]
fn a_partial_refund_moves_the_money_once_and_one_that_does_not_fit_is_refused_nothing_sent() {
    let Some(s) = setup("ops-refund") else { return };
    let order = common::order("refund");
    let paid = s
        .client
        .submit(&order, &stripe_body(&order, false), None)
        .unwrap();
    assert_eq!(paid.money_state(), MoneyState::Paid, "{}", paid.json());

    let r1 = OperationOptions::new("r1")
        .amount(400)
        .body(r#"{"reason":"requested_by_customer"}"#);
    let r = s
        .client
        .submit_operation(&order, Operation::Refund, &r1)
        .unwrap();
    assert_eq!(r.outcome(), Outcome::Succeeded, "{}", r.json());
    assert_eq!(r.money_state(), MoneyState::Refunded, "{}", r.json());
    assert_eq!(r.order_id(), format!("{order} refund r1"));
    assert_eq!(money_of_row(&s.client, &order), "partly_refunded");
    let t = truth(&s.sim, &order);
    assert_eq!(t["refunded"], 400, "{t}");
    assert_eq!(t["movements_by_key"][r.idempotency_key()], 1, "{t}");

    // 700 of the 600 left: the ledger's guard refuses it; no row, no request.
    let refused = s
        .client
        .submit_operation(
            &order,
            Operation::Refund,
            &OperationOptions::new("r2").amount(700),
        )
        .unwrap_err();
    assert_eq!(refused.code, code::EINVALID, "{refused}");
    assert!(
        refused.message.contains("refused, nothing sent"),
        "{refused}"
    );
    assert_eq!(
        s.client
            .ledger_get(&format!("{order} refund r2"))
            .unwrap_err()
            .code,
        code::ENOTFOUND
    );
    let t = truth(&s.sim, &order);
    assert_eq!(t["refunded"], 400, "{t}");
    assert_eq!(t["operations"].as_array().unwrap().len(), 1, "{t}");

    // The same ref again is the same refund; asked otherwise, a mismatch.
    let again = s
        .client
        .submit_operation(&order, Operation::Refund, &r1)
        .unwrap();
    assert!(again.from_ledger(), "{}", again.json());
    assert_eq!(again.idempotency_key(), r.idempotency_key());
    let other = r1.clone().amount(300);
    assert_eq!(
        s.client
            .submit_operation(&order, Operation::Refund, &other)
            .unwrap_err()
            .code,
        code::EMISMATCH
    );
    assert_eq!(
        s.client
            .submit_operation(&order, Operation::Refund, &OperationOptions::new("r\0x"))
            .unwrap_err()
            .code,
        code::EINVALID
    );
    assert_eq!(
        s.client
            .submit_operation(
                &order,
                Operation::Refund,
                &OperationOptions::new("r3").amount(-1)
            )
            .unwrap_err()
            .code,
        code::EINVALID
    );
    assert_eq!(
        s.client
            .submit_operation(
                "rs-never-paid",
                Operation::Refund,
                &OperationOptions::new("r1")
            )
            .unwrap_err()
            .code,
        code::ENOTFOUND
    );
}

#[test]
fn a_hold_is_captured_in_part_and_another_canceled() {
    let Some(s) = setup("ops-hold") else { return };
    let held = common::order("held");
    let r = s
        .client
        .submit(&held, &stripe_body(&held, true), None)
        .unwrap();
    assert_eq!(r.money_state(), MoneyState::Authorized, "{}", r.json());
    let cap = s
        .client
        .submit_operation(
            &held,
            Operation::Capture,
            &OperationOptions::new("c1").amount(600),
        )
        .unwrap();
    assert_eq!(cap.outcome(), Outcome::Succeeded, "{}", cap.json());
    assert_eq!(cap.money_state(), MoneyState::Paid, "{}", cap.json());
    assert_eq!(truth(&s.sim, &held)["captured"], 600);
    assert_eq!(
        s.client
            .submit_operation(&held, Operation::Cancel, &OperationOptions::new("x1"))
            .unwrap_err()
            .code,
        code::EINVALID,
        "a captured payment is not canceled"
    );

    let other = common::order("other");
    s.client
        .submit(&other, &stripe_body(&other, true), None)
        .unwrap();
    let x = s
        .client
        .submit_operation(&other, Operation::Cancel, &OperationOptions::new("x1"))
        .unwrap();
    assert_eq!(x.outcome(), Outcome::Succeeded, "{}", x.json());
    assert_eq!(money_of_row(&s.client, &other), "failed");
    assert_eq!(Operation::Cancel.to_string(), "cancel");
}
