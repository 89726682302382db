//! Times a query names ("on 9 October, 2022", "in May 2023", "during 2021"), as periods of
//! valid time: a search weighs up the records that began in the period (see
//! [`crate::TextSearch`]).
//!
//! Recognised, case-insensitively, anywhere in the query (the first match of the most precise
//! form wins): a day (`9 October 2022`, `9th of October, 2022`, `October 9, 2022`,
//! `2022-10-09`), a month (`October 2022`, `Oct 2022`), a year after "in", "during" or "of"
//! (`in 2022`). Relative expressions ("last week") are not recognised yet.

use mnemon_storage::Timestamp;

/// A period of valid time, `[from, until)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    /// Its first instant.
    pub from: Timestamp,
    /// The first instant after it.
    pub until: Timestamp,
}

impl Period {
    /// Whether `t` lies in the period.
    pub fn contains(&self, t: Timestamp) -> bool {
        self.from <= t && t < self.until
    }
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// The month a word names (its full name, its first three letters, or "sept"), from 1.
fn month(word: &str) -> Option<u32> {
    let i = MONTHS
        .iter()
        .position(|m| *m == word || (word.len() == 3 && m.starts_with(word)))
        .or_else(|| (word == "sept").then_some(8))?;
    u32::try_from(i + 1).ok()
}

/// A day of the month: `9`, `09`, `9th`, `1st`, `2nd`, `3rd`.
fn day(word: &str) -> Option<u32> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !(suffix.is_empty() || ["st", "nd", "rd", "th"].contains(&suffix)) || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn year(word: &str) -> Option<i32> {
    (word.len() == 4).then(|| word.parse().ok()).flatten().filter(|y| (1900..=2200).contains(y))
}

fn date(y: i32, m: u32, d: u32) -> Option<Timestamp> {
    Timestamp::parse(&format!("{y:04}-{m:02}-{d:02}")).ok()
}

fn day_period(y: i32, m: u32, d: u32) -> Option<Period> {
    let from = date(y, m, d)?;
    Some(Period { from, until: from.plus_days(1) })
}

fn month_period(y: i32, m: u32) -> Option<Period> {
    let from = date(y, m, 1)?;
    let until = if m == 12 { date(y + 1, 1, 1)? } else { date(y, m + 1, 1)? };
    Some(Period { from, until })
}

/// The period a query names, if any.
pub fn named_period(query: &str) -> Option<Period> {
    let lower = query.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let at = |i: usize| words.get(i).copied().unwrap_or("");
    // A day: "9 october 2022", "9th of october 2022", "october 9 2022", "2022 10 09" (ISO).
    for i in 0..words.len() {
        let (w, of) = (at(i), usize::from(at(i + 1) == "of"));
        if let (Some(d), Some(m), Some(y)) = (day(w), month(at(i + 1 + of)), year(at(i + 2 + of))) {
            return day_period(y, m, d);
        }
        if let (Some(m), Some(d), Some(y)) = (month(w), day(at(i + 1)), year(at(i + 2))) {
            return day_period(y, m, d);
        }
        if let (Some(y), Ok(m), Ok(d)) = (year(w), at(i + 1).parse::<u32>(), at(i + 2).parse::<u32>())
            && at(i + 1).len() == 2
            && at(i + 2).len() == 2
            && lower.contains(&format!("{w}-{}-{}", at(i + 1), at(i + 2)))
        {
            return day_period(y, m, d);
        }
    }
    // A month: "october 2022".
    for i in 0..words.len() {
        if let (Some(m), Some(y)) = (month(at(i)), year(at(i + 1))) {
            return month_period(y, m);
        }
    }
    // A year: "in 2022", "during 2022", "of 2022".
    for i in 0..words.len() {
        if ["in", "during", "of"].contains(&at(i))
            && let Some(y) = year(at(i + 1))
        {
            let from = date(y, 1, 1)?;
            return Some(Period { from, until: date(y + 1, 1, 1)? });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn period(q: &str) -> Option<(String, String)> {
        named_period(q).map(|p| (p.from.to_string()[..10].to_string(), p.until.to_string()[..10].to_string()))
    }

    fn p(a: &str, b: &str) -> Option<(String, String)> {
        Some((a.to_string(), b.to_string()))
    }

    #[test]
    fn days_months_and_years() {
        assert_eq!(period("What dish did Nate make on 9 November, 2022?"), p("2022-11-09", "2022-11-10"));
        assert_eq!(period("What movie did Nate watch on October 6, 2022?"), p("2022-10-06", "2022-10-07"));
        assert_eq!(period("on the 9th of October 2022"), p("2022-10-09", "2022-10-10"));
        assert_eq!(period("deployed 2024-02-29 at noon"), p("2024-02-29", "2024-03-01"));
        assert_eq!(period("What did Joanna share in August 2022?"), p("2022-08-01", "2022-09-01"));
        assert_eq!(period("plans for December 2022"), p("2022-12-01", "2023-01-01"));
        assert_eq!(period("Sept 2023 retro"), p("2023-09-01", "2023-10-01"));
        assert_eq!(period("What happened in 2021?"), p("2021-01-01", "2022-01-01"));
    }

    #[test]
    fn no_period() {
        for q in [
            "When did Caroline go to the LGBTQ support group?",
            "May I ask about the 2022 budget?",
            "31 February 2022",
            "retry 3 times within 2000 ms",
            "port 8080 on 10.0.0.1",
        ] {
            assert_eq!(named_period(q), None, "{q}");
        }
    }
}
