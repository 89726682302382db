//! Times a query names ("on 9 October, 2022", "in May 2023", "during 2021"), as periods of
//! valid time: a search weighs up the records that began in the period (see
//! [`crate::TextSearch`]).
//!
//! Recognised, case-insensitively, anywhere in the query (the first match of the most precise
//! form wins): a day (`9 October 2022`, `9th of October, 2022`, `October 9, 2022`,
//! `2022-10-09`), a month (`October 2022`, `Oct 2022`), a year after "in", "during" or "of"
//! (`in 2022`); and, relative to the time the search is asked as of (its valid time, else
//! now; days in UTC): `today`, `yesterday`, `N days ago` (that day), `last week` (the previous
//! calendar week, Monday to Sunday), `N weeks ago` (the calendar week N back), `last month`,
//! `last year` (the previous calendar month or year).

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

const DAY: i64 = 86_400_000_000;

/// The start (UTC) of the day `days` before the day of `now`.
fn day_start(now: Timestamp, days: i64) -> Timestamp {
    Timestamp::from_micros((now.as_micros().div_euclid(DAY) - days) * DAY)
}

/// The calendar period a relative expression names, counted back from `now`.
fn relative(words: &[&str], now: Timestamp) -> Option<Period> {
    let at = |i: usize| words.get(i).copied().unwrap_or("");
    let day_of = |back: i64| Some(Period { from: day_start(now, back), until: day_start(now, back - 1) });
    // Monday of this week: 1970-01-01 was a Thursday (three days after a Monday).
    let monday = (now.as_micros().div_euclid(DAY) + 3).rem_euclid(7);
    let week_of = |back: i64| {
        Some(Period {
            from: day_start(now, monday + 7 * back),
            until: day_start(now, monday + 7 * (back - 1)),
        })
    };
    let (y, m) = {
        let date = now.to_string();
        (date.get(..4)?.parse::<i32>().ok()?, date.get(5..7)?.parse::<u32>().ok()?)
    };
    for i in 0..words.len() {
        match (at(i), at(i + 1)) {
            ("today", _) => return day_of(0),
            ("yesterday", _) => return day_of(1),
            ("last", "week") => return week_of(1),
            ("last", "month") => {
                return if m == 1 { month_period(y - 1, 12) } else { month_period(y, m - 1) };
            }
            ("last", "year") => return Some(Period { from: date(y - 1, 1, 1)?, until: date(y, 1, 1)? }),
            (n, unit) if at(i + 2) == "ago" => {
                let n: i64 = match n {
                    "a" | "one" => 1,
                    "two" => 2,
                    "three" => 3,
                    _ => n.parse().ok().filter(|n| (1..=366).contains(n))?,
                };
                match unit {
                    "day" | "days" => return day_of(n),
                    "week" | "weeks" => return week_of(n),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    None
}

/// The period a query names, if any; relative expressions count back from `now`.
pub fn named_period(query: &str, now: Timestamp) -> Option<Period> {
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
    relative(&words, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn period(q: &str) -> Option<(String, String)> {
        period_at(q, "2026-11-27T15:00:00Z")
    }

    fn period_at(q: &str, now: &str) -> Option<(String, String)> {
        named_period(q, Timestamp::parse(now).unwrap())
            .map(|p| (p.from.to_string()[..10].to_string(), p.until.to_string()[..10].to_string()))
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
    fn relative_to_the_time_asked() {
        // 2026-11-27 is a Friday.
        assert_eq!(period("what did we decide today"), p("2026-11-27", "2026-11-28"));
        assert_eq!(period("the deploy yesterday"), p("2026-11-26", "2026-11-27"));
        assert_eq!(period("what failed 3 days ago"), p("2026-11-24", "2026-11-25"));
        assert_eq!(period("what broke last week"), p("2026-11-16", "2026-11-23"));
        assert_eq!(period("two weeks ago"), p("2026-11-09", "2026-11-16"));
        assert_eq!(period("the plan from last month"), p("2026-10-01", "2026-11-01"));
        assert_eq!(period("last year's outage"), p("2025-01-01", "2026-01-01"));
        assert_eq!(period_at("last month", "2027-01-15T00:00:00Z"), p("2026-12-01", "2027-01-01"));
        // On a Monday, last week is the seven days before it.
        assert_eq!(period_at("last week", "2026-11-23T08:00:00Z"), p("2026-11-16", "2026-11-23"));
        // An explicit date wins over a relative one.
        assert_eq!(period("last week, on 9 November 2022"), p("2022-11-09", "2022-11-10"));
    }

    #[test]
    fn no_period() {
        for q in [
            "When did Caroline go to the LGBTQ support group?",
            "May I ask about the 2022 budget?",
            "31 February 2022",
            "retry 3 times within 2000 ms",
            "port 8080 on 10.0.0.1",
            "the last weekend",
            "ago",
        ] {
            assert_eq!(period(q), None, "{q}");
        }
    }
}
