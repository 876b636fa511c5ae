//! Dates in HTTP headers (RFC 9110, 5.6.7), as Go's `http.TimeFormat` writes them: the
//! monitoring endpoints' and the WebSocket handshake's `Date`. A leaf module.

use std::time::SystemTime;

/// Go's `http.TimeFormat`: `Tue, 01 Dec 2026 15:30:34 GMT`.
pub fn http_date(t: SystemTime) -> String {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let d = time::OffsetDateTime::from(t);
    format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        DAYS[d.weekday().number_days_from_monday() as usize],
        d.day(),
        MONTHS[(d.month() as usize).saturating_sub(1) % 12],
        d.year(),
        d.hour(),
        d.minute(),
        d.second()
    )
}
