//! Who visits the authorization URL: a browser with a loopback listener, or a
//! headless driver for tests and unattended hosts.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::error::AuthError;
use crate::http::TIMEOUT;

/// A future returned by a driver.
pub type DriverFuture<'a> = Pin<Box<dyn Future<Output = Result<Url, AuthError>> + Send + 'a>>;

/// Visits an authorization URL and brings back the redirect (with `code` and `state`).
pub trait AuthorizationDriver: Send + Sync {
    /// Where the authorization server sends the user back; fixed before `authorize`.
    fn redirect_uri(&self) -> Url;
    /// Visits `url` and returns the URL the authorization server redirected to.
    fn authorize(&self, url: Url) -> DriverFuture<'_>;
}

/// Follows the authorization URL without a user: GET it without following
/// redirects and read `Location`. For servers that authorize without
/// interaction (tests, unattended hosts with a pre-approved client); one that
/// sends the browser to its own sign-in or consent page instead of back to the
/// redirect URI is an [`AuthError::Authorization`] that says a person is needed.
pub struct HeadlessDriver {
    client: reqwest::Client,
    redirect: Url,
}

impl HeadlessDriver {
    /// A driver whose redirect URI is a loopback address nothing needs to listen on.
    pub fn new() -> Result<HeadlessDriver, AuthError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TIMEOUT)
            .build()
            .map_err(|e| AuthError::Config(e.without_url().to_string()))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(33418);
        let redirect = Url::parse(&format!("http://127.0.0.1:{port}/callback"))
            .map_err(|e| AuthError::Config(e.to_string()))?;
        Ok(HeadlessDriver { client, redirect })
    }
}

impl AuthorizationDriver for HeadlessDriver {
    fn redirect_uri(&self) -> Url {
        self.redirect.clone()
    }

    fn authorize(&self, url: Url) -> DriverFuture<'_> {
        Box::pin(async move {
            let resp = self
                .client
                .get(url.clone())
                .send()
                .await
                .map_err(|e| AuthError::Authorization(e.without_url().to_string()))?;
            let location = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| {
                    AuthError::Authorization(format!(
                        "no redirect from the authorization endpoint (HTTP {})",
                        resp.status()
                    ))
                })?;
            // A relative `Location` is relative to the page that sent it.
            let target = url
                .join(location)
                .map_err(|e| AuthError::Authorization(format!("redirect is not a URL: {e}")))?;
            if target.origin() != self.redirect.origin() || target.path() != self.redirect.path() {
                // The server's own page (a sign-in, a consent): only its origin is
                // shown, since its path and query may name the pending session.
                return Err(AuthError::Authorization(format!(
                    "the authorization server sent the browser to its own page at {} instead of back to {}: it needs a person to sign in, which a headless login cannot do",
                    target.origin().ascii_serialization(),
                    self.redirect
                )));
            }
            Ok(target)
        })
    }
}

/// Time one connection to the loopback listener has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest request head read from the loopback listener.
const MAX_HEAD: usize = 16 * 1024;
/// Connections to the loopback listener served at once; others wait to be accepted.
const MAX_CONNECTIONS: usize = 16;

/// Opens the user's browser (where possible; the URL is always printed) and
/// waits for the redirect on a loopback listener on 127.0.0.1.
///
/// The authorization URL is printed to the terminal (stderr) for the user to
/// open, since without it there is no login; its query holds the `state` and the
/// PKCE challenge (never the verifier). It is never logged through `tracing`.
///
/// Each connection to the listener is read on its own, with a time limit for
/// its request head: one that connects and sends nothing, or sends slowly,
/// cannot hold up the real redirect. Only the answer to this login ends the
/// wait: a request to another path, or a callback without a `code` or `error`
/// or without this login's `state`, is refused and the listener keeps waiting;
/// once the answer came, the listener is closed.
pub struct BrowserDriver {
    listener: parking_lot::Mutex<Option<TcpListener>>,
    redirect: Url,
    timeout: Duration,
    open_browser: bool,
}

