//! Enterprise-managed authorization: the identity assertion authorization
//! grant. The host's ID token from the enterprise identity provider (IdP) is
//! exchanged at the IdP for an identity assertion JWT authorization grant
//! (ID-JAG) with an RFC 8693 token exchange, and the ID-JAG is exchanged at the
//! MCP server's authorization server for an access token with the RFC 7523 JWT
//! bearer grant. No browser and no person: the enterprise's policy at the IdP
//! decides.
//!
//! Neither exchange fits `oauth2`'s typed grants, so both are plain form POSTs
//! through [`crate::http::send`] (no redirect, a total timeout, bounded bodies).

use std::fmt;
use std::sync::Arc;

use base64::Engine;
use mcpvisor_protocol::SecretString;
use reqwest::Url;
use serde::Deserialize;

use crate::discovery::Discovered;
use crate::display::{display_url, printable};
use crate::error::AuthError;
use crate::http::{MAX_ERROR_TEXT, check_endpoint, get_json, read_bounded, send};
use crate::tokens::{ClientRegistration, StoredTokens, expiry};

const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// Hands out the host's current ID token; asked at every exchange, because ID
/// tokens are short-lived and the host's sign-in renews them. The error text
/// says why there is none and must not quote the token.
pub type IdTokenSource = Arc<dyn Fn() -> Result<SecretString, String> + Send + Sync>;

/// The enterprise identity provider that issues ID-JAGs.
#[derive(Clone)]
pub struct IdentityProvider {
    /// Its issuer, for OpenID discovery of the token endpoint (ignored when
    /// `token_endpoint` is given).
    pub issuer: Option<String>,
    /// Its token endpoint.
    pub token_endpoint: Option<String>,
    /// mcpvisor's client id at the IdP.
    pub client_id: Option<String>,
    /// Its secret there (sent with `client_secret_basic`).
    pub client_secret: Option<SecretString>,
    /// The host's ID token.
    pub id_token: IdTokenSource,
}

impl fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("issuer", &self.issuer.as_deref().map(display_url))
            .field(
                "token_endpoint",
                &self.token_endpoint.as_deref().map(display_url),
            )
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .finish_non_exhaustive()
    }
}

/// How mcpvisor authenticates at the authorization server.
pub(crate) struct Client<'a> {
    pub(crate) id: &'a str,
    pub(crate) secret: Option<&'a str>,
}

/// A token endpoint's answer (RFC 6749 §5.1, RFC 8693 §2.2.1).
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    issued_token_type: Option<String>,
    expires_in: Option<u64>,
    refresh_token: Option<String>,
    scope: Option<String>,
}

/// An error answer (RFC 6749 §5.2).
#[derive(Deserialize)]
struct ErrorAnswer {
    error: String,
}

/// Gets an access token for `found.resource` through the IdP.
pub(crate) async fn acquire(
    http: &reqwest::Client,
    found: &Discovered,
    idp: &IdentityProvider,
    client: Client<'_>,
    scope: Option<&str>,
) -> Result<StoredTokens, AuthError> {
    let jag = id_jag(http, found, idp, scope).await?;
    let mut form = vec![
        ("grant_type", JWT_BEARER.to_string()),
        ("assertion", jag.expose().to_string()),
        ("resource", found.resource.clone()),
    ];
    if let Some(scope) = scope {
        form.push(("scope", scope.to_string()));
    }
    // `client_secret_basic` unless the server takes only `client_secret_post`.
    let methods = found.auth_methods();
    let post = client.secret.is_some()
        && methods.iter().any(|m| m == "client_secret_post")
        && !methods.iter().any(|m| m == "client_secret_basic");
    let basic = match client.secret {
        Some(secret) if !post => Some((client.id, secret)),
        Some(secret) => {
            form.push(("client_id", client.id.to_string()));
            form.push(("client_secret", secret.to_string()));
            None
        }
        None => {
            form.push(("client_id", client.id.to_string()));
            None
        }
    };
    let answer = exchange(
        http,
        &found.token_endpoint,
        "authorization server",
        basic,
        &form,
    )
    .await?;
    let auth_method = match (client.secret, post) {
        (None, _) => "none",
        (Some(_), true) => "client_secret_post",
        (Some(_), false) => "client_secret_basic",
    };
    Ok(StoredTokens {
        resource: found.resource.clone(),
        access_token: answer.access_token,
        refresh_token: answer.refresh_token,
        expires_at: answer
            .expires_in
            .map(|s| expiry(std::time::Duration::from_secs(s))),
        scope: answer.scope.or_else(|| scope.map(str::to_string)),
        client: ClientRegistration {
            client_id: client.id.to_string(),
            client_secret: client.secret.map(str::to_string),
            auth_method: auth_method.into(),
            token_endpoint: found.token_endpoint.to_string(),
        },
        key: None,
    })
}

