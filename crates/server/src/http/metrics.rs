//! `/metrics` in Prometheus' text format: requests by method, route (the route's template, so
//! no namespace or id appears) and status; a latency histogram per route; the operations
//! running and the queue's capacity.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS: [f64; 12] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

/// One route's latencies.
#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

/// What the server has answered.
#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    latency: Mutex<BTreeMap<String, Histogram>>,
}

impl Metrics {
    /// Count a request of `method` on `route` answered `status` after `took`.
    pub fn observe(&self, method: &str, route: &str, status: u16, took: Duration) {
        if let Ok(mut r) = self.requests.lock() {
            *r.entry((method.to_string(), route.to_string(), status)).or_default() += 1;
        }
        if let Ok(mut l) = self.latency.lock() {
            let h = l.entry(route.to_string()).or_default();
            let s = took.as_secs_f64();
            for (i, bound) in BUCKETS.iter().enumerate() {
                if s <= *bound {
                    h.counts[i] += 1;
                }
            }
            h.sum += s;
            h.count += 1;
        }
    }

    /// The exposition, with the operations running now and the queue's capacity.
    pub fn render(&self, running: usize, capacity: usize) -> String {
        let mut out = String::new();
        out.push_str("# HELP mnemon_http_requests_total Requests answered, by method, route and status.\n");
        out.push_str("# TYPE mnemon_http_requests_total counter\n");
        if let Ok(r) = self.requests.lock() {
            for ((method, route, status), n) in r.iter() {
                let _ = writeln!(
                    out,
                    "mnemon_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {n}",
                    label(method),
                    label(route)
                );
            }
        }
        out.push_str(
            "# HELP mnemon_http_request_seconds Time from a request's arrival to its answer, by route.\n",
        );
        out.push_str("# TYPE mnemon_http_request_seconds histogram\n");
        if let Ok(l) = self.latency.lock() {
            for (route, h) in l.iter() {
                let route = label(route);
                for (bound, n) in BUCKETS.iter().zip(h.counts) {
                    let _ = writeln!(
                        out,
                        "mnemon_http_request_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {n}"
                    );
                }
                let _ = writeln!(
                    out,
                    "mnemon_http_request_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}",
                    h.count
                );
                let _ = writeln!(out, "mnemon_http_request_seconds_sum{{route=\"{route}\"}} {}", h.sum);
                let _ = writeln!(out, "mnemon_http_request_seconds_count{{route=\"{route}\"}} {}", h.count);
            }
        }
        out.push_str("# HELP mnemon_operations_running Operations running now (the queue's depth).\n");
        out.push_str("# TYPE mnemon_operations_running gauge\n");
        let _ = writeln!(out, "mnemon_operations_running {running}");
        out.push_str("# HELP mnemon_operations_capacity The most operations running at once (--queue).\n");
        out.push_str("# TYPE mnemon_operations_capacity gauge\n");
        let _ = writeln!(out, "mnemon_operations_capacity {capacity}");
        out
    }
}

/// A label value escaped as the text format asks (backslash, quote, line break).
fn label(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_histograms_render_in_the_text_format() {
        let m = Metrics::default();
        m.observe("GET", "/v1/ns/{ns}/records", 200, Duration::from_micros(700));
        m.observe("GET", "/v1/ns/{ns}/records", 200, Duration::from_millis(30));
        m.observe("POST", "/v1/ns/{ns}/memories", 503, Duration::from_secs(9));
        m.observe("GET", "a\"b", 404, Duration::ZERO);
        let text = m.render(3, 256);
        assert!(
            text.contains(
                "mnemon_http_requests_total{method=\"GET\",route=\"/v1/ns/{ns}/records\",status=\"200\"} 2"
            ),
            "{text}"
        );
        assert!(text.contains("status=\"503\"} 1"), "{text}");
        assert!(text.contains("route=\"a\\\"b\""), "{text}");
        assert!(
            text.contains(
                "mnemon_http_request_seconds_bucket{route=\"/v1/ns/{ns}/records\",le=\"0.0005\"} 0"
            ),
            "{text}"
        );
        assert!(
            text.contains("mnemon_http_request_seconds_bucket{route=\"/v1/ns/{ns}/records\",le=\"0.001\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("mnemon_http_request_seconds_bucket{route=\"/v1/ns/{ns}/records\",le=\"0.05\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("mnemon_http_request_seconds_bucket{route=\"/v1/ns/{ns}/memories\",le=\"5\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("mnemon_http_request_seconds_bucket{route=\"/v1/ns/{ns}/memories\",le=\"+Inf\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("mnemon_operations_running 3\n")
                && text.contains("mnemon_operations_capacity 256\n"),
            "{text}"
        );
    }
}
