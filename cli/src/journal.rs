//! `uq journal`: a summary of a journal (§18): asks per outcome and the wait until they
//! settled. Lines that are not journal lines are counted and reported, never fatal (a
//! process killed mid-write leaves half a line).

use std::fmt::Write as _;

use serde_json::Value;

/// Every outcome a `settled` line can carry, in report order.
pub const OUTCOMES: [&str; 5] = ["answered", "cancelled", "aborted", "failed", "timed_out"];

/// How many line numbers of malformed lines a report lists.
const LISTED: usize = 5;

/// What a journal holds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// `asked` lines.
    pub asked: u64,
    /// `refused` lines (asks that failed before reaching a provider).
    pub refused: u64,
    /// `settled` lines per outcome, in [`OUTCOMES`] order.
    pub settled: [u64; 5],
    /// The `ms` of every `settled` line, sorted.
    pub waits: Vec<u64>,
    /// The 1-based numbers of the lines that are not journal lines.
    pub malformed: Vec<usize>,
}

fn check_line(value: &Value) -> Option<Line> {
    let object = value.as_object()?;
    object.get("at")?.as_str()?;
    object.get("ask")?.as_u64()?;
    match object.get("event")?.as_str()? {
        "asked" => Some(Line::Asked),
        "refused" => Some(Line::Refused),
        "settled" => {
            let outcome = object.get("outcome")?.as_str()?;
            let index = OUTCOMES.iter().position(|o| *o == outcome)?;
            let ms = object.get("ms")?.as_u64()?;
            Some(Line::Settled(index, ms))
        }
        _ => None,
    }
}

enum Line {
    Asked,
    Refused,
    Settled(usize, u64),
}

impl Summary {
    /// Reads journal text (bytes: a line that is not UTF-8 is malformed, not fatal).
    pub fn of(bytes: &[u8]) -> Summary {
        let mut summary = Summary::default();
        for (n, raw) in bytes.split(|b| *b == b'\n').enumerate() {
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let line = serde_json::from_slice::<Value>(raw)
                .ok()
                .as_ref()
                .and_then(check_line);
            match line {
                Some(Line::Asked) => summary.asked += 1,
                Some(Line::Refused) => summary.refused += 1,
                Some(Line::Settled(outcome, ms)) => {
                    summary.settled[outcome] += 1;
                    summary.waits.push(ms);
                }
                None => summary.malformed.push(n + 1),
            }
        }
        summary.waits.sort_unstable();
        summary
    }

    /// Every ask the journal saw: `asked` and `refused` lines (each `ask()` writes one).
    pub fn asks(&self) -> u64 {
        self.asked + self.refused
    }

    /// Asks still waiting when the journal was read (asked, not settled).
    pub fn pending(&self) -> u64 {
        self.asked.saturating_sub(self.settled.iter().sum())
    }

    /// The `p`-th percentile wait (nearest rank), `None` without settled asks.
    pub fn percentile(&self, p: u64) -> Option<u64> {
        let n = self.waits.len() as u64;
        if n == 0 {
            return None;
        }
        let rank = (p * n).div_ceil(100).max(1);
        Some(self.waits[(rank - 1) as usize])
    }

    /// The machine-readable summary, keys in this order: `{"asks","outcomes":{…,"refused"},
    /// "pending","waitMs"?:{"p50","p95"},"malformed"}` (`waitMs` absent without settled asks).
    pub fn to_json(&self) -> String {
        let outcomes: Vec<String> = OUTCOMES
            .iter()
            .zip(self.settled)
            .map(|(name, count)| format!("\"{name}\":{count}"))
            .chain([format!("\"refused\":{}", self.refused)])
            .collect();
        let wait = match (self.percentile(50), self.percentile(95)) {
            (Some(p50), Some(p95)) => format!(",\"waitMs\":{{\"p50\":{p50},\"p95\":{p95}}}"),
            _ => String::new(),
        };
        format!(
            "{{\"asks\":{},\"outcomes\":{{{}}},\"pending\":{}{wait},\"malformed\":{}}}",
            self.asks(),
            outcomes.join(","),
            self.pending(),
            self.malformed.len()
        )
    }