impl BrowserDriver {
    /// Listens on `port` (0: a random free port).
    pub async fn bind(port: u16, timeout: Duration) -> Result<BrowserDriver, AuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| AuthError::Config(format!("loopback listener: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| AuthError::Config(e.to_string()))?
            .port();
        let redirect = Url::parse(&format!("http://127.0.0.1:{port}/callback"))
            .map_err(|e| AuthError::Config(e.to_string()))?;
        Ok(BrowserDriver {
            listener: parking_lot::Mutex::new(Some(listener)),
            redirect,
            timeout,
            open_browser: true,
        })
    }

    /// Only prints the URL, without starting a browser (a remote shell, tests).
    pub fn without_browser(mut self) -> BrowserDriver {
        self.open_browser = false;
        self
    }
}

impl AuthorizationDriver for BrowserDriver {
    fn redirect_uri(&self) -> Url {
        self.redirect.clone()
    }

    fn authorize(&self, url: Url) -> DriverFuture<'_> {
        Box::pin(async move {
            let listener = self.listener.lock().take().ok_or_else(|| {
                AuthError::Authorization("the loopback listener was already used".into())
            })?;
            let state = url
                .query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned());
            eprintln!("Open this URL to authorize:\n\n  {url}\n");
            if self.open_browser {
                let _ = open_browser(url.as_str());
            }
            let expected = Expected {
                redirect: self.redirect.clone(),
                state,
            };
            tokio::time::timeout(self.timeout, wait_for_redirect(listener, &expected))
                .await
                .map_err(|_| {
                    AuthError::Authorization(format!("no redirect within {:?}", self.timeout))
                })?
        })
    }
}

/// What the one answer to this login looks like.
#[derive(Clone)]
struct Expected {
    redirect: Url,
    /// The `state` of the authorization URL: a callback without it is someone
    /// else's (a stale tab, another site) and must neither end nor spoil the login.
    state: Option<String>,
}

impl Expected {
    /// True for the authorization server's answer to this login: one `state`,
    /// ours, and a `code` or an `error`.
    fn is_answer(&self, back: &Url) -> bool {
        let states: Vec<String> = back
            .query_pairs()
            .filter(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            .collect();
        let ours = match &self.state {
            Some(state) => states.len() == 1 && &states[0] == state,
            None => true,
        };
        ours && back.query_pairs().any(|(k, _)| k == "code" || k == "error")
    }
}

/// Accepts connections until one brings the answer to this login.
async fn wait_for_redirect(listener: TcpListener, expected: &Expected) -> Result<Url, AuthError> {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept(), if connections.len() < MAX_CONNECTIONS => {
                let (stream, _) =
                    accepted.map_err(|e| AuthError::Authorization(e.to_string()))?;
                connections.spawn(serve_connection(stream, expected.clone()));
            }
            Some(done) = connections.join_next() => {
                if let Ok(Some(back)) = done {
                    return Ok(back);
                }
            }
        }
    }
}

/// Reads one request head (bounded in size and time) and answers it; the
/// redirect URL when it is the answer to this login.
async fn serve_connection(mut stream: TcpStream, expected: Expected) -> Option<Url> {
    let redirect = &expected.redirect;
    let head = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream))
        .await
        .ok()?;
    let Some(head) = head else {
        let _ = stream
            .write_all(b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await;
        return None;
    };
    let mut request_line = head.split(|&b| b == b'\r').next()?.split(|&b| b == b' ');
    let (method, target) = (request_line.next()?, request_line.next()?);
    let target = std::str::from_utf8(target).ok()?;
    let path = target.split('?').next().unwrap_or("");
    if method != b"GET" || path != redirect.path() {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await;
        return None;
    }
    let back = redirect.join(target).ok()?;
    if !expected.is_answer(&back) {
        let page = "<html><body>This is not the answer to the login in progress.</body></html>";
        let reply = format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = stream.write_all(reply.as_bytes()).await;
        return None;
    }
    let page = "<html><body>Authorization complete. You can close this window.</body></html>";
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
        page.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
    Some(back)
}

/// The request head up to its blank line; `None` when it exceeds [`MAX_HEAD`]
/// or the connection ends first.
async fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            head.truncate(end);
            return Some(head);
        }
        if head.len() > MAX_HEAD {
            return None;
        }
    }
}

/// Opens `url` in the person's browser (`xdg-open`, else `open`), without a
/// shell. Best effort: false means no opener started, and the person opens
/// the printed URL themselves.
pub fn open_browser(url: &str) -> bool {
    for opener in ["xdg-open", "open"] {
        let started = std::process::Command::new(opener)
            .arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Ok(mut child) = started {
            // Reaped when it exits, so a long-running host keeps no zombies.
            std::thread::spawn(move || {
                let _ = child.wait();
            });
            return true;
        }
    }
    false
}
