//! The requests of one HTTP connection: every POST and GET goes out through
//! [`Shared`] with the session id, the configured headers, the negotiated
//! revision and, for a server behind OAuth, a bearer token (renewed once on a
//! 401), and a redirect is refused with where it pointed.

use std::time::Duration;

use bytes::Bytes;
use mcpvisor_auth::Challenge;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use reqwest::{StatusCode, Url};

use super::body::{excerpt, http_error};
use super::session::SESSION_HEADER;
use super::{Shared, VERSION_HEADER, post, redact_url};
use crate::error::TransportError;
use crate::secret::SecretString;

impl Shared {
    pub(super) fn with_session(
        &self,
        mut req: reqwest::RequestBuilder,
    ) -> (reqwest::RequestBuilder, bool) {
        let (id, _) = self.session.current();
        let had = id.is_some();
        if let Some(id) = id {
            req = req.header(SESSION_HEADER, id);
        }
        (self.with_headers(req), had)
    }

    /// Adds the configured headers and the revision's version header.
    pub(super) fn with_headers(&self, mut req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if !self.headers.map().is_empty() {
            req = req.headers(self.headers.map().clone());
        }
        self.with_version(req)
    }

    /// Adds `MCP-Protocol-Version` where the negotiated revision asks for it.
    pub(super) fn with_version(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self.protocol.get() {
            Some(r) if r.rules().version_header => {
                req.header(VERSION_HEADER, HeaderValue::from_static(r.as_str()))
            }
            _ => req,
        }
    }

    /// The bearer token to send, if the server is OAuth-protected and one exists.
    pub(super) async fn bearer(
        &self,
        client: &reqwest::Client,
    ) -> Result<Option<SecretString>, TransportError> {
        match &self.oauth {
            Some(oauth) => oauth.bearer(client).await.map_err(TransportError::Auth),
            None => Ok(None),
        }
    }

