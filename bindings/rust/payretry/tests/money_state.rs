//! The money state (docs/providers.md, "Where the money is"): its names are
//! the C library's, a result's is the C accessor's and its JSON's, and the
//! typed ledger and result reports carry it. Fulfil on `Paid` (or
//! `Authorized` where you capture later), never on `Succeeded` alone.
mod common;

use common::{body, order, sim};
use payretry::{MoneyState, Outcome};
use payretry_sys as sys;
use std::ffi::CStr;

fn c_name(value: std::ffi::c_int) -> &'static str {
    // SAFETY: pay_money_state_name returns a static string for any value.
    unsafe { CStr::from_ptr(sys::pay_money_state_name(value)) }
        .to_str()
        .unwrap()
}

/// Every state, with its C value.
const STATES: [(std::ffi::c_int, MoneyState); 8] = [
    (sys::PAY_MONEY_UNKNOWN, MoneyState::Unknown),
    (
        sys::PAY_MONEY_AWAITING_CUSTOMER,
        MoneyState::AwaitingCustomer,
    ),
    (sys::PAY_MONEY_PENDING, MoneyState::Pending),
    (sys::PAY_MONEY_AUTHORIZED, MoneyState::Authorized),
    (sys::PAY_MONEY_PAID, MoneyState::Paid),
    (sys::PAY_MONEY_PARTLY_REFUNDED, MoneyState::PartlyRefunded),
    (sys::PAY_MONEY_REFUNDED, MoneyState::Refunded),
    (sys::PAY_MONEY_FAILED, MoneyState::Failed),
];

#[test]
fn every_money_state_is_named_as_the_c_library_names_it() {
    for (value, state) in STATES {
        assert_eq!(state.as_str(), c_name(value), "{state:?}");
        assert_eq!(state.to_string(), state.as_str());
    }
    // A value the C enum does not name: "?" there, never a state that fulfils.
    assert_eq!(c_name(sys::PAY_MONEY_FAILED + 1), "?");
    assert_eq!(c_name(-1), "?");
    assert_eq!(MoneyState::default(), MoneyState::Unknown);
}

/// The "money_state" member of the JSON object `doc`.
fn money_state_in(doc: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(doc).unwrap();
    v["money_state"]
        .as_str()
        .unwrap_or_else(|| panic!("no money_state in {doc}"))
        .to_owned()
}

#[test]
fn a_results_money_state_is_the_c_accessors_and_its_jsons() {
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let (ok, declined) = (order("money-ok"), order("money-declined"));
    sim.script(&declined, &["decline"]);
    for (o, outcome) in [(&ok, Outcome::Succeeded), (&declined, Outcome::Failed)] {
        let r = c.submit(o, &body(o), None).unwrap();
        assert_eq!(r.outcome(), outcome, "{}", r.json());
        assert_eq!(r.money_state().as_str(), money_state_in(r.json()));
        assert!(
            format!("{r:?}").contains(&format!("money_state: {:?}", r.money_state())),
            "{r:?}"
        );
        let q = c.query(o).unwrap();
        assert_eq!(q.money_state().as_str(), money_state_in(q.json()));
    }
}

#[cfg(feature = "serde")]
#[test]
fn the_typed_reports_and_ledger_records_carry_the_money_state() {
    use payretry::report::PaymentReport;
    use payretry::LedgerFilter;
    let Some(sim) = sim() else { return };
    let c = sim.client();
    let o = order("money-report");
    let r = c.submit(&o, &body(&o), None).unwrap();
    assert_eq!(r.report().unwrap().money_state, r.money_state());

    let raw: serde_json::Value = serde_json::from_str(&c.ledger_get(&o).unwrap()).unwrap();
    let rec = c.ledger_record(&o).unwrap();
    assert_eq!(
        rec.payment.money_state.as_str(),
        raw["payment"]["money_state"].as_str().unwrap()
    );
    assert_eq!(rec.payment.money_state, r.money_state());
    assert!(!rec.attempts.is_empty());
    for (typed, raw) in rec.attempts.iter().zip(raw["attempts"].as_array().unwrap()) {
        assert_eq!(
            typed.money_state.as_str(),
            raw["money_state"].as_str().unwrap()
        );
    }
    let listed = c.ledger_payments(&LedgerFilter::new()).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].money_state, r.money_state());

    // A library before the money state writes none, and one after this
    // binding may name a state it does not know: both read Unknown, and the
    // rest of the report still parses.
    let mut doc: serde_json::Value = serde_json::from_str(r.json()).unwrap();
    doc.as_object_mut().unwrap().remove("money_state");
    let old: PaymentReport = serde_json::from_value(doc.clone()).unwrap();
    assert_eq!(
        (old.money_state, old.outcome),
        (MoneyState::Unknown, Outcome::Succeeded)
    );
    doc["money_state"] = "chargeback_reversed".into();
    let newer: PaymentReport = serde_json::from_value(doc).unwrap();
    assert_eq!(newer.money_state, MoneyState::Unknown);
    assert_eq!(
        serde_json::to_string(&MoneyState::PartlyRefunded).unwrap(),
        r#""partly_refunded""#
    );
}
