//! `mnemon-bench`: the benchmark drivers, apart from the product. Each measures one thing
//! the way a user meets it and prints a report (a table, or JSON with `--json`):
//!
//! * `ann-data`, `ann-text`, `ann`: the vector graph's recall and speed on TEXMEX files
//!   (synthetic, and real text embeddings; docs/index.md);
//! * `search`: retrieval quality and latency on a reproducible synthetic corpus, a
//!   regression check (docs/search.md);
//! * `retrieval`: retrieval quality on real conversations in the LoCoMo format;
//! * `embed`: embedding throughput of each embedder;
//! * `adds`: durable adds/s from writer threads, their texts embedded one call per writer,
//!   batched, and deferred (docs/search.md, "Embedding on write");
//! * `mcp`: the latency of each knowledge-graph tool call of `mnemon mcp` (docs/mcp.md);
//! * `serve`: a farm of agents against `mnemon serve`: throughput, latency per operation,
//!   every acknowledged write checked in the export, beside the stdio way (docs/server.md).
//!
//! Run it from the workspace: `cargo run --release -p mnemon-bench --bin mnemon-bench -- ann
//! ...`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use mnemon::embed::EmbedderSpec;

mod adds;
mod ann;
mod ann_text;
mod calls;
mod chroma;
mod cluster;
mod feed;
mod fvecs;
mod http1;
mod mcp;
mod report;
mod retrieval;
mod search;
mod serve;

use report::{Out, usage};

/// mnemon's benchmark drivers.
#[derive(Debug, Parser)]
#[command(name = "mnemon-bench", version)]
struct Cli {
    /// Machine output: one JSON document per report.
    #[arg(long, global = true)]
    json: bool,
    /// The embedder (local[:DIR], hash, http or minilm[:DIR]; see `mnemon --help`).
    #[arg(long, global = true, value_parser = parse_embedder)]
    embedder: Option<EmbedderSpec>,
    /// What to measure.
    #[command(subcommand)]
    bench: Bench,
}

fn parse_embedder(s: &str) -> Result<EmbedderSpec, String> {
    s.parse().map_err(|e: mnemon::embed::EmbedError| e.to_string())
}

/// What `embed` compares by default: every embedder this build has offline.
const DEFAULT_EMBEDDERS: &str = "hash,minilm";