    /// The summary for people.
    pub fn to_text(&self, name: &str) -> String {
        let mut out = String::new();
        let plural = |n: u64| if n == 1 { "" } else { "s" };
        let asks = self.asks();
        let _ = writeln!(out, "{name}: {asks} ask{}", plural(asks));
        for (outcome, count) in OUTCOMES.iter().zip(self.settled) {
            let _ = writeln!(out, "  {outcome:<10} {count}");
        }
        let _ = writeln!(out, "  {:<10} {}", "refused", self.refused);
        let _ = writeln!(out, "  {:<10} {}", "pending", self.pending());
        match (self.percentile(50), self.percentile(95)) {
            (Some(p50), Some(p95)) => {
                let n = self.waits.len() as u64;
                let _ = writeln!(
                    out,
                    "wait: median {p50} ms, 95th percentile {p95} ms ({n} settled ask{})",
                    plural(n)
                );
            }
            _ => {
                let _ = writeln!(out, "wait: no settled asks");
            }
        }
        if !self.malformed.is_empty() {
            let n = self.malformed.len();
            let mut listed: Vec<String> = self
                .malformed
                .iter()
                .take(LISTED)
                .map(usize::to_string)
                .collect();
            if n > LISTED {
                listed.push("…".into());
            }
            let _ = writeln!(
                out,
                "{n} malformed line{} skipped (line{} {})",
                plural(n as u64),
                plural(n as u64),
                listed.join(", ")
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOURNAL: &str = r#"{"at":"2026-11-30T17:00:00.000Z","event":"asked","ask":1,"questions":[]}
{"at":"2026-11-30T17:00:01.000Z","event":"settled","ask":1,"outcome":"answered","ms":1000,"answer":{"answers":[]}}
{"at":"2026-11-30T17:00:02.000Z","event":"refused","ask":2,"code":"EMPTY_QUESTIONS","message":"m"}
{"at":"2026-11-30T17:00:03.000Z","event":"asked","ask":3,"questions":[],"timeoutMs":5}
{"at":"2026-11-30T17:00:03.005Z","event":"settled","ask":3,"outcome":"timed_out","ms":5,"code":"ASK_TIMED_OUT","message":"m"}
not json
{"at":"2026-11-30T17:00:04.000Z","event":"settled","ask":9,"outcome":"maybe","ms":1}

{"at":"2026-11-30T17:00:05.000Z","event":"asked","ask":4,"questions":[]}
{"at":"2026-11-30T17:00:06.000Z","event":"settled","ask":4,"outc"#;

    #[test]
    fn counts_outcomes_refusals_pending_and_malformed_lines() {
        let s = Summary::of(JOURNAL.as_bytes());
        assert_eq!(s.asked, 3);
        assert_eq!(s.refused, 1);
        assert_eq!(s.asks(), 4);
        assert_eq!(s.settled, [1, 0, 0, 0, 1]);
        assert_eq!(s.pending(), 1);
        assert_eq!(s.waits, vec![5, 1000]);
        // Not JSON, an unknown outcome, a half-written last line; the blank line is no line.
        assert_eq!(s.malformed, vec![6, 7, 10]);
        assert_eq!(
            s.to_json(),
            r#"{"asks":4,"outcomes":{"answered":1,"cancelled":0,"aborted":0,"failed":0,"timed_out":1,"refused":1},"pending":1,"waitMs":{"p50":5,"p95":1000},"malformed":3}"#
        );
        let text = s.to_text("j.jsonl");
        assert!(
            text.starts_with("j.jsonl: 4 asks\n  answered   1\n"),
            "{text}"
        );
        assert!(text.contains("  timed_out  1\n"), "{text}");
        assert!(
            text.contains("wait: median 5 ms, 95th percentile 1000 ms (2 settled asks)"),
            "{text}"
        );
        assert!(
            text.contains("3 malformed lines skipped (lines 6, 7, 10)"),
            "{text}"
        );
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let s = Summary {
            waits: (1..=100).collect(),
            ..Summary::default()
        };
        assert_eq!((s.percentile(50), s.percentile(95)), (Some(50), Some(95)));
        let s = Summary {
            waits: vec![7],
            ..Summary::default()
        };
        assert_eq!((s.percentile(50), s.percentile(95)), (Some(7), Some(7)));
        let s = Summary {
            waits: vec![1, 2, 3, 4],
            ..Summary::default()
        };
        assert_eq!((s.percentile(50), s.percentile(95)), (Some(2), Some(4)));
    }

    #[test]
    fn an_empty_journal_has_no_wait() {
        let s = Summary::of(b"");
        assert_eq!(
            s.to_json(),
            r#"{"asks":0,"outcomes":{"answered":0,"cancelled":0,"aborted":0,"failed":0,"timed_out":0,"refused":0},"pending":0,"malformed":0}"#
        );
        assert!(s.to_text("j").contains("wait: no settled asks"));
        // Invalid UTF-8 is a malformed line, not an error.
        let s = Summary::of(b"\xff\xfe\n");
        assert_eq!(s.malformed, vec![1]);
    }
}
