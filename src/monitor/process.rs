//! The process's resident memory and CPU use, for `/varz` (`mem`, `cpu`) and `/metrics`.
//!
//! On Linux both come from `/proc` (plain file reads: no `unsafe`, nothing Unix-only at
//! compile time): resident memory from `VmRSS` in `/proc/self/status`, CPU time from the
//! `utime` and `stime` fields of `/proc/self/stat`. Elsewhere both read as 0 (documented in
//! the README).
//!
//! **CPU.** nats-server's `cpu` is the process's CPU time over the last second of wall time,
//! in percent of one core (so up to 100 × cores), with one decimal; a timer samples it every
//! second. beaver runs no timer: [`CpuSampler`] samples when `/varz` or `/metrics` asks, and
//! reports the use since the previous sample, provided that sample is at least
//! [`CPU_WINDOW`] old. Requests closer together than that get the value computed last. The
//! first request reports the average since the server started.

use std::time::{Duration, Instant};

/// The shortest interval a CPU percentage is computed over (nats-server samples every
/// second).
pub const CPU_WINDOW: Duration = Duration::from_secs(1);

/// Clock ticks per second of `/proc/<pid>/stat` times (`USER_HZ`). It is 100 on every
/// Linux architecture in practice; nats-server assumes the same.
const TICKS_PER_SEC: u64 = 100;

/// Resident memory of this process in bytes (0 when unknown).
pub fn resident_memory() -> u64 {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return 0;
    };
    // "VmRSS:	   12345 kB"
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb.saturating_mul(1024))
}

/// CPU time used by this process so far (user + system), if the platform tells.
pub fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may contain spaces: count the fields
    // after its closing parenthesis. utime and stime are fields 14 and 15 of the line,
    // so the 12th and 13th after the name.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = utime.saturating_add(stime);
    Some(Duration::from_millis(
        ticks.saturating_mul(1000 / TICKS_PER_SEC),
    ))
}

/// Samples CPU use on request (see the module docs). Shared by the monitoring threads
/// behind the monitor's stats lock; the CPU time is read by the caller, outside the lock.
#[derive(Debug)]
pub struct CpuSampler {
    /// The previous sample: when, and the CPU time then.
    last: (Instant, Duration),
    /// The percentage computed last.
    percent: f64,
    /// Whether a percentage has been computed yet.
    computed: bool,
}

impl CpuSampler {
    /// A sampler whose first window starts at `start` (the server's start), with no CPU time
    /// used before it counted from zero (the process started moments before).
    pub fn new(start: Instant) -> Self {
        CpuSampler {
            last: (start, Duration::ZERO),
            percent: 0.0,
            computed: false,
        }
    }

    /// The CPU use in percent of one core, with one decimal, as of `now`, when the
    /// process had used `cpu` ([`cpu_time`], read at `now`; `None` where unknown: 0).
    pub fn sample(&mut self, now: Instant, cpu: Option<Duration>) -> f64 {
        let Some(cpu) = cpu else {
            return 0.0;
        };
        let wall = now.saturating_duration_since(self.last.0);
        if wall >= CPU_WINDOW || (!self.computed && !wall.is_zero()) {
            let used = cpu.saturating_sub(self.last.1);
            self.percent = percent(used, wall);
            self.computed = true;
            self.last = (now, cpu);
        }
        self.percent
    }
}

/// `used` CPU time over `wall` time in percent of one core, rounded down to one decimal as
/// nats-server does (it keeps per mille in an integer).
fn percent(used: Duration, wall: Duration) -> f64 {
    if wall.is_zero() {
        return 0.0;
    }
    let per_mille = used.as_nanos().saturating_mul(1000) / wall.as_nanos();
    per_mille as f64 / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_of_one_core() {
        assert_eq!(
            percent(Duration::from_millis(500), Duration::from_secs(1)),
            50.0
        );
        assert_eq!(
            percent(Duration::from_millis(1234), Duration::from_secs(1)),
            123.4
        );
        assert_eq!(
            percent(Duration::from_millis(3), Duration::from_secs(2)),
            0.1
        );
        assert_eq!(percent(Duration::ZERO, Duration::ZERO), 0.0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn linux_reads_proc() {
        assert!(resident_memory() > 0);
        assert!(cpu_time().is_some());
        let mut s = CpuSampler::new(Instant::now() - Duration::from_secs(10));
        let p = s.sample(Instant::now(), cpu_time());
        assert!(p >= 0.0);
    }
}
