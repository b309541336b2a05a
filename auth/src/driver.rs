//! Who visits the authorization URL: a browser with a loopback listener, or a
//! headless driver for tests and unattended hosts.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::error::AuthError;

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
/// interaction (tests, unattended hosts with a pre-approved client).
pub struct HeadlessDriver {
    client: reqwest::Client,
    redirect: Url,
}

impl HeadlessDriver {
    /// A driver whose redirect URI is a loopback address nothing needs to listen on.
    pub fn new() -> Result<HeadlessDriver, AuthError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(15))
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
                .get(url)
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
            self.redirect
                .join(location)
                .map_err(|e| AuthError::Authorization(format!("redirect is not a URL: {e}")))
        })
    }
}

/// Opens the user's browser (where possible; the URL is always printed) and
/// waits for the redirect on a loopback listener on 127.0.0.1.
pub struct BrowserDriver {
    listener: parking_lot::Mutex<Option<TcpListener>>,
    redirect: Url,
    timeout: Duration,
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
        })
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
            eprintln!("Open this URL to authorize:\n\n  {url}\n");
            open_browser(url.as_str());
            let wait = async {
                loop {
                    let (mut stream, _) = listener
                        .accept()
                        .await
                        .map_err(|e| AuthError::Authorization(e.to_string()))?;
                    let mut buf = vec![0u8; 8192];
                    let n = stream.read(&mut buf).await.unwrap_or(0);
                    let request = String::from_utf8_lossy(&buf[..n]);
                    let target = request.split_whitespace().nth(1).unwrap_or("");
                    if !target.starts_with("/callback") {
                        let _ = stream
                            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                            .await;
                        continue;
                    }
                    let page = "<html><body>Authorization complete. You can close this window.</body></html>";
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                        page.len()
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                    return self
                        .redirect
                        .join(target)
                        .map_err(|e| AuthError::Authorization(e.to_string()));
                }
            };
            tokio::time::timeout(self.timeout, wait)
                .await
                .map_err(|_| {
                    AuthError::Authorization(format!("no redirect within {:?}", self.timeout))
                })?
        })
    }
}

/// Best effort: a missing opener only means the user pastes the printed URL.
fn open_browser(url: &str) {
    for opener in ["xdg-open", "open"] {
        if std::process::Command::new(opener)
            .arg(url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .is_ok()
        {
            return;
        }
    }
}