/// What to measure.
#[derive(Debug, Subcommand)]
enum Bench {
    /// Recall and speed of the graph against TEXMEX files (.fvecs/.ivecs; ground truth by
    /// cosine similarity).
    Ann {
        /// The base vectors (.fvecs).
        #[arg(long)]
        base: PathBuf,
        /// The query vectors (.fvecs).
        #[arg(long)]
        queries: PathBuf,
        /// The ground truth: each query's nearest base vectors (.ivecs).
        #[arg(long)]
        gt: PathBuf,
        /// Neighbours per query (recall@k).
        #[arg(long, default_value_t = 10)]
        k: usize,
        /// Search list sizes to measure (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "16,32,64,128,256")]
        ef: Vec<usize>,
        /// Graph degree (links per node).
        #[arg(long, default_value_t = 16)]
        m: usize,
        /// Candidate list size while building.
        #[arg(long, default_value_t = 200)]
        ef_construction: usize,
        /// Queries to time (default: all).
        #[arg(long)]
        limit: Option<usize>,
        /// Graph implementations to measure: mnemon, mnemon-exact-walk (the mnemon graph
        /// walking on its exact vectors, not its codes), hnsw_rs (default: mnemon and hnsw_rs,
        /// side by side).
        #[arg(long, value_delimiter = ',', default_value = "mnemon,hnsw_rs")]
        engine: Vec<String>,
    },
    /// Retrieval quality (recall@5/10) and latency of lexical, vector and hybrid search on a
    /// reproducible synthetic corpus of engineering memories.
    Search {
        /// Records in the corpus.
        #[arg(long, default_value_t = 10_000)]
        records: usize,
        /// Queries to run.
        #[arg(long, default_value_t = 300)]
        queries: usize,
        /// The generator's seed.
        #[arg(long, default_value_t = 7)]
        seed: u64,
        /// Also run hybrid search with these lexical shares (comma-separated, in [0, 1]), to
        /// tune the fusion.
        #[arg(long, value_delimiter = ',')]
        lexical_share: Vec<f64>,
    },
    /// Retrieval quality on real conversations in the LoCoMo format (recall@1/5/10/20, MRR,
    /// nDCG@10 per question category and mode), query latency and what a question asked of
    /// another conversation returns. `--embedder` picks the embedder.
    Retrieval {
        /// The dataset: a JSON list of samples with `conversation` and `qa`.
        #[arg(long)]
        dataset: PathBuf,
        /// Search modes to measure (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "lexical,vector,hybrid")]
        mode: Vec<String>,
        /// Results scoring below this are left out (default: each mode's own floor).
        #[arg(long)]
        min_score: Option<f64>,
        /// The lexical share of hybrid scores (default: the embedder's).
        #[arg(long)]
        lexical_share: Option<f64>,
        /// At most this many questions per conversation (default all).
        #[arg(long)]
        questions: Option<usize>,
        /// Also write every question's candidates with both sides' scores as JSON lines.
        #[arg(long)]
        dump: Option<PathBuf>,
    },
    /// Embedding throughput (embeddings/s in batches, and the latency of one text) of each
    /// embedder on the search benchmark's texts; `--embedder` picks one.
    Embed {
        /// Texts to embed.
        #[arg(long, default_value_t = 2_000)]
        texts: usize,
        /// Texts per call.
        #[arg(long, default_value_t = 32)]
        batch: usize,
        /// Embedders to measure side by side (hash, minilm[:DIR], http).
        #[arg(long, value_delimiter = ',', default_value = DEFAULT_EMBEDDERS)]
        embedders: Vec<String>,
        /// Also write the texts as JSON lines `{"text": ...}` (for an outside baseline such as
        /// benches/embed_baseline.py).
        #[arg(long)]
        write_texts: Option<PathBuf>,
    },
    /// Durable adds per second from writer threads, each text embedded by the embedder
    /// (`--embedder`, default local), one call per writer, batched, and deferred, side by
    /// side.
    Adds {
        /// Writer thread counts to measure (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "1,16")]
        threads: Vec<usize>,
        /// Seconds per measurement.
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
    },
    /// The time of single in-process operation calls (add, get as of, list as of, search)
    /// on an existing file: the Rust side of crates/python/bench/overhead.py.
    Calls {
        /// The database file (opened with eventual durability: the add's fsync would hide
        /// what the call costs).
        #[arg(long)]
        db: PathBuf,
        /// The namespace.
        #[arg(long)]
        ns: String,
        /// A file of record ids, one per line, to get.
        #[arg(long)]
        ids: PathBuf,
        /// Calls of each operation.
        #[arg(long, default_value_t = 2000)]
        n: usize,
    },
    /// Latency (p50/p95/p99) of each knowledge-graph tool call of `mnemon mcp`, from request
    /// to response over stdio, at several graph sizes (entities with 5 observations each).
    Mcp {
        /// The `mnemon` executable to serve (default: the one built beside this benchmark).
        #[arg(long, value_name = "PATH")]
        mnemon: Option<PathBuf>,
        /// Graph sizes in entities (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "500,1000,2000")]
        sizes: Vec<usize>,
        /// Calls per tool and size.
        #[arg(long, default_value_t = 200)]
        samples: usize,
        /// Pause this long before each timed call (not timed), as an agent does between calls;
        /// a quiet server uses such pauses for maintenance (merging fresh texts).
        #[arg(long, default_value_t = 0)]
        think_ms: u64,
        /// Also run the same calls against this server command, side by side (for example
        /// `node ~/.cache/mnemon/reference-memory-server/node_modules/@modelcontextprotocol/server-memory/dist/index.js`,
        /// installed by scripts/fetch-reference-memory-server.sh); it gets MEMORY_FILE_PATH.
        #[arg(long)]
        reference: Option<String>,
    },
    /// The change feed's latency, from a durable write's acknowledgement to a reader, at
    /// steady write rates: in process (`Db::watch`), over Server-Sent Events from `mnemon
    /// serve`, and as MCP resource notifications from `mnemon mcp`.
    Feed {
        /// The `mnemon` executable to serve (default: the one built beside this benchmark).
        #[arg(long, value_name = "PATH")]
        mnemon: Option<PathBuf>,
        /// Writes a second (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "100,1000")]
        rates: Vec<u32>,
        /// Seconds of writes at each rate and on each path.
        #[arg(long, default_value_t = 5)]
        seconds: u64,
    },
    /// A farm of agents against `mnemon serve` on a loopback port: N threads with keep-alive
    /// connections, durable writes, searches, as-of listings and reads over many namespaces
    /// for a bounded time; then every acknowledged write looked for in the export.
    Serve {
        /// The `mnemon` executable to serve (default: the one built beside this benchmark).
        #[arg(long, value_name = "PATH")]
        mnemon: Option<PathBuf>,
        /// Concurrent agents.
        #[arg(long, default_value_t = 64)]
        agents: usize,
        /// Namespaces they spread over.
        #[arg(long, default_value_t = 16)]
        namespaces: usize,
        /// How long to run, in seconds.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Skip the side-by-side run of the same load through `mnemon mcp` stdio processes.
        #[arg(long)]
        no_stdio: bool,
        /// Serve with `--exclusive` (the file to the server alone).
        #[arg(long)]
        exclusive: bool,
        /// Kill the server with SIGKILL this many seconds into the run and start it again:
        /// every write acknowledged before or after must be in the export.
        #[arg(long, value_name = "SECONDS")]
        kill_at: Option<f64>,
        /// Also run the vector part of the load (adds with embeddings, 10-nearest queries)
        /// against a Chroma server from this virtual environment (scripts/fetch-chroma.sh).
        #[arg(long, value_name = "VENV")]
        chroma: Option<PathBuf>,
        /// Writes per write call: above 1, each write call is one batch of this many (one
        /// durable commit), as an agent with several memories to store at once would send.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10_000))]
        batch: u64,
        /// Only durable writes, no searches, listings or reads: the server's ceiling for
        /// one-write calls.
        #[arg(long)]
        writes_only: bool,
    },
    /// `mnemon serve --cluster` nodes on three nats-servers (scripts/fetch-nats-server.sh):
    /// write and search throughput with one node and with three, a lagging node's catch-up,
    /// a client's failover when its node is killed (docs/cluster.md).
    Cluster {
        /// The `mnemon` executable (default: the one built beside this benchmark).
        #[arg(long, value_name = "PATH")]
        mnemon: Option<PathBuf>,
        /// Concurrent agents.
        #[arg(long, default_value_t = 32)]
        agents: usize,
        /// Seconds per phase.
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// Partitions of the cluster.
        #[arg(long, default_value_t = 16)]
        partitions: u32,
    },
    /// Write a seeded clustered data set with its exact cosine ground truth (TEXMEX format).
    AnnData {
        /// The folder to write base.fvecs, queries.fvecs and gt.ivecs into.
        #[arg(long)]
        out: PathBuf,
        /// Base vectors.
        #[arg(long, default_value_t = 100_000)]
        n: usize,
        /// Dimensions.
        #[arg(long, default_value_t = 384)]
        dim: usize,
        /// Query vectors.
        #[arg(long, default_value_t = 1_000)]
        queries: usize,
        /// Clusters the vectors are drawn around.
        #[arg(long, default_value_t = 100)]
        clusters: usize,
        /// Neighbours per query in the ground truth.
        #[arg(long, default_value_t = 100)]
        gt_k: usize,
        /// The generator's seed.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Directions of variation inside a cluster.
        #[arg(long, default_value_t = 16)]
        latent: usize,
        /// Standard deviation of the isotropic noise.
        #[arg(long, default_value_t = 0.05)]
        noise: f32,
        /// Topics the clusters gather around (0: none).
        #[arg(long, default_value_t = 0)]
        topics: usize,
        /// Spread of a cluster along its latent directions.
        #[arg(long, default_value_t = 0.8)]
        spread: f32,
        /// Direction l of a cluster varies with scale (l + 1)^-anisotropy.
        #[arg(long, default_value_t = 0.0)]
        anisotropy: f32,
        /// Where queries come from: inside (the base's distribution) or between (between
        /// clusters, out of it).
        #[arg(long, default_value = "inside", value_parser = ["inside", "between"])]
        query_kind: String,
    },
    /// Write a data set of real text embeddings (TEXMEX format): documentation paragraphs of
    /// the crates a lock file names, from cargo's registry sources, embedded by `--embedder`
    /// (default local), with held-out queries and their exact cosine ground truth.
    AnnText {
        /// The folder to write base.fvecs, queries.fvecs, gt.ivecs and texts.txt into.
        #[arg(long)]
        out: PathBuf,
        /// Cargo's registry sources (default ~/.cargo/registry/src, or $CARGO_HOME's).
        #[arg(long)]
        sources: Option<PathBuf>,
        /// The lock file naming the crates to read (default: this workspace's).
        #[arg(long, default_value = "Cargo.lock")]
        lock: PathBuf,
        /// Base vectors.
        #[arg(long, default_value_t = 100_000)]
        n: usize,
        /// Held-out query vectors.
        #[arg(long, default_value_t = 1_000)]
        queries: usize,
        /// Neighbours per query in the ground truth.
        #[arg(long, default_value_t = 100)]
        gt_k: usize,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        // A usage error on one line (clap adds a blank line and a hint to its first).
        Err(e) => {
            let text = e.render().to_string();
            eprintln!("{}", text.lines().next().unwrap_or("invalid arguments"));
            return ExitCode::from(2);
        }
    };
    let mut out = Out::stdout(cli.json);
    let done = run(&mut out, cli.embedder.as_ref(), &cli.bench).and_then(|()| Ok(out.flush()?));
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", report::one_line(&e));
            ExitCode::from(report::exit_code(&e))
        }
    }
}

