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
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(15))
            .build()
            .unwrap();
        ProviderBrowser { loopback, http }
    }

    /// Follows `url` through the provider's pages to the redirect URI, then visits it.
    async fn walk(&self, url: Url) -> Result<(), AuthError> {
        let fail = |m: String| AuthError::Authorization(format!("browser: {m}"));
        let back = self.loopback.redirect_uri();
        let mut cookies: BTreeMap<String, String> = BTreeMap::new();
        let mut at = url;
        for _ in 0..MAX_HOPS {
            let cookie = cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ");
            let mut request = self.http.get(at.clone());
            if !cookie.is_empty() {
                request = request.header(reqwest::header::COOKIE, cookie);
            }
            let resp = request.send().await.map_err(|e| fail(e.to_string()))?;
            for set in resp.headers().get_all(reqwest::header::SET_COOKIE) {
                let pair = set.to_str().unwrap_or_default().split(';').next();
                if let Some((name, value)) = pair.and_then(|p| p.split_once('=')) {
                    cookies.insert(name.trim().to_string(), value.trim().to_string());
                }
            }
            let status = resp.status();
            let Some(location) = resp.headers().get(reqwest::header::LOCATION) else {
                let page = resp.text().await.unwrap_or_default();
                return Err(fail(format!("{status} without a redirect: {page}")));
            };
            let next = at
                .join(location.to_str().unwrap_or_default())
                .map_err(|e| fail(e.to_string()))?;
            let home = next.origin() == back.origin() && next.path() == back.path();
            if home {
                let resp = self
                    .http
                    .get(next)
                    .send()
                    .await
                    .map_err(|e| fail(e.to_string()))?;
                return match resp.status().is_success() {
                    true => Ok(()),
                    false => Err(fail(format!("the loopback answered {}", resp.status()))),
                };
            }
            at = next;
        }
        Err(fail(format!("more than {MAX_HOPS} redirects")))
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
            let walking = self.walk(url);
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
