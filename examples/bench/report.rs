//! nats-bench's report, as Go's `github.com/nats-io/nats.go/bench` package computes and prints
//! it: `Sample`, `SampleGroup`, `Benchmark`, `Rate()`, `Throughput()`, `Statistics()`,
//! `Report()`, `CSV()`, `commaFormat` and `HumanBytes`, with the same integer truncations and
//! the same number formatting (`%.2f`, `%f`, `%d`), so the text is byte for byte what nats-bench
//! prints for the same samples.

use std::fmt;
use std::time::Instant;

/// One client's sample (Go's `bench.Sample`).
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Messages in this client's job (Go's `JobMsgCnt`).
    pub job_msg_cnt: u64,
    /// Messages the connection actually sent or received (Go's `MsgCnt`: `OutMsgs + InMsgs`).
    pub msg_cnt: u64,
    /// Payload bytes of the job: message size times job messages.
    pub msg_bytes: u64,
    pub start: Instant,
    pub end: Instant,
}

/// Go's `time.Duration` of `end.Sub(start)`: signed nanoseconds.
fn nanos_between(start: Instant, end: Instant) -> i64 {
    if end >= start {
        i64::try_from((end - start).as_nanos()).unwrap_or(i64::MAX)
    } else {
        -i64::try_from((start - end).as_nanos()).unwrap_or(i64::MAX)
    }
}

/// Go's `Duration.Seconds()`: whole seconds plus the nanosecond remainder, in that order.
pub fn go_seconds(nanos: i64) -> f64 {
    let sec = nanos / 1_000_000_000;
    let nsec = nanos % 1_000_000_000;
    sec as f64 + nsec as f64 / 1e9
}

/// Go's `int64(f)` on amd64: truncation; NaN and out-of-range values become `math.MinInt64`.
pub fn go_int64(f: f64) -> i64 {
    if f.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// Go's `%.Nf`: like Rust's `{:.N}` for finite values (both round the exact binary value,
/// ties to even), and Go's spelling of infinities and NaN.
pub fn go_fixed(f: f64, prec: usize) -> String {
    if f.is_nan() {
        "NaN".to_string()
    } else if f == f64::INFINITY {
        "+Inf".to_string()
    } else if f == f64::NEG_INFINITY {
        "-Inf".to_string()
    } else {
        format!("{f:.prec$}")
    }
}

impl Sample {
    pub fn new(job: u64, msg_size: usize, start: Instant, end: Instant, msg_cnt: u64) -> Sample {
        Sample {
            job_msg_cnt: job,
            msg_cnt,
            msg_bytes: (msg_size as u64).wrapping_mul(job),
            start,
            end,
        }
    }

    pub fn duration_nanos(&self) -> i64 {
        nanos_between(self.start, self.end)
    }

    /// Seconds the sample was active.
    pub fn seconds(&self) -> f64 {
        go_seconds(self.duration_nanos())
    }

    /// Payload bytes per second.
    pub fn throughput(&self) -> f64 {
        self.msg_bytes as f64 / self.seconds()
    }

    /// Job messages per second, truncated as Go's `Rate()` does.
    pub fn rate(&self) -> i64 {
        go_int64(self.rate_f64())
    }

    /// Job messages per second, not truncated (for the JSON summary).
    pub fn rate_f64(&self) -> f64 {
        self.job_msg_cnt as f64 / self.seconds()
    }
}

impl fmt::Display for Sample {
    /// `1,076,537 msgs/sec ~ 16.43 MB/sec`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} msgs/sec ~ {}/sec",
            comma_format(self.rate()),
            human_bytes(self.throughput(), false)
        )
    }
}

/// A group of samples and their aggregate (Go's `bench.SampleGroup`): the aggregate spans from
/// the earliest start to the latest end and adds up the counts.
#[derive(Debug, Clone, Default)]
pub struct SampleGroup {
    pub agg: Option<Sample>,
    pub samples: Vec<Sample>,
}

impl SampleGroup {
    pub fn add(&mut self, s: Sample) {
        self.samples.push(s);
        let agg = self.agg.get_or_insert(Sample {
            job_msg_cnt: 0,
            msg_cnt: 0,
            msg_bytes: 0,
            start: s.start,
            end: s.end,
        });
        agg.job_msg_cnt += s.job_msg_cnt;
        agg.msg_cnt += s.msg_cnt;
        agg.msg_bytes = agg.msg_bytes.wrapping_add(s.msg_bytes);
        if s.start < agg.start {
            agg.start = s.start;
        }
        if s.end > agg.end {
            agg.end = s.end;
        }
    }

    pub fn has_samples(&self) -> bool {
        !self.samples.is_empty()
    }