fn run(out: &mut Out, embedder: Option<&EmbedderSpec>, bench: &Bench) -> Result<()> {
    let built = || embedder.map(|e| e.build()).transpose().map_err(|e| usage(e.to_string()));
    match bench {
        Bench::Ann { base, queries, gt, k, ef, m, ef_construction, limit, engine } => {
            let engines = engine
                .iter()
                .map(|e| {
                    ann::Graph::parse(e).ok_or_else(|| {
                        usage(format!("unknown engine {e:?} (mnemon, mnemon-exact-walk, hnsw_rs)"))
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let params =
                mnemon::index::HnswParams { m: *m, ef_construction: *ef_construction, ef_search: 64 };
            ann::ann(out, base, queries, gt, *k, ef, params, *limit, &engines)
        }
        Bench::AnnData {
            out: dir,
            n,
            dim,
            queries,
            clusters,
            gt_k,
            seed,
            latent,
            noise,
            topics,
            spread,
            anisotropy,
            query_kind,
        } => {
            let shape = mnemon::index::synth::Shape {
                dim: *dim,
                clusters: *clusters,
                latent: (*latent).min(*dim),
                noise: *noise,
                topics: *topics,
                spread: *spread,
                anisotropy: *anisotropy,
            };
            let kind = if query_kind == "between" {
                mnemon::index::synth::QueryKind::Between
            } else {
                mnemon::index::synth::QueryKind::Inside
            };
            ann::ann_data(out, dir, *n, shape, *queries, kind, *gt_k, *seed)
        }
        Bench::AnnText { out: dir, sources, lock, n, queries, gt_k } => {
            let spec = match embedder {
                Some(e) => e.clone(),
                None => "local".parse().map_err(|e: mnemon::embed::EmbedError| usage(e.to_string()))?,
            };
            let built = spec.build().map_err(|e| usage(e.to_string()))?;
            let sources = match sources {
                Some(s) => s.clone(),
                None => std::env::var_os("CARGO_HOME")
                    .map(PathBuf::from)
                    .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
                    .map(|c| c.join("registry").join("src"))
                    .ok_or_else(|| usage("no --sources, and neither CARGO_HOME nor HOME is set"))?,
            };
            ann_text::ann_text(out, built.as_ref(), dir, &sources, lock, *n, *queries, *gt_k)
        }
        Bench::Calls { db, ns, ids, n } => calls::run(out, db, ns, ids, *n),
        Bench::Adds { threads, seconds } => {
            if threads.contains(&0) || !seconds.is_finite() || *seconds <= 0.0 {
                return Err(usage("--threads and --seconds must be above 0"));
            }
            let spec = match embedder {
                Some(e) => e.clone(),
                None => "local".parse().map_err(|e: mnemon::embed::EmbedError| usage(e.to_string()))?,
            };
            adds::run(out, spec.build().map_err(|e| usage(e.to_string()))?, threads, *seconds)
        }
        Bench::Feed { mnemon, rates, seconds } => {
            if rates.contains(&0) || *seconds == 0 {
                return Err(usage("--rates and --seconds must be at least 1"));
            }
            feed::run(out, &mnemon_exe(mnemon.as_ref())?, rates, *seconds)
        }
        Bench::Mcp { mnemon, sizes, samples, think_ms, reference } => mcp::run(
            out,
            mnemon.as_deref(),
            sizes,
            *samples,
            std::time::Duration::from_millis(*think_ms),
            reference.as_deref(),
        ),
        Bench::Serve {
            mnemon,
            agents,
            namespaces,
            seconds,
            no_stdio,
            exclusive,
            kill_at,
            chroma,
            batch,
            writes_only,
        } => {
            let exe = mnemon_exe(mnemon.as_ref())?;
            if *agents == 0 || *namespaces == 0 || *seconds == 0 {
                return Err(usage("--agents, --namespaces and --seconds must be at least 1"));
            }
            let kill_at = match kill_at {
                Some(k) if !(k.is_finite() && *k > 0.0 && *k < *seconds as f64) => {
                    return Err(usage(
                        "--kill-at must be a number of seconds within the run (0 < k < --seconds)",
                    ));
                }
                k => k.map(std::time::Duration::from_secs_f64),
            };
            let load = serve::Load {
                agents: *agents,
                namespaces: *namespaces,
                seconds: *seconds,
                stdio: !*no_stdio,
                exclusive: *exclusive,
                kill_at,
                chroma: chroma.clone(),
                batch: usize::try_from(*batch).unwrap_or(1),
                writes_only: *writes_only,
            };
            serve::run(out, &exe, &load)
        }
        Bench::Cluster { mnemon, agents, seconds, partitions } => {
            let exe = mnemon_exe(mnemon.as_ref())?;
            if *agents == 0 || *seconds == 0 || *partitions == 0 {
                return Err(usage("--agents, --seconds and --partitions must be at least 1"));
            }
            cluster::run(
                out,
                &exe,
                &cluster::Load { agents: *agents, seconds: *seconds, partitions: *partitions },
            )
        }
        Bench::Search { records, queries, seed, lexical_share } => {
            search::run(out, built()?, *records, *queries, *seed, lexical_share)
        }
        Bench::Retrieval { dataset, mode, min_score, lexical_share, questions, dump } => {
            let modes = mode
                .iter()
                .map(|m| m.parse::<mnemon::TextMode>().map_err(usage))
                .collect::<Result<Vec<_>>>()?;
            let opts = retrieval::Options {
                dataset,
                modes: &modes,
                min_score: *min_score,
                lexical_share: *lexical_share,
                limit_questions: *questions,
                dump: dump.as_deref(),
            };
            retrieval::run(out, built()?, &opts)
        }
        Bench::Embed { texts, batch, embedders, write_texts } => {
            let specs: Vec<EmbedderSpec> = match embedder {
                Some(e) => vec![e.clone()],
                None => embedders
                    .iter()
                    .map(|e| e.parse::<EmbedderSpec>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| usage(e.to_string()))?,
            };
            search::embed_speed(out, &specs, *texts, *batch, write_texts.as_deref())
        }
    }
}

/// The `mnemon` executable a bench drives: the one given, else the one built beside this
/// benchmark.
fn mnemon_exe(given: Option<&PathBuf>) -> anyhow::Result<PathBuf> {
    match given {
        Some(p) => Ok(p.clone()),
        None => mcp::beside_this().ok_or_else(|| {
            usage("no mnemon executable beside mnemon-bench: build it (cargo build --release -p mnemon-cli) or give --mnemon PATH")
        }),
    }
}
