//! Timestamps on the wire: RFC 3339 UTC with milliseconds (`2026-11-30T17:02:03.456Z`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The last instant RFC 3339 can write (`9999-12-31T23:59:59.999Z`).
const LAST: Duration = Duration::from_millis(253_402_300_799_999);

/// `time` as RFC 3339 UTC with milliseconds, e.g. `2026-11-30T17:02:03.456Z`. A time before
/// 1970 is written as 1970's first instant, one after 9999 as 9999's last (no deadline of the
/// library reaches either; a damaged store's times might).
pub fn rfc3339_millis(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    humantime::format_rfc3339_millis(UNIX_EPOCH + since.min(LAST)).to_string()
}

/// The current time as [`rfc3339_millis`].
pub fn now_rfc3339() -> String {
    rfc3339_millis(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_with_milliseconds() {
        let t = UNIX_EPOCH + Duration::from_millis(1_796_058_123_456);
        assert_eq!(rfc3339_millis(t), "2026-11-30T17:02:03.456Z");
        assert_eq!(rfc3339_millis(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn times_rfc_3339_cannot_write_are_clamped_not_a_panic() {
        let last = UNIX_EPOCH + Duration::from_millis(253_402_300_799_999);
        assert_eq!(rfc3339_millis(last), "9999-12-31T23:59:59.999Z");
        let after = UNIX_EPOCH + Duration::from_millis(253_402_300_800_000);
        assert_eq!(rfc3339_millis(after), "9999-12-31T23:59:59.999Z");
        let far = UNIX_EPOCH + Duration::from_secs(u64::MAX / 4);
        assert_eq!(rfc3339_millis(far), "9999-12-31T23:59:59.999Z");
        let before = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(rfc3339_millis(before), "1970-01-01T00:00:00.000Z");
    }
}