    pub fn min_rate(&self) -> i64 {
        self.samples.iter().map(Sample::rate).min().unwrap_or(0)
    }

    pub fn max_rate(&self) -> i64 {
        self.samples.iter().map(Sample::rate).max().unwrap_or(0)
    }

    /// Go sums the rates as `uint64` and divides as integers.
    pub fn avg_rate(&self) -> i64 {
        if self.samples.is_empty() {
            return 0;
        }
        let sum = self
            .samples
            .iter()
            .fold(0u64, |acc, s| acc.wrapping_add(s.rate() as u64));
        (sum / self.samples.len() as u64) as i64
    }

    /// Population standard deviation of the rates around the (integer) average.
    pub fn std_dev(&self) -> f64 {
        let avg = self.avg_rate() as f64;
        let sum: f64 = self
            .samples
            .iter()
            .map(|s| {
                let d = s.rate() as f64 - avg;
                d * d
            })
            .sum();
        (sum / self.samples.len() as f64).sqrt()
    }

    /// `min 955,150 | avg 955,154 | max 955,157 | stddev 2 msgs`
    pub fn statistics(&self) -> String {
        self.statistics_of("msgs")
    }

    pub fn statistics_of(&self, unit: &str) -> String {
        format!(
            "min {} | avg {} | max {} | stddev {} {unit}",
            comma_format(self.min_rate()),
            comma_format(self.avg_rate()),
            comma_format(self.max_rate()),
            comma_format(go_int64(self.std_dev())),
        )
    }
}

/// Go's `bench.Benchmark` after `Close()`.
#[derive(Debug, Clone)]
pub struct Benchmark {
    pub name: String,
    pub run_id: String,
    pub pubs: SampleGroup,
    pub subs: SampleGroup,
    /// The whole run: from the earliest start to the latest end of all samples.
    pub agg: Option<Sample>,
}

impl Benchmark {
    /// Samples in the order the clients finished (as nats-bench collects them).
    pub fn new(name: &str, run_id: String, pubs: Vec<Sample>, subs: Vec<Sample>) -> Benchmark {
        let mut bm = Benchmark {
            name: name.to_string(),
            run_id,
            pubs: SampleGroup::default(),
            subs: SampleGroup::default(),
            agg: None,
        };
        for s in subs {
            bm.subs.add(s);
        }
        for s in pubs {
            bm.pubs.add(s);
        }
        let (p, s) = (bm.pubs.agg, bm.subs.agg);
        let mut agg = match (s, p) {
            (Some(s), _) => s,
            (None, Some(p)) => p,
            (None, None) => return bm,
        };
        if let (Some(s), Some(p)) = (s, p) {
            agg.start = agg.start.min(s.start).min(p.start);
            agg.end = agg.end.max(s.end).max(p.end);
        }
        let (p, s) = (p.as_ref(), s.as_ref());
        agg.msg_bytes = p
            .map_or(0, |x| x.msg_bytes)
            .wrapping_add(s.map_or(0, |x| x.msg_bytes));
        agg.msg_cnt = p.map_or(0, |x| x.msg_cnt) + s.map_or(0, |x| x.msg_cnt);
        agg.job_msg_cnt = p.map_or(0, |x| x.job_msg_cnt) + s.map_or(0, |x| x.job_msg_cnt);
        bm.agg = Some(agg);
        bm
    }

    /// Go's `Report()`, byte for byte.
    pub fn report(&self) -> String {
        let mut out = String::new();
        let (pubs, subs) = (&self.pubs, &self.subs);
        if !pubs.has_samples() && !subs.has_samples() {
            return "No publisher or subscribers. Nothing to report.".to_string();
        }
        let mut indent = "";
        if let (Some(agg), true, true) = (self.agg, pubs.has_samples(), subs.has_samples()) {
            out.push_str(&format!("{} Pub/Sub stats: {agg}\n", self.name));
            indent = " ";
        }
        for (label, group) in [("Pub", pubs), ("Sub", subs)] {
            let Some(agg) = group.agg else { continue };
            out.push_str(&format!("{indent}{label} stats: {agg}\n"));
            if group.samples.len() > 1 {
                for (i, s) in group.samples.iter().enumerate() {
                    out.push_str(&format!(
                        "{indent} [{}] {s} ({} msgs)\n",
                        i + 1,
                        s.job_msg_cnt
                    ));
                }
                out.push_str(&format!("{indent} {}\n", group.statistics()));
            }
        }
        out
    }

