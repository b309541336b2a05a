//! HTTP for OAuth: every exchange goes through [`send`], which bounds it in
//! time and refuses redirects; `oauth2`'s client trait over the host's shared
//! `reqwest::Client`; bounded metadata fetches; and the endpoint rules.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use reqwest::Url;
use serde::de::DeserializeOwned;

use crate::display::{display_url, printable};
use crate::error::AuthError;

/// Largest metadata or token response read.
pub(crate) const MAX_BODY: usize = 1024 * 1024;
/// Longest text from a server (an error code, a parser's quote of it) that is shown.
pub(crate) const MAX_ERROR_TEXT: usize = 200;
/// Total time allowed for one OAuth HTTP exchange, body included.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(15);

/// Builds the error of one kind of exchange (discovery, registration, token).
pub(crate) type Failure = fn(String) -> AuthError;

/// Sends `request` (to `url`) with the total [`TIMEOUT`]. A 3xx is an error,
/// [`AuthError::Redirected`], whatever the client's redirect policy: OAuth
/// requests carry verifiers, codes and secrets, and discovery's origin checks
/// hold only if nothing moves it elsewhere.
pub(crate) async fn send(
    request: reqwest::RequestBuilder,
    url: &Url,
    failure: Failure,
) -> Result<reqwest::Response, AuthError> {
    let resp = request
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| transport_error(e, url, failure))?;
    let status = resp.status();
    if status.is_redirection() {
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .map(|l| match url.join(l) {
                Ok(target) => display_url(&target),
                Err(_) => "[unparseable URL]".to_string(),
            })
            .unwrap_or_else(|| "(none)".to_string());
        return Err(AuthError::Redirected {
            url: display_url(url),
            status: status.as_u16(),
            location,
        });
    }
    Ok(resp)
}

/// A failure below HTTP, without the URL reqwest would put in it (it may hold a query).
fn transport_error(e: reqwest::Error, url: &Url, failure: Failure) -> AuthError {
    if e.is_timeout() {
        AuthError::TimedOut {
            url: display_url(url),
            after: TIMEOUT,
        }
    } else {
        failure(format!("{}: {}", display_url(url), e.without_url()))
    }
}

/// `oauth2`'s HTTP client, driven by the host's one `reqwest::Client`.
pub(crate) struct OAuthHttp<'a>(pub(crate) &'a reqwest::Client);

/// Why an OAuth HTTP exchange failed below OAuth: the error to report as is.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct HttpFailure(pub(crate) AuthError);

impl<'c> oauth2::AsyncHttpClient<'c> for OAuthHttp<'_> {
    type Error = HttpFailure;
    type Future =
        Pin<Box<dyn Future<Output = Result<oauth2::HttpResponse, HttpFailure>> + Send + 'c>>;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        let client = self.0.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let url = Url::parse(&parts.uri.to_string())
                .map_err(|e| HttpFailure(AuthError::Token(e.to_string())))?;
            let request = client
                .request(parts.method, url.clone())
                .headers(parts.headers)
                .body(body);
            let resp = send(request, &url, AuthError::Token)
                .await
                .map_err(HttpFailure)?;
            let status = resp.status();
            let headers = resp.headers().clone();
            let body = read_bounded(resp, &url, AuthError::Token)
                .await
                .map_err(HttpFailure)?;
            let mut out = oauth2::http::Response::builder().status(status);
            if let Some(h) = out.headers_mut() {
                *h = headers;
            }
            out.body(body)
                .map_err(|e| HttpFailure(AuthError::Token(e.to_string())))
        })
    }
}

/// Reads a body of at most [`MAX_BODY`] bytes.
pub(crate) async fn read_bounded(
    mut resp: reqwest::Response,
    url: &Url,
    failure: Failure,
) -> Result<Vec<u8>, AuthError> {
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| transport_error(e, url, failure))?
    {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(failure(format!(
                "{}: response larger than {MAX_BODY} bytes",
                display_url(url)
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// GETs a JSON document; `Ok(None)` for a 4xx (the document is not there).
/// The URL must be https (or loopback), as every metadata URL.
pub(crate) async fn get_json<T: DeserializeOwned>(
    client: &reqwest::Client,
    url: &Url,
) -> Result<Option<T>, AuthError> {
    check_endpoint("metadata", url)?;
    let request = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json");
    let resp = send(request, url, AuthError::Discovery).await?;
    let status = resp.status();
    if status.is_client_error() {
        return Ok(None);
    }
    if !status.is_success() {
        return Err(AuthError::Discovery(format!(
            "{} answered {status}",
            display_url(url)
        )));
    }
    let body = read_bounded(resp, url, AuthError::Discovery).await?;
    // serde's message may quote the server's text: no control characters from it.
    serde_json::from_slice(&body).map(Some).map_err(|e| {
        AuthError::Discovery(format!(
            "{} is not valid metadata: {}",
            display_url(url),
            printable(&e.to_string(), MAX_ERROR_TEXT)
        ))
    })
}

/// True for `localhost` and loopback addresses.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Endpoints must be https, except on loopback (local development and tests).
pub(crate) fn check_endpoint(what: &'static str, url: &Url) -> Result<(), AuthError> {
    if url.scheme() == "https" || (url.scheme() == "http" && is_loopback(url)) {
        Ok(())
    } else {
        Err(AuthError::InsecureEndpoint {
            what,
            url: display_url(url),
        })
    }
}
