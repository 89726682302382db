//! For tests (here and in the CLI's): a real nats-server with JetStream on a loopback port,
//! killed (SIGKILL) when dropped. Not part of the API.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs, reason = "test support")]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The nats-server binary: `MNEMON_NATS_SERVER`, else where scripts/fetch-nats-server.sh puts it.
pub fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("MNEMON_NATS_SERVER") {
        return PathBuf::from(p);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("."));
    let dir =
        std::env::var_os("MNEMON_NATS_DIR").map(PathBuf::from).unwrap_or_else(|| cache.join("mnemon/bin"));
    dir.join("nats-server")
}

/// What every test server's configuration holds: JetStream, its store in `dir`, room for a
/// record as large as a record may be.
fn common(dir: &std::path::Path) -> String {
    format!("max_payload: 8MB\njetstream {{ store_dir: {:?} }}\n", dir.join("js").display().to_string())
}

/// How many times a test server is started on new ports before a test gives up.
const ATTEMPTS: usize = 3;

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running server.
pub struct Nats {
    child: Option<Child>,
    pub port: u16,
    pub config: PathBuf,
    dir: PathBuf,
}

/// A new, empty folder for a server's files.
fn new_dir() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("mnemon-nats-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Nats {
    /// One server with JetStream, its store in a new temporary folder.
    pub fn start() -> Nats {
        // A port found free may be taken by another test before the server binds it: the
        // server then exits, and is started again on another port.
        for _ in 0..ATTEMPTS {
            let dir = new_dir();
            let port = free_port();
            let config = dir.join("nats.conf");
            std::fs::write(&config, format!("listen: 127.0.0.1:{port}\n{}", common(&dir))).unwrap();
            let mut nats = Nats { child: None, port, config, dir };
            if nats.run() {
                return nats;
            }
        }
        panic!("nats-server did not start in {ATTEMPTS} attempts (its log is nats.log in its folder)");
    }

    /// Three servers forming one JetStream cluster (streams of three replicas survive the loss
    /// of one), all on loopback.
    pub fn cluster() -> Vec<Nats> {
        for _ in 0..ATTEMPTS {
            let mut servers = Nats::cluster_once();
            if servers.iter_mut().all(Nats::run) {
                return servers;
            }
        }
        panic!(
            "a nats-server cluster did not start in {ATTEMPTS} attempts (logs: nats.log in their folders)"
        );
    }

    /// Three servers' configurations, on ports found free (not started).
    fn cluster_once() -> Vec<Nats> {
        let ports: Vec<(u16, u16)> = (0..3).map(|_| (free_port(), free_port())).collect();
        let out: Vec<Nats> = ports
            .iter()
            .enumerate()
            .map(|(i, &(port, route))| {
                let dir = new_dir();
                let routes: Vec<String> = ports
                    .iter()
                    .filter(|&&(_, r)| r != route)
                    .map(|(_, r)| format!("nats-route://127.0.0.1:{r}"))
                    .collect();
                let config = dir.join("nats.conf");
                std::fs::write(
                    &config,
                    format!(
                        "listen: 127.0.0.1:{port}\nserver_name: n{i}\n{}cluster {{ name: mnemon, listen: 127.0.0.1:{route}, routes: [{}] }}\n",
                        common(&dir),
                        routes.join(", ")
                    ),
                )
                .unwrap();
                Nats { child: None, port, config, dir }
            })
            .collect();
        out
    }

    /// The URLs of `servers`, joined by commas (what a node is given).
    pub fn urls(servers: &[Nats]) -> String {
        servers.iter().map(Nats::url).collect::<Vec<_>>().join(",")
    }

    /// Start the server (again) and wait until it listens: `false` if it exited first (its
    /// port taken), a panic if it neither listens nor exits within a minute.
    fn run(&mut self) -> bool {
        let bin = binary();
        assert!(
            bin.exists(),
            "{} not found: run scripts/fetch-nats-server.sh (or set MNEMON_NATS_SERVER)",
            bin.display()
        );
        let log = std::fs::File::create(self.dir.join("nats.log")).unwrap();
        let child =
            Command::new(bin).arg("-c").arg(&self.config).stdout(Stdio::null()).stderr(log).spawn().unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if self.child.as_mut().is_some_and(|c| c.try_wait().ok().flatten().is_some()) {
                self.child = None;
                return false;
            }
            assert!(Instant::now() < deadline, "nats-server did not listen on {}", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// SIGKILL it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Start it again on the same port and store.
    pub fn restart(&mut self) {
        self.kill();
        assert!(self.run(), "nats-server did not start again on {} (see nats.log in its folder)", self.port);
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
