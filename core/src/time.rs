//! Timestamps on the wire: RFC 3339 UTC with milliseconds (`2026-11-30T17:02:03.456Z`).

use std::time::SystemTime;

/// `time` as RFC 3339 UTC with milliseconds, e.g. `2026-11-30T17:02:03.456Z`.
pub fn rfc3339_millis(time: SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

/// The current time as [`rfc3339_millis`].
pub fn now_rfc3339() -> String {
    rfc3339_millis(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn formats_utc_with_milliseconds() {
        let t = UNIX_EPOCH + Duration::from_millis(1_796_058_123_456);
        assert_eq!(rfc3339_millis(t), "2026-11-30T17:02:03.456Z");
        assert_eq!(rfc3339_millis(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    }
}
