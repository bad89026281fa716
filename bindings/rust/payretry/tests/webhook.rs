//! Client::apply_webhook against the simulator's payments: a Stripe event
//! signed here as Stripe signs it settles an UNKNOWN payment once, again is a
//! duplicate, and a forgery is refused with nothing changed.
mod common;

use common::{body, order, sim};
use hmac::{Hmac, Mac};
use payretry::{Client, ErrorKind, Outcome};
use sha2::Sha256;
use std::time::{SystemTime, UNIX_EPOCH};

const SECRET: &str = "whsec_rust_binding_webhook_secret";

/// Stripe-Signature: t=<unix s>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>.
fn stripe_signature(secret: &str, body: &[u8]) -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("t={t},v1={hex}")
}

fn stripe_event(id: &str, order: &str) -> Vec<u8> {
    format!(
        r#"{{"id":"{id}","object":"event","type":"payment_intent.succeeded",
  "data":{{"object":{{"id":"pi_{id}","object":"payment_intent","status":"succeeded",
  "metadata":{{"order_id":"{order}"}}}}}}}}"#
    )
    .into_bytes()
}

const URL: &str = "https://shop.example/hooks/stripe";

#[test]
fn a_signed_event_settles_an_unknown_payment_once_and_a_forgery_is_refused() {
    let Some(sim) = sim() else { return };
    let c = Client::new(&sim.config(&format!(r#","webhook":{{"secret":"{SECRET}"}}"#))).unwrap();
    let o = order("webhook");
    sim.script(&o, &["lost_response"; 4]);
    assert_eq!(
        c.submit(&o, &body(&o), None).unwrap().outcome(),
        Outcome::Unknown
    );

    let event = stripe_event("evt_rs_1", &o);
    let signature = stripe_signature(SECRET, &event);
    let headers = [
        ("Content-Type", "application/json"),
        ("Stripe-Signature", signature.as_str()),
    ];
    let reply = c.apply_webhook("POST", URL, &headers, &event).unwrap();
    assert_eq!(
        (reply.status, reply.body.as_slice()),
        (200, &b""[..]),
        "{}",
        reply.outcome
    );
    assert!(
        reply.outcome.contains(r#""verdict":"accepted""#),
        "{}",
        reply.outcome
    );
    assert!(
        reply.outcome.contains(r#""effect":"settled""#),
        "{}",
        reply.outcome
    );
    assert!(c.ledger_get(&o).unwrap().contains("SUCCEEDED"));

    // Delivered again, with owned header strings: a duplicate.
    let owned = vec![(String::from("stripe-signature"), signature.clone())];
    let again = c.apply_webhook("POST", URL, &owned, &event).unwrap();
    assert_eq!(again.status, 200);
    assert!(
        again.outcome.contains(r#""effect":"duplicate""#),
        "{}",
        again.outcome
    );

    let forged = [(
        "Stripe-Signature",
        stripe_signature("whsec_someone_else", &event),
    )];
    let refused = c.apply_webhook("POST", URL, &forged, &event).unwrap();
    assert_eq!(
        (
            refused.status,
            refused.content_type.as_str(),
            refused.body.as_slice()
        ),
        (400, "text/plain", &b"refused"[..])
    );
    assert!(
        refused.outcome.contains(r#""verdict":"refused""#),
        "{}",
        refused.outcome
    );
    assert_eq!(sim.charges(&o), 1);
}

#[test]
fn a_nul_or_a_missing_webhook_block_is_an_error() {
    let Some(sim) = sim() else { return };
    let plain = sim.client();
    let none: [(&str, &str); 0] = [];
    let e = plain.apply_webhook("POST", URL, &none, b"{}").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    let c = Client::new(&sim.config(&format!(r#","webhook":{{"secret":"{SECRET}"}}"#))).unwrap();
    let e = c
        .apply_webhook(
            "POST",
            URL,
            &[(&b"Stripe-Signature"[..], &b"t=1\0"[..])],
            b"{}",
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}