    /// Go's `CSV()`: a header, then subscribers `S0..`, then publishers `P0..`.
    pub fn csv(&self) -> String {
        let mut out =
            String::from("#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs\n");
        for (pre, group) in [("S", &self.subs), ("P", &self.pubs)] {
            for (j, c) in group.samples.iter().enumerate() {
                out.push_str(&format!(
                    "{},{pre}{j},{},{},{},{},{}\n",
                    self.run_id,
                    c.msg_cnt,
                    c.msg_bytes,
                    c.rate(),
                    go_fixed(c.throughput(), 6),
                    go_fixed(c.seconds(), 6),
                ));
            }
        }
        out
    }
}

/// Go's `commaFormat`: `1234567` is `1,234,567`.
pub fn comma_format(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Go's `HumanBytes`: base 1024 with `KB`, `MB`, ... (or base 1000 with `kiB`, `MiB`, ...
/// when `si`, sic).
pub fn human_bytes(bytes: f64, si: bool) -> String {
    let (base, pre, post): (f64, [&str; 6], &str) = if si {
        (1000.0, ["k", "M", "G", "T", "P", "E"], "iB")
    } else {
        (1024.0, ["K", "M", "G", "T", "P", "E"], "B")
    };
    if bytes < base || !bytes.is_finite() {
        // Go panics on NaN and infinities (an empty sample); print them instead.
        return format!("{} B", go_fixed(bytes, 2));
    }
    let exp = go_int64(bytes.ln() / base.ln());
    let index = (exp - 1).clamp(0, 5) as usize;
    format!(
        "{} {}{post}",
        go_fixed(bytes / base.powi(exp as i32), 2),
        pre[index]
    )
}

/// A run id in the shape of a NUID (what nats-bench uses): 22 base-62 characters.
pub fn run_id() -> String {
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    (0..22)
        .map(|_| DIGITS[fastrand::usize(..DIGITS.len())] as char)
        .collect()
}

/// Go's `bench.MsgsPerClient`: `n` split as evenly as possible, the remainder to the first.
pub fn msgs_per_client(n: u64, clients: usize) -> Vec<u64> {
    if clients == 0 || n == 0 {
        return Vec::new();
    }
    let c = clients as u64;
    (0..c).map(|i| n / c + u64::from(i < n % c)).collect()
}

#[cfg(test)]
mod tests {
    //! Expected strings were printed by Go's `nats.go/bench` package (Debian's
    //! golang-github-nats-io-go-nats-dev) for the same sample counts and durations.
    use super::*;
    use std::time::Duration;

    fn at(base: Instant, ns: u64) -> Instant {
        base + Duration::from_nanos(ns)
    }

    /// (job, size, start ns, end ns)
    fn samples(base: Instant, v: &[(u64, usize, u64, u64)]) -> Vec<Sample> {
        v.iter()
            .map(|&(job, size, s, e)| Sample::new(job, size, at(base, s), at(base, e), job))
            .collect()
    }

    #[test]
    fn comma_format_matches_go() {
        let cases = [
            (0, "0"),
            (5, "5"),
            (999, "999"),
            (1000, "1,000"),
            (-1, "-1"),
            (-999, "-999"),
            (-1000, "-1,000"),
            (1234567, "1,234,567"),
            (i64::MAX, "9,223,372,036,854,775,807"),
            (i64::MIN, "-9,223,372,036,854,775,808"),
        ];
        for (n, want) in cases {
            assert_eq!(comma_format(n), want, "{n}");
        }
    }

    #[test]
    fn human_bytes_matches_go() {
        let cases = [
            (0.0, false, "0.00 B"),
            (1023.999, false, "1024.00 B"),
            (1024.0, false, "1.00 KB"),
            (1048575.9, false, "1024.00 KB"),
            (1048576.0, false, "1.00 MB"),
            (1e9, false, "953.67 MB"),
            (1.5e12, false, "1.36 TB"),
            (1e15, false, "909.49 TB"),
            (1e18, false, "888.18 PB"),
            (999.0, true, "999.00 B"),
            (1000.0, true, "1.00 kiB"),
            (123456789.0, true, "123.46 MiB"),
        ];
        for (b, si, want) in cases {
            assert_eq!(human_bytes(b, si), want, "{b} {si}");
        }
    }

    #[test]
    fn msgs_per_client_matches_go() {
        assert_eq!(msgs_per_client(10, 3), vec![4, 3, 3]);
        assert_eq!(
            msgs_per_client(100003, 5),
            vec![20001, 20001, 20001, 20000, 20000]
        );
        assert!(msgs_per_client(0, 3).is_empty());
        assert!(msgs_per_client(3, 0).is_empty());
    }

    fn check(bm: &Benchmark, report: &str, csv: &str) {
        assert_eq!(bm.report(), report);
        assert_eq!(bm.csv(), csv);
    }

    #[test]
    fn pub_only_report_matches_go() {
        let base = Instant::now();
        let pubs = samples(base, &[(5_000_000, 16, 0, 1_234_567_891)]);
        let bm = Benchmark::new("NATS", "RUN".into(), pubs, vec![]);
        check(
            &bm,
            "Pub stats: 4,050,000 msgs/sec ~ 61.80 MB/sec\n",
            "#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs\nRUN,P0,5000000,80000000,4050000,64800000.537192,1.234568\n",
        );
    }

    #[test]
    fn one_to_one_report_matches_go() {
        let base = Instant::now();
        let pubs = samples(base, &[(100_000, 16, 0, 92_891_000)]);
        let subs = samples(base, &[(100_000, 16, 1_000_000, 99_541_234)]);
        let bm = Benchmark::new("NATS", "RUN".into(), pubs, subs);
        check(
            &bm,
            "NATS Pub/Sub stats: 2,009,217 msgs/sec ~ 30.66 MB/sec\n Pub stats: 1,076,530 msgs/sec ~ 16.43 MB/sec\n Sub stats: 1,014,803 msgs/sec ~ 15.48 MB/sec\n",
            "#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs\nRUN,S0,100000,1600000,1014803,16236857.760478,0.098541\nRUN,P0,100000,1600000,1076530,17224488.917118,0.092891\n",
        );
    }

    #[test]
    fn n_to_m_report_matches_go() {
        let base = Instant::now();
        let pubs = samples(
            base,
            &[
                (20001, 16, 10, 88_345_678),
                (20001, 16, 500, 88_400_001),
                (20001, 16, 1000, 89_000_000),
                (20000, 16, 2000, 90_123_456),
                (20000, 16, 3000, 91_000_000),
            ],
        );
        let subs = samples(
            base,
            &[
                (100003, 1000, 7_000, 95_000_000),
                (100003, 1000, 8_000, 95_000_010),
                (100003, 1000, 9_000, 95_300_000),
            ],
        );
        let bm = Benchmark::new("NATS", "RUN".into(), pubs, subs);
        check(
            &bm,
            "NATS Pub/Sub stats: 4,197,398 msgs/sec ~ 2.95 GB/sec\n Pub stats: 1,098,934 msgs/sec ~ 16.77 MB/sec\n  [1] 226,394 msgs/sec ~ 3.45 MB/sec (20001 msgs)\n  [2] 226,256 msgs/sec ~ 3.45 MB/sec (20001 msgs)\n  [3] 224,732 msgs/sec ~ 3.43 MB/sec (20001 msgs)\n  [4] 221,922 msgs/sec ~ 3.39 MB/sec (20000 msgs)\n  [5] 219,787 msgs/sec ~ 3.35 MB/sec (20000 msgs)\n  min 219,787 | avg 223,818 | max 226,394 | stddev 2,579 msgs\n Sub stats: 3,148,279 msgs/sec ~ 2.93 GB/sec\n  [1] 1,052,740 msgs/sec ~ 1003.97 MB/sec (100003 msgs)\n  [2] 1,052,751 msgs/sec ~ 1003.98 MB/sec (100003 msgs)\n  [3] 1,049,448 msgs/sec ~ 1000.83 MB/sec (100003 msgs)\n  min 1,049,448 | avg 1,051,646 | max 1,052,751 | stddev 1,554 msgs\n",
            "#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs\nRUN,S0,100003,100003000,1052740,1052740728.264188,0.094993\nRUN,S1,100003,100003000,1052751,1052751699.853493,0.094992\nRUN,S2,100003,100003000,1049448,1049448531.340840,0.095291\nRUN,P0,20001,320016,226394,3622316.829389,0.088346\nRUN,P1,20001,320016,226256,3620110.932527,0.088400\nRUN,P2,20001,320016,224732,3595725.794672,0.088999\nRUN,P3,20000,320000,221922,3550763.760408,0.090121\nRUN,P4,20000,320000,219787,3516599.448333,0.090997\n",
        );
    }

    #[test]
    fn subs_only_report_matches_go() {
        let base = Instant::now();
        let subs = samples(
            base,
            &[
                (20000, 65536, 0, 3_000_000_000),
                (20000, 65536, 5, 2_999_999_999),
            ],
        );
        let bm = Benchmark::new("NATS", "RUN".into(), vec![], subs);
        check(
            &bm,
            "Sub stats: 13,333 msgs/sec ~ 833.33 MB/sec\n [1] 6,666 msgs/sec ~ 416.67 MB/sec (20000 msgs)\n [2] 6,666 msgs/sec ~ 416.67 MB/sec (20000 msgs)\n min 6,666 | avg 6,666 | max 6,666 | stddev 0 msgs\n",
            "#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs\nRUN,S0,20000,1310720000,6666,436906666.666667,3.000000\nRUN,S1,20000,1310720000,6666,436906667.540480,3.000000\n",
        );
    }
}
