//! The request signature `payretry-sim --hmac-secret` checks: `X-Signature:
//! v1=<lowercase hex HMAC-SHA256(secret, METHOD \n TARGET \n BODY)>`.

use hmac::{Hmac, Mac};
use payretry::AttemptInfo;
use sha2::Sha256;

pub const HEADER: &str = "X-Signature";

pub fn signature(secret: &str, info: &AttemptInfo<'_>) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(info.method.as_bytes());
    mac.update(b"\n");
    mac.update(info.request_target().as_bytes());
    mac.update(b"\n");
    mac.update(info.body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("v1={hex}")
}
