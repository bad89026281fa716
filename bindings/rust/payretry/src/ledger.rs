//! What [`Client::ledger_list`](crate::Client::ledger_list) selects: a state,
//! an age and a count.

use std::time::{SystemTime, UNIX_EPOCH};

/// The state of a payment's row in the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "SCREAMING_SNAKE_CASE"))]
#[non_exhaustive]
pub enum LedgerState {
    Pending,
    InFlight,
    Succeeded,
    Failed,
    Unknown,
}

impl LedgerState {
    /// The ledger's name of the state, e.g. `"IN_FLIGHT"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LedgerState::Pending => "PENDING",
            LedgerState::InFlight => "IN_FLIGHT",
            LedgerState::Succeeded => "SUCCEEDED",
            LedgerState::Failed => "FAILED",
            LedgerState::Unknown => "UNKNOWN",
        }
    }
}

/// Which payments [`Client::ledger_list`](crate::Client::ledger_list) returns
/// (oldest update first). The default: every state, any age, at most 1000.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerFilter {
    pub(crate) state: Option<LedgerState>,
    pub(crate) updated_before_unix_ms: i64,
    pub(crate) limit: u32,
}

impl LedgerFilter {
    /// Every payment (up to 1000).
    pub fn new() -> LedgerFilter {
        LedgerFilter::default()
    }

    /// Only payments in this state.
    pub fn state(mut self, state: LedgerState) -> LedgerFilter {
        self.state = Some(state);
        self
    }

    /// Only payments last updated before this time.
    pub fn updated_before(self, time: SystemTime) -> LedgerFilter {
        let ms = time
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        // 0 would mean "no limit": a time at or before the epoch selects nothing older.
        self.updated_before_unix_ms(ms.max(1))
    }

    /// Only payments last updated before this Unix time in milliseconds
    /// (0: no limit).
    pub fn updated_before_unix_ms(mut self, unix_ms: i64) -> LedgerFilter {
        self.updated_before_unix_ms = unix_ms;
        self
    }

    /// At most this many payments (0: 1000).
    pub fn limit(mut self, limit: u32) -> LedgerFilter {
        self.limit = limit;
        self
    }
}
