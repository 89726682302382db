//! A small HTTP/1.1 client over one keep-alive connection, for generating load: a request is
//! one `write` of its head and body, a response is read with `Content-Length` or chunked
//! framing. The load generator shares the machine with the server it measures; a blocking
//! client with its own runtime thread per connection (reqwest's) cost about a quarter of the
//! two cores, which the server then did not have.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One connection to `addr` (`host:port`), opened on first use and again after an error or a
/// `Connection: close`.
pub struct Conn {
    addr: String,
    stream: Option<BufReader<TcpStream>>,
    head: Vec<u8>,
}

/// Where `url` (`http://host:port/prefix`) points: `host:port` and the path prefix.
pub fn split_url(url: &str) -> (&str, &str) {
    let rest = url.trim_start_matches("http://");
    match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    }
}

/// An answer: its status and body.
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Conn {
    /// A connection to `addr` (`host:port`).
    pub fn new(addr: &str) -> Conn {
        Conn { addr: addr.to_string(), stream: None, head: Vec::with_capacity(512) }
    }

    /// `method path` with a bearer `token` if given and a JSON `body` if given. An I/O error
    /// drops the connection (the next call opens another).
    pub fn call(
        &mut self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&[u8]>,
    ) -> std::io::Result<Answer> {
        self.head.clear();
        write!(self.head, "{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.addr)?;
        if let Some(t) = token {
            write!(self.head, "Authorization: Bearer {t}\r\n")?;
        }
        if let Some(b) = body {
            write!(self.head, "Content-Type: application/json\r\nContent-Length: {}\r\n", b.len())?;
        }
        self.head.extend_from_slice(b"\r\n");
        if let Some(b) = body {
            self.head.extend_from_slice(b);
        }
        let r = self.exchange();
        if r.is_err() {
            self.stream = None;
        }
        r
    }

    /// Send the request in `head` (connecting first if there is no connection) and read the
    /// answer.
    fn exchange(&mut self) -> std::io::Result<Answer> {
        if self.stream.is_none() {
            let s = TcpStream::connect(&self.addr)?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(Duration::from_secs(60)))?;
            self.stream = Some(BufReader::with_capacity(64 * 1024, s));
        }
        let Some(stream) = self.stream.as_mut() else { return Err(std::io::ErrorKind::NotConnected.into()) };
        stream.get_mut().write_all(&self.head)?;
        let (answer, close) = read_response(stream)?;
        if close {
            self.stream = None;
        }
        Ok(answer)
    }
}

fn bad(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

/// Read one response: its status and body, and whether the server closes the connection.
fn read_response(r: &mut BufReader<TcpStream>) -> std::io::Result<(Answer, bool)> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let status: u16 =
        line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| bad("no status line"))?;
    let (mut length, mut chunked, mut close) = (None, false, false);
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let Some((name, value)) = l.split_once(':') else { return Err(bad("a header without a colon")) };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| bad("a bad Content-Length"))?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            close = value.eq_ignore_ascii_case("close");
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim_end().split(';').next().unwrap_or(""), 16)
                .map_err(|_| bad("a bad chunk size"))?;
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            line.clear();
            r.read_line(&mut line)?; // the chunk's CRLF, or the end's
            if size == 0 {
                break;
            }
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        r.read_exact(&mut body)?;
    } else {
        r.read_to_end(&mut body)?;
        close = true;
    }
    Ok((Answer { status, body }, close))
}
