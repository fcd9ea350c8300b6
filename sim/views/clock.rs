//! Virtual time as the wall-clock times tools print. fabsim renders virtual time on a fixed
//! epoch, the first day of the seed lab (its BIRD booted on 2025-08-01, seed-lab.md s1
//! `Last reboot on 2025-08-01 10:58:09`), so output never depends on the host's clock or zone.

use chrono::{DateTime, NaiveDate, Utc};

/// The civil date (UTC) at virtual time 0.
pub(crate) const EPOCH_DATE: (i32, u32, u32) = (2025, 8, 1);

/// The UTC time of a virtual time (ms).
pub(crate) fn wall_clock(t_ms: u64) -> DateTime<Utc> {
    let (y, m, d) = EPOCH_DATE;
    let base = NaiveDate::from_ymd_opt(y, m, d)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .unwrap_or_default()
        .and_utc();
    base + chrono::Duration::milliseconds(i64::try_from(t_ms).unwrap_or(i64::MAX / 2))
}
