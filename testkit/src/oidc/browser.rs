//! A person's browser at the provider, as an [`AuthorizationDriver`]: the
//! product's own loopback [`BrowserDriver`] waits for the redirect while this
//! follows the authorization URL through the provider's login and consent
//! interactions (carrying its cookies, as a browser does) and finally visits
//! the redirect URI on that loopback listener.

use std::collections::BTreeMap;
use std::time::Duration;

use mcpvisor::auth::{AuthError, AuthorizationDriver, BrowserDriver, DriverFuture};
use reqwest::Url;

/// Redirects followed before giving up (authorize, login, resume, consent, resume, back).
const MAX_HOPS: usize = 12;

/// See the module docs; one login each (the loopback listener serves one redirect).
pub struct ProviderBrowser {
    loopback: BrowserDriver,
    http: reqwest::Client,
}

impl ProviderBrowser {
    pub async fn new() -> ProviderBrowser {
        let loopback = BrowserDriver::bind(0, Duration::from_secs(60))
            .await
            .expect("a loopback listener")
            .without_browser();
        ProviderBrowser {
            loopback,
            http: browser_client(),
        }
    }
}

impl AuthorizationDriver for ProviderBrowser {
    fn redirect_uri(&self) -> Url {
        self.loopback.redirect_uri()
    }

    fn authorize(&self, url: Url) -> DriverFuture<'_> {
        Box::pin(async move {
            let waiting = self.loopback.authorize(url.clone());
            tokio::pin!(waiting);
            let walking = async {
                follow(&self.http, url, &self.loopback.redirect_uri())
                    .await
                    .map_err(|e| AuthError::Authorization(format!("browser: {e}")))
            };
            tokio::pin!(walking);
            // A walk that fails ends the login at once; one that succeeds leaves
            // the redirect with the loopback listener.
            tokio::select! {
                back = &mut waiting => back,
                Err(e) = &mut walking => Err(e),
            }
        })
    }
}

/// Follows `url` through the provider's pages (carrying their cookies) until
/// it redirects to `back`, then visits that, as a person's browser would.
pub async fn follow(http: &reqwest::Client, url: Url, back: &Url) -> Result<(), String> {
    let mut cookies: BTreeMap<String, String> = BTreeMap::new();
    let mut at = url;
    for _ in 0..MAX_HOPS {
        let cookie = cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        let mut request = http.get(at.clone());
        if !cookie.is_empty() {
            request = request.header(reqwest::header::COOKIE, cookie);
        }
        let resp = request.send().await.map_err(|e| e.to_string())?;
        for set in resp.headers().get_all(reqwest::header::SET_COOKIE) {
            let pair = set.to_str().unwrap_or_default().split(';').next();
            if let Some((name, value)) = pair.and_then(|p| p.split_once('=')) {
                cookies.insert(name.trim().to_string(), value.trim().to_string());
            }
        }
        let status = resp.status();
        let Some(location) = resp.headers().get(reqwest::header::LOCATION) else {
            let page = resp.text().await.unwrap_or_default();
            return Err(format!("{status} without a redirect: {page}"));
        };
        let next = at
            .join(location.to_str().unwrap_or_default())
            .map_err(|e| e.to_string())?;
        if next.origin() == back.origin() && next.path() == back.path() {
            let resp = http.get(next).send().await.map_err(|e| e.to_string())?;
            return match resp.status().is_success() {
                true => Ok(()),
                false => Err(format!("the loopback answered {}", resp.status())),
            };
        }
        at = next;
    }
    Err(format!("more than {MAX_HOPS} redirects"))
}

/// A client that follows no redirect by itself, as [`follow`] needs.
pub fn browser_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(15))
        .build()
        .unwrap()
}
