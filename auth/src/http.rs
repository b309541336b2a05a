//! HTTP for OAuth: the shared `reqwest::Client` behind `oauth2`'s client trait,
//! bounded metadata fetches, and the endpoint rules.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use reqwest::Url;
use serde::de::DeserializeOwned;

use crate::error::AuthError;

/// Largest metadata or token response read.
pub(crate) const MAX_BODY: usize = 1024 * 1024;
/// Time allowed for one OAuth HTTP exchange.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(15);

/// `oauth2`'s HTTP client, driven by the host's one `reqwest::Client`.
pub(crate) struct OAuthHttp<'a>(pub(crate) &'a reqwest::Client);

/// Why an OAuth HTTP exchange failed below OAuth.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct HttpFailure(String);

impl<'c> oauth2::AsyncHttpClient<'c> for OAuthHttp<'_> {
    type Error = HttpFailure;
    type Future =
        Pin<Box<dyn Future<Output = Result<oauth2::HttpResponse, HttpFailure>> + Send + 'c>>;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        let client = self.0.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let url = Url::parse(&parts.uri.to_string()).map_err(|e| HttpFailure(e.to_string()))?;
            let resp = client
                .request(parts.method, url)
                .headers(parts.headers)
                .body(body)
                .timeout(TIMEOUT)
                .send()
                .await
                .map_err(|e| HttpFailure(e.without_url().to_string()))?;
            let status = resp.status();
            let headers = resp.headers().clone();
            let body = read_bounded(resp)
                .await
                .map_err(|e| HttpFailure(e.to_string()))?;
            let mut out = oauth2::http::Response::builder().status(status);
            if let Some(h) = out.headers_mut() {
                *h = headers;
            }
            out.body(body).map_err(|e| HttpFailure(e.to_string()))
        })
    }
}

pub(crate) async fn read_bounded(mut resp: reqwest::Response) -> Result<Vec<u8>, AuthError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| AuthError::Discovery(e.without_url().to_string()))?
    {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(AuthError::Discovery(format!(
                "response larger than {MAX_BODY} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// GETs a JSON document; `Ok(None)` for a 4xx (the document is not there).
pub(crate) async fn get_json<T: DeserializeOwned>(
    client: &reqwest::Client,
    url: &Url,
) -> Result<Option<T>, AuthError> {
    let resp = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| {
            AuthError::Discovery(format!("{}: {}", without_query(url), e.without_url()))
        })?;
    let status = resp.status();
    if status.is_client_error() {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(AuthError::Discovery(format!(
            "{} answered {status}",
            without_query(url)
        )));
    }
    let body = read_bounded(resp).await?;
    serde_json::from_slice(&body).map(Some).map_err(|e| {
        AuthError::Discovery(format!("{} is not valid metadata: {e}", without_query(url)))
    })
}

/// Endpoints must be https, except on loopback (local development and tests).
pub(crate) fn check_endpoint(what: &'static str, url: &Url) -> Result<(), AuthError> {
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    if url.scheme() == "https" || (url.scheme() == "http" && loopback) {
        Ok(())
    } else {
        Err(AuthError::InsecureEndpoint {
            what,
            url: without_query(url),
        })
    }
}

/// A URL for messages: no query, no user info.
pub(crate) fn without_query(url: &Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.to_string()
}
