//! `/metrics` in Prometheus' text format, by the `prometheus-client` crate: requests by
//! method, route (the route's template, so no namespace or id appears) and status; a latency
//! histogram per route; the operations running and the queue's capacity; and the database's
//! group commits: jobs per commit and commit times (fsync included for durable commits).

use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS: [f64; 12] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Request {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Route {
    route: String,
}

/// Makes the latency histograms.
#[derive(Clone, Debug)]
struct Latency;

impl MetricConstructor<Histogram> for Latency {
    fn new_metric(&self) -> Histogram {
        Histogram::new(BUCKETS)
    }
}

/// What the server has answered, and the database's commits.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<Request, Counter>,
    latency: Family<Route, Histogram, Latency>,
    running: Gauge,
    capacity: Gauge,
}

impl Metrics {
    /// Metrics of a server over `db`.
    pub fn new(db: mnemon::Db) -> Metrics {
        let mut registry = Registry::default();
        let requests = Family::<Request, Counter>::default();
        registry.register(
            "mnemon_http_requests",
            "Requests answered, by method, route and status",
            requests.clone(),
        );
        let latency = Family::new_with_constructor(Latency);
        registry.register(
            "mnemon_http_request_seconds",
            "Time from a request's arrival to its answer, by route",
            latency.clone(),
        );
        let running = Gauge::default();
        registry.register(
            "mnemon_operations_running",
            "Operations running now (the queue's depth)",
            running.clone(),
        );
        let capacity = Gauge::default();
        registry.register(
            "mnemon_operations_capacity",
            "The most operations running at once (--queue)",
            capacity.clone(),
        );
        registry.register_collector(Box::new(Commits(db)));
        Metrics { registry, requests, latency, running, capacity }
    }

    /// Count a request of `method` on `route` answered `status` after `took`.
    pub fn observe(&self, method: &str, route: &str, status: u16, took: Duration) {
        let request = Request { method: method.to_string(), route: route.to_string(), status };
        self.requests.get_or_create(&request).inc();
        self.latency.get_or_create(&Route { route: route.to_string() }).observe(took.as_secs_f64());
    }

    /// The exposition, with the operations running now and the queue's capacity.
    pub fn render(&self, running: usize, capacity: usize) -> String {
        self.running.set(i64::try_from(running).unwrap_or(i64::MAX));
        self.capacity.set(i64::try_from(capacity).unwrap_or(i64::MAX));
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry) {
            tracing::warn!("/metrics could not be written: {e}");
        }
        out
    }
}

/// The group commits of the database, read at each scrape.
#[derive(Debug)]
struct Commits(mnemon::Db);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Durable {
    durable: &'static str,
}

impl Collector for Commits {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = self.0.store().commit_stats();
        let mut jobs = encoder.encode_descriptor(
            "mnemon_commit_jobs",
            "Write calls per group commit",
            None,
            MetricType::Histogram,
        )?;
        jobs.encode_histogram::<NoLabelSet>(stats.jobs.sum, stats.jobs.count, &stats.jobs.buckets, None)?;
        let mut times = encoder.encode_descriptor(
            "mnemon_commit_seconds",
            "Time to commit a group, the fsync included when durable",
            None,
            MetricType::Histogram,
        )?;
        histogram(&mut times, &stats.durable_seconds, &Durable { durable: "true" })?;
        histogram(&mut times, &stats.eventual_seconds, &Durable { durable: "false" })
    }
}

/// Encode histogram `h` with `labels`.
fn histogram(
    encoder: &mut prometheus_client::encoding::MetricEncoder<'_>,
    h: &mnemon::CommitHistogram,
    labels: &impl EncodeLabelSet,
) -> Result<(), std::fmt::Error> {
    // The encoder adds the `+Inf` bucket: every value.
    encoder.encode_family(labels)?.encode_histogram::<NoLabelSet>(h.sum, h.count, &h.buckets, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_histograms_render_in_the_text_format() {
        let dir = tempfile::tempdir().unwrap();
        let db = mnemon::Db::create(dir.path().join("m.redb")).unwrap();
        let one =
            mnemon::ops::Remember { kind: "gotcha".into(), text: Some("one".into()), ..Default::default() };
        mnemon::ops::Session::new(db.clone(), "a").unwrap().call(one).unwrap();
        let m = Metrics::new(db);
        m.observe("GET", "/v1/ns/{ns}/records", 200, Duration::from_micros(700));
        m.observe("GET", "/v1/ns/{ns}/records", 200, Duration::from_millis(30));
        m.observe("POST", "/v1/ns/{ns}/memories", 503, Duration::from_secs(9));
        m.observe("GET", "a\"b", 404, Duration::ZERO);
        let text = m.render(3, 256);
        let has = |line: &str| assert!(text.contains(line), "{line:?} missing from:\n{text}");
        has("mnemon_http_requests_total{method=\"GET\",route=\"/v1/ns/{ns}/records\",status=\"200\"} 2\n");
        has("status=\"503\"} 1\n");
        has("route=\"a\\\"b\"");
        has("mnemon_http_request_seconds_bucket{route=\"/v1/ns/{ns}/records\",le=\"0.0005\"} 0\n");
        has("mnemon_http_request_seconds_bucket{route=\"/v1/ns/{ns}/records\",le=\"0.001\"} 1\n");
        has("mnemon_http_request_seconds_bucket{route=\"/v1/ns/{ns}/records\",le=\"0.05\"} 2\n");
        has("mnemon_http_request_seconds_bucket{route=\"/v1/ns/{ns}/memories\",le=\"5\"} 0\n");
        has("mnemon_http_request_seconds_bucket{route=\"/v1/ns/{ns}/memories\",le=\"+Inf\"} 1\n");
        has("mnemon_operations_running 3\n");
        has("mnemon_operations_capacity 256\n");
        // The writes above (the database's creation, the memory): durable commits of one job.
        let value = |series: &str| -> u64 {
            let line =
                text.lines().find(|l| l.starts_with(series)).unwrap_or_else(|| panic!("{series}: {text}"));
            line.rsplit(' ').next().unwrap().parse().unwrap()
        };
        has("# TYPE mnemon_commit_jobs histogram\n");
        has("# TYPE mnemon_commit_seconds histogram\n");
        let commits = value("mnemon_commit_jobs_count ");
        assert!(commits >= 1, "{text}");
        assert_eq!(value("mnemon_commit_jobs_bucket{le=\"1\"} "), commits);
        assert_eq!(value("mnemon_commit_seconds_count{durable=\"true\"} "), commits);
        assert_eq!(value("mnemon_commit_seconds_count{durable=\"false\"} "), 0);
        assert_eq!(value("mnemon_commit_seconds_bucket{durable=\"true\",le=\"+Inf\"} "), commits);
    }
}
