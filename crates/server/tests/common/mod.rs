//! A real server on a loopback port, in this process, over a real database file; a real HTTP
//! client (reqwest).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use mnemon::Db;
use mnemon_server::tokens::{self, NewToken, Scope};
use mnemon_server::{Options, ServeError};
use serde_json::Value;

pub struct Server {
    pub addr: SocketAddr,
    pub db: Db,
    pub path: std::path::PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<bool, ServeError>>>,
    _dir: tempfile::TempDir,
}

impl Server {
    /// A server with the default options, changed by `configure`.
    pub fn start(configure: impl FnOnce(&mut Options)) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("served.redb");
        let db = Db::builder(&path).create(true).shared(true).open().unwrap();
        let mut options = Options::default();
        configure(&mut options);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (tell, told) = std::sync::mpsc::channel();
        let served = db.clone();
        let thread = std::thread::spawn(move || {
            let rt =
                tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                options.config.allowed_hosts.extend(mnemon_server::local_hosts(addr));
                tell.send(addr).unwrap();
                mnemon_server::serve(served, listener, options, async {
                    let _ = stopped.await;
                })
                .await
            })
        });
        let addr = told.recv_timeout(Duration::from_secs(10)).unwrap();
        Server { addr, db, path, stop: Some(stop), thread: Some(thread), _dir: dir }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A token reaching `namespaces` with `scope`.
    pub fn token(&self, namespaces: &[&str], scope: Scope) -> String {
        let name = format!("t{}", tokens::list(&self.db).unwrap().len());
        let new = NewToken {
            name,
            namespaces: namespaces.iter().map(|s| s.to_string()).collect(),
            scope,
            expires: None,
        };
        tokens::create(&self.db, new).unwrap().0
    }

    /// Signal a shutdown and wait for it: whether every request finished in time.
    pub fn stop(&mut self) -> bool {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.thread.take().unwrap().join().unwrap().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

pub fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder().timeout(Duration::from_secs(30)).build().unwrap()
}

/// Status and JSON body of a response (the body `null` if it is not JSON).
pub fn answer(r: reqwest::blocking::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A problem document's code, after checking its shape.
pub fn problem(body: &Value, status: u16) -> String {
    assert_eq!(body["status"], status, "{body}");
    assert!(body["type"].as_str().unwrap_or_default().starts_with("urn:mnemon:problem:"), "{body}");
    assert!(body["title"].is_string() && body["detail"].is_string(), "{body}");
    body["code"].as_str().unwrap_or_default().to_string()
}