/// The RFC 8693 exchange at the IdP: the ID token for an ID-JAG whose audience
/// is the authorization server and whose resource is the MCP server.
async fn id_jag(
    http: &reqwest::Client,
    found: &Discovered,
    idp: &IdentityProvider,
    scope: Option<&str>,
) -> Result<SecretString, AuthError> {
    let endpoint = idp_token_endpoint(http, idp).await?;
    let id_token = (idp.id_token)().map_err(|why| {
        AuthError::Config(format!("no ID token for the identity provider: {why}"))
    })?;
    let mut form = vec![
        ("grant_type", TOKEN_EXCHANGE.to_string()),
        ("requested_token_type", ID_JAG.to_string()),
        ("audience", found.issuer.clone()),
        ("resource", found.resource.clone()),
        ("subject_token", id_token.expose().to_string()),
        ("subject_token_type", ID_TOKEN.to_string()),
    ];
    if let Some(scope) = scope {
        form.push(("scope", scope.to_string()));
    }
    let basic = match (&idp.client_id, &idp.client_secret) {
        (Some(id), Some(secret)) => Some((id.as_str(), secret.expose())),
        (Some(id), None) => {
            form.push(("client_id", id.clone()));
            None
        }
        _ => None,
    };
    let answer = exchange(http, &endpoint, "identity provider", basic, &form).await?;
    match answer.issued_token_type.as_deref() {
        Some(ID_JAG) => Ok(SecretString::new(answer.access_token)),
        other => Err(AuthError::Token(format!(
            "the identity provider issued `{}`, not an ID-JAG",
            printable(other.unwrap_or("(no issued_token_type)"), MAX_ERROR_TEXT)
        ))),
    }
}

/// The IdP's token endpoint: configured, or found by OpenID discovery at its
/// issuer (whose metadata must name that same issuer).
async fn idp_token_endpoint(
    http: &reqwest::Client,
    idp: &IdentityProvider,
) -> Result<Url, AuthError> {
    let configured = match (&idp.token_endpoint, &idp.issuer) {
        (Some(endpoint), _) => endpoint.clone(),
        (None, Some(issuer)) => discover_token_endpoint(http, issuer).await?,
        (None, None) => {
            return Err(AuthError::Config(
                "the identity provider needs an issuer or a token endpoint".into(),
            ));
        }
    };
    let url = Url::parse(&configured).map_err(|e| {
        AuthError::Config(format!(
            "identity provider token endpoint `{}`: {e}",
            display_url(&configured)
        ))
    })?;
    check_endpoint("identity provider token", &url)?;
    Ok(url)
}

#[derive(Deserialize)]
struct OpenIdConfiguration {
    issuer: Option<String>,
    token_endpoint: Option<String>,
}

async fn discover_token_endpoint(
    http: &reqwest::Client,
    issuer: &str,
) -> Result<String, AuthError> {
    let url = Url::parse(&format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    ))
    .map_err(|e| {
        AuthError::Config(format!(
            "identity provider issuer `{}`: {e}",
            display_url(issuer)
        ))
    })?;
    let found: OpenIdConfiguration = get_json(http, &url).await?.ok_or_else(|| {
        AuthError::Discovery(format!(
            "the identity provider has no OpenID configuration at {}",
            display_url(&url)
        ))
    })?;
    if found.issuer.as_deref().map(|i| i.trim_end_matches('/'))
        != Some(issuer.trim_end_matches('/'))
    {
        return Err(AuthError::IssuerMismatch {
            context: "identity provider's OpenID configuration",
            expected: display_url(issuer),
            found: found.issuer.as_deref().map(display_url),
        });
    }
    found.token_endpoint.ok_or_else(|| {
        AuthError::Discovery(
            "the identity provider's OpenID configuration names no token endpoint".into(),
        )
    })
}

/// One form POST to a token endpoint. `basic`: client id and secret for
/// `client_secret_basic`, each form-encoded first (RFC 6749 §2.3.1).
async fn exchange(
    http: &reqwest::Client,
    endpoint: &Url,
    who: &'static str,
    basic: Option<(&str, &str)>,
    form: &[(&str, String)],
) -> Result<TokenAnswer, AuthError> {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
        .finish();
    let mut request = http
        .post(endpoint.clone())
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(reqwest::header::ACCEPT, "application/json")
        .body(body);
    if let Some((id, secret)) = basic {
        let encode =
            |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let pair = format!("{}:{}", encode(id), encode(secret));
        let value = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        );
        request = request.header(reqwest::header::AUTHORIZATION, value);
    }
    let resp = send(request, endpoint, AuthError::Token).await?;
    let status = resp.status();
    let body = read_bounded(resp, endpoint, AuthError::Token).await?;
    if !status.is_success() {
        let code = serde_json::from_slice::<ErrorAnswer>(&body)
            .map(|e| format!("`{}`", printable(&e.error, MAX_ERROR_TEXT)))
            .unwrap_or_else(|_| format!("HTTP {}", status.as_u16()));
        return Err(AuthError::Token(format!(
            "the {who} ({}) answered {code}",
            display_url(endpoint)
        )));
    }
    // serde's message may quote the body, which holds a token: not shown.
    serde_json::from_slice(&body).map_err(|_| {
        AuthError::Token(format!(
            "unreadable token response from the {who} ({})",
            display_url(endpoint)
        ))
    })
}