    /// Sends `build()`'s request with the bearer token; a `401` is answered by
    /// the OAuth facade (refresh, or log in where that needs no person) and the
    /// request sent once more; a `403 insufficient_scope` authorizes again with
    /// the scope asked for (a bounded number of times).
    pub(super) async fn send_authorized(
        &self,
        client: &reqwest::Client,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, TransportError> {
        let mut refreshed = false;
        let mut step_ups = 0;
        loop {
            let token = self.bearer(client).await?;
            let mut req = build();
            if let Some(t) = &token {
                let mut value =
                    HeaderValue::from_str(&format!("Bearer {}", t.expose())).map_err(|_| {
                        TransportError::Http("access token is not a valid header value".into())
                    })?;
                value.set_sensitive(true);
                req = req.header(AUTHORIZATION, value);
            }
            let resp = req.send().await.map_err(http_error)?;
            if resp.status().is_redirection() {
                return Err(redirected(&self.url, &resp));
            }
            let Some(oauth) = &self.oauth else {
                return Ok(resp);
            };
            let challenge = || {
                Challenge::parse(
                    resp.headers()
                        .get_all(WWW_AUTHENTICATE)
                        .iter()
                        .filter_map(|v| v.to_str().ok()),
                )
            };
            match resp.status() {
                StatusCode::UNAUTHORIZED if !refreshed => {
                    let challenge = challenge();
                    oauth
                        .unauthorized(client, token.as_ref(), &challenge)
                        .await
                        .map_err(TransportError::Auth)?;
                    refreshed = true;
                }
                StatusCode::FORBIDDEN
                    if challenge().insufficient_scope()
                        && step_ups < mcpvisor_auth::MAX_STEP_UPS =>
                {
                    step_ups += 1;
                    let challenge = challenge();
                    oauth
                        .insufficient_scope(client, &challenge)
                        .await
                        .map_err(TransportError::Auth)?;
                }
                _ => return Ok(resp),
            }
        }
    }

    /// POSTs one message; also says whether a session id went with it. A
    /// `timeout` bounds the whole exchange (for answers that are not streams).
    pub(crate) async fn post(
        &self,
        body: &Bytes,
        timeout: Option<Duration>,
    ) -> Result<(reqwest::Response, bool), TransportError> {
        self.post_in(body, timeout, true).await
    }

    /// POSTs `body` outside any session: the `initialize` that opens a new one
    /// while the old id stays in place for the requests sent meanwhile (they
    /// meet the expiry and wait for this renewal instead of going out with no
    /// session at all).
    pub(crate) async fn post_sessionless(
        &self,
        body: &Bytes,
    ) -> Result<reqwest::Response, TransportError> {
        // Bounded: requests waiting on the renewal hold its lock meanwhile.
        let timeout = Some(self.options.exchange_timeout);
        Ok(self.post_in(body, timeout, false).await?.0)
    }

    pub(super) async fn post_in(
        &self,
        body: &Bytes,
        timeout: Option<Duration>,
        in_session: bool,
    ) -> Result<(reqwest::Response, bool), TransportError> {
        let had = in_session && self.session.current().0.is_some();
        let resp = self
            .send_authorized(&self.client, || {
                let req = self
                    .client
                    .post(self.url.clone())
                    .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                    .header(
                        ACCEPT,
                        HeaderValue::from_static("application/json, text/event-stream"),
                    )
                    .body(body.clone());
                let req = match timeout {
                    Some(t) => req.timeout(t),
                    None => req,
                };
                if in_session {
                    self.with_session(req).0
                } else {
                    self.with_headers(req)
                }
            })
            .await?;
        Ok((resp, had))
    }

    /// Opens an SSE stream with GET, resuming after `last_event_id` if given.
    pub(crate) async fn get(
        &self,
        last_event_id: Option<&str>,
    ) -> Result<reqwest::Response, TransportError> {
        self.get_with(&self.client, last_event_id).await
    }

    pub(crate) async fn get_with(
        &self,
        client: &reqwest::Client,
        last_event_id: Option<&str>,
    ) -> Result<reqwest::Response, TransportError> {
        self.send_authorized(client, || {
            let mut req = client
                .get(self.url.clone())
                .header(ACCEPT, HeaderValue::from_static("text/event-stream"));
            if let Some(last) = last_event_id.and_then(|l| HeaderValue::from_str(l).ok()) {
                req = req.header("last-event-id", last);
            }
            self.with_session(req).0
        })
        .await
    }

    /// Renews the session unless another request already did since `generation`.
    pub(crate) async fn renew(&self, generation: u64) -> Result<(), TransportError> {
        let _one_at_a_time = self.session.renewing.lock().await;
        if self.session.generation() != generation {
            return Ok(());
        }
        tracing::info!(server = %self.server, "HTTP session expired; opening a new one");
        post::reinitialize(self).await?;
        self.session.renewed();
        Ok(())
    }

    pub(super) async fn delete_session(&self) {
        let Some(id) = self.session.forget() else {
            return;
        };
        let timeout = self.options.delete_timeout;
        let sent = self.send_authorized(&self.client, || {
            self.with_version(
                self.client
                    .delete(self.url.clone())
                    .header(SESSION_HEADER, id.clone())
                    .headers(self.headers.map().clone())
                    .timeout(timeout),
            )
        });
        match tokio::time::timeout(timeout, sent)
            .await
            .unwrap_or(Err(TransportError::NoResponse))
        {
            Ok(resp)
                if resp.status().is_success()
                    || resp.status() == StatusCode::METHOD_NOT_ALLOWED => {}
            Ok(resp) => {
                let status = resp.status();
                let body = excerpt(resp).await;
                tracing::debug!(server = %self.server, %status, %body, "session DELETE refused");
            }
            Err(e) => tracing::debug!(server = %self.server, "session DELETE failed: {e}"),
        }
    }
}

/// The error for a 3xx answer: its status and where it pointed, for display only.
pub(super) fn redirected(base: &Url, resp: &reqwest::Response) -> TransportError {
    let location = resp
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(|l| match base.join(l) {
            Ok(target) => redact_url(target.as_str()),
            Err(_) => "[unparseable URL]".to_string(),
        });
    TransportError::Redirected {
        status: resp.status().as_u16(),
        location,
    }
}
