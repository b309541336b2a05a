//! Authorization code with PKCE S256, the `resource` parameter, client
//! registration (pre-registered, client ID metadata document, or RFC 7591).

use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge,
    RedirectUrl, RefreshToken, RequestTokenError, Scope, TokenResponse, TokenUrl,
};
use reqwest::Url;
use serde::Deserialize;

use crate::discovery::Discovered;
use crate::display::{display_url, printable};
use crate::driver::AuthorizationDriver;
use crate::error::AuthError;
use crate::http::{HttpFailure, MAX_ERROR_TEXT, OAuthHttp, check_endpoint, read_bounded, send};
use crate::tokens::{ClientRegistration, StoredTokens, expiry};

/// How this client identifies itself, as configured.
#[derive(Clone, Default)]
pub(crate) struct ClientIdentity {
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<String>,
    /// A client ID metadata document URL, used where the server supports them.
    pub(crate) metadata_url: Option<String>,
    pub(crate) client_name: String,
}

#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: String,
    client_secret: Option<String>,
    token_endpoint_auth_method: Option<String>,
}

/// The client to use with this authorization server: configured, a metadata
/// document URL, or freshly registered.
pub(crate) async fn client_for(
    http: &reqwest::Client,
    found: &Discovered,
    identity: &ClientIdentity,
    redirect: &Url,
) -> Result<ClientRegistration, AuthError> {
    let token_endpoint = found.token_endpoint.to_string();
    if let Some(id) = &identity.client_id {
        let method = match &identity.client_secret {
            None => "none".to_string(),
            Some(_)
                if found
                    .auth_methods()
                    .iter()
                    .any(|m| m == "client_secret_basic")
                    || found.auth_methods().is_empty() =>
            {
                "client_secret_basic".to_string()
            }
            Some(_) => "client_secret_post".to_string(),
        };
        return Ok(ClientRegistration {
            client_id: id.clone(),
            client_secret: identity.client_secret.clone(),
            auth_method: method,
            token_endpoint,
        });
    }
    if let Some(url) = identity
        .metadata_url
        .as_ref()
        .filter(|_| found.supports_cimd())
    {
        return Ok(ClientRegistration {
            client_id: url.clone(),
            client_secret: None,
            auth_method: "none".into(),
            token_endpoint,
        });
    }
    let endpoint = found.registration_endpoint.as_ref().ok_or_else(|| {
        AuthError::Registration(
            "no client id is configured and the server offers no registration".into(),
        )
    })?;
    register(http, endpoint, found, identity, redirect).await
}

async fn register(
    http: &reqwest::Client,
    endpoint: &Url,
    found: &Discovered,
    identity: &ClientIdentity,
    redirect: &Url,
) -> Result<ClientRegistration, AuthError> {
    check_endpoint("registration", endpoint)?;
    let methods = found.auth_methods();
    // A public client when the server allows it: nothing to keep secret on disk.
    let requested = if methods.is_empty() || methods.iter().any(|m| m == "none") {
        "none"
    } else if methods.iter().any(|m| m == "client_secret_basic") {
        "client_secret_basic"
    } else {
        "client_secret_post"
    };
    let body = serde_json::json!({
        "client_name": identity.client_name,
        "redirect_uris": [redirect.as_str()],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": requested,
        "application_type": application_type(redirect),
    });
    let request = http
        .post(endpoint.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_string());
    let resp = send(request, endpoint, AuthError::Registration).await?;
    let status = resp.status();
    let bytes = read_bounded(resp, endpoint, AuthError::Registration).await?;
    if !status.is_success() {
        return Err(AuthError::Registration(format!("HTTP {status}")));
    }
    let reg: RegistrationResponse = serde_json::from_slice(&bytes).map_err(|e| {
        AuthError::Registration(format!(
            "unreadable answer: {}",
            printable(&e.to_string(), MAX_ERROR_TEXT)
        ))
    })?;
    let auth_method = reg.token_endpoint_auth_method.unwrap_or_else(|| {
        if reg.client_secret.is_some() {
            "client_secret_basic"
        } else {
            "none"
        }
        .to_string()
    });
    Ok(ClientRegistration {
        client_id: reg.client_id,
        client_secret: reg.client_secret,
        auth_method,
        token_endpoint: found.token_endpoint.to_string(),
    })
}

/// The OpenID registration `application_type` (MCP 2026-07-28 asks clients
/// to send it): `native` for a redirect to this machine's loopback listener,
/// which is what a host on a person's machine uses; `web` for any other,
/// so an authorization server holds it to the rules for web redirects.
pub(crate) fn application_type(redirect: &Url) -> &'static str {
    let loopback = match redirect.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    if loopback { "native" } else { "web" }
}

/// The scope to ask for: the configured one, else the challenge's, else the
/// resource's `scopes_supported`, else none — joined with what was granted
/// before (a step-up widens, never narrows). `offline_access` is added only
/// where the authorization server advertises it.
pub(crate) fn choose_scope(
    found: &Discovered,
    challenge_scope: Option<&str>,
    configured: Option<&str>,
    granted: Option<&str>,
) -> Option<String> {
    let mut scopes: Vec<String> = Vec::new();
    let mut add = |list: &str| {
        for s in list.split_whitespace() {
            if !scopes.iter().any(|x| x == s) {
                scopes.push(s.to_string());
            }
        }
    };
    if let Some(g) = granted {
        add(g);
    }
    match (configured, challenge_scope, &found.resource_scopes) {
        (Some(c), _, _) => add(c),
        (None, Some(c), _) => add(c),
        (None, None, Some(supported)) => add(&supported.join(" ")),
        (None, None, None) => {}
    }
    let offline = found
        .scopes_supported()
        .is_some_and(|s| s.iter().any(|x| x == "offline_access"));
    if offline && !scopes.is_empty() && !scopes.iter().any(|s| s == "offline_access") {
        scopes.push("offline_access".into());
    }
    if scopes.is_empty() {
        None
    } else {
        Some(scopes.join(" "))
    }
}

fn oauth_client(
    found: &Discovered,
    reg: &ClientRegistration,
    redirect: Option<&Url>,
) -> Result<OAuthClient, AuthError> {
    let mut client = BasicClient::new(ClientId::new(reg.client_id.clone()))
        .set_auth_uri(AuthUrl::from_url(found.authorization_endpoint.clone()))
        .set_token_uri(TokenUrl::from_url(found.token_endpoint.clone()))
        .set_auth_type(if reg.auth_method == "client_secret_post" {
            AuthType::RequestBody
        } else {
            AuthType::BasicAuth
        });
    if reg.auth_method != "none" {
        if let Some(secret) = &reg.client_secret {
            client = client.set_client_secret(ClientSecret::new(secret.clone()));
        }
    }
    if let Some(r) = redirect {
        client = client.set_redirect_uri(RedirectUrl::from_url(r.clone()));
    }
    Ok(client)
}

type OAuthClient = BasicClient<
    oauth2::EndpointSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointSet,
>;

/// Runs the authorization code flow through `driver` and exchanges the code.
pub(crate) async fn authorize(
    http: &reqwest::Client,
    found: &Discovered,
    reg: &ClientRegistration,
    driver: &dyn AuthorizationDriver,
    scope: Option<&str>,
) -> Result<StoredTokens, AuthError> {
    found.require_pkce_s256()?;
    let redirect = driver.redirect_uri();
    let client = oauth_client(found, reg, Some(&redirect))?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .add_extra_param("resource", found.resource.clone());
    if let Some(scope) = scope {
        request = request.add_scopes(scope.split_whitespace().map(|s| Scope::new(s.to_string())));
        // OpenID Connect Core §11: without `prompt=consent` a provider drops
        // `offline_access` and issues no refresh token (oidc-provider does).
        // An OAuth server that does not know `prompt` ignores it (RFC 6749 §3.1).
        if scope.split_whitespace().any(|s| s == "offline_access") {
            request = request.add_extra_param("prompt", "consent");
        }
    }
    let (url, state) = request.url();
    let back = driver.authorize(url).await?;
    let query: std::collections::HashMap<String, String> =
        back.query_pairs().into_owned().collect();
    if let Some(error) = query.get("error") {
        // Text from the server, bound for a terminal: no control characters.
        let mut message = format!(
            "the authorization server answered `{}`",
            printable(error, MAX_ERROR_TEXT)
        );
        if let Some(description) = query.get("error_description") {
            message.push_str(&format!(": {}", printable(description, MAX_ERROR_TEXT)));
        }
        return Err(AuthError::Authorization(message));
    }
    if query.get("state") != Some(state.secret()) {
        return Err(AuthError::Authorization(
            "state does not match; the redirect is not ours".into(),
        ));
    }
    check_response_issuer(found, query.get("iss").map(String::as_str))?;
    let code = query
        .get("code")
        .ok_or_else(|| AuthError::Authorization("the redirect carries no code".into()))?;
    let answer = client
        .exchange_code(AuthorizationCode::new(code.clone()))
        .set_pkce_verifier(verifier)
        .add_extra_param("resource", found.resource.clone())
        .request_async(&OAuthHttp(http))
        .await
        .map_err(token_error)?;
    Ok(stored(found, reg, &answer, None, scope))
}

/// RFC 9207: where the authorization server advertises `iss` in its responses,
/// the response must carry the issuer discovery found (a mix-up defence); an
/// `iss` that is present is compared even where it is not advertised (as parsed
/// URLs, so `https://as.example` and `https://as.example/` are one issuer). Without
/// metadata (the 2025-03-26 fallback) the issuer is only a guess at the
/// server's origin, so an `iss` is not compared with it.
fn check_response_issuer(found: &Discovered, iss: Option<&str>) -> Result<(), AuthError> {
    if found.metadata.is_none() {
        return Ok(());
    }
    // RFC 9207 §2.4: a simple string comparison with the issuer the
    // metadata names; no URL normalisation (case, default port, trailing
    // slash, percent-encoding), so a look-alike issuer is a mismatch.
    let expected = found
        .metadata
        .as_ref()
        .and_then(|m| m.issuer.as_deref())
        .unwrap_or(&found.issuer);
    let same = |iss: &str| iss == expected;
    match iss {
        Some(iss) if same(iss) => Ok(()),
        None if !found.iss_in_response() => Ok(()),
        other => {
            let shown = other.map(display_url);
            let expected_shown = display_url(expected);
            Err(AuthError::IssuerMismatch {
                context: "authorization response",
                // Issuers that differ only where a URL parser would not see it
                // (a trailing slash, case, a default port) would read alike.
                found: match shown {
                    Some(s) if s == expected_shown => Some(format!(
                        "{s} (spelled otherwise; RFC 9207 compares as written)"
                    )),
                    s => s,
                },
                expected: expected_shown,
            })
        }
    }
}

/// Why a refresh did not succeed.
pub(crate) enum RefreshFailure {
    /// The authorization server turned the grant down (revoked, expired, unknown
    /// client), or the stored login cannot be used: it is gone.
    Refused(AuthError),
    /// The token endpoint could not be reached or failed: the login stands, and a
    /// later refresh may succeed.
    Unavailable(AuthError),
}

/// Exchanges a refresh token; the old refresh token is kept if no new one comes back.
pub(crate) async fn refresh(
    http: &reqwest::Client,
    found_resource: &str,
    tokens: &StoredTokens,
) -> Result<StoredTokens, RefreshFailure> {
    let refresh = tokens
        .refresh_token
        .as_ref()
        .ok_or_else(|| RefreshFailure::Refused(AuthError::Token("no refresh token".into())))?;
    let token_url = Url::parse(&tokens.client.token_endpoint)
        .map_err(|e| RefreshFailure::Refused(AuthError::Token(e.to_string())))?;
    check_endpoint("token", &token_url).map_err(RefreshFailure::Refused)?;
    let mut client = BasicClient::new(ClientId::new(tokens.client.client_id.clone()))
        .set_token_uri(TokenUrl::from_url(token_url))
        .set_auth_type(if tokens.client.auth_method == "client_secret_post" {
            AuthType::RequestBody
        } else {
            AuthType::BasicAuth
        });
    if tokens.client.auth_method != "none" {
        if let Some(secret) = &tokens.client.client_secret {
            client = client.set_client_secret(ClientSecret::new(secret.clone()));
        }
    }
    let answer = client
        .exchange_refresh_token(&RefreshToken::new(refresh.clone()))
        .add_extra_param("resource", found_resource.to_string())
        .request_async(&OAuthHttp(http))
        .await
        .map_err(|e| {
            // An OAuth error answer is a verdict on the grant, unless it says the
            // server itself is in trouble; anything else is the server being unreachable.
            let refused = matches!(&e, RequestTokenError::ServerResponse(r)
                if !matches!(r.error().as_ref(), "server_error" | "temporarily_unavailable"));
            let error = token_error(e);
            if refused {
                RefreshFailure::Refused(error)
            } else {
                RefreshFailure::Unavailable(error)
            }
        })?;
    let mut next = StoredTokens {
        resource: tokens.resource.clone(),
        access_token: answer.access_token().secret().clone(),
        refresh_token: answer
            .refresh_token()
            .map(|r| r.secret().clone())
            .or_else(|| tokens.refresh_token.clone()),
        expires_at: answer.expires_in().map(expiry),
        scope: tokens.scope.clone(),
        client: tokens.client.clone(),
        key: None,
    };
    if let Some(scopes) = answer.scopes() {
        next.scope = Some(
            scopes
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        );
    }
    Ok(next)
}

pub(crate) fn stored(
    found: &Discovered,
    reg: &ClientRegistration,
    answer: &oauth2::basic::BasicTokenResponse,
    previous_refresh: Option<String>,
    requested_scope: Option<&str>,
) -> StoredTokens {
    StoredTokens {
        resource: found.resource.clone(),
        access_token: answer.access_token().secret().clone(),
        refresh_token: answer
            .refresh_token()
            .map(|r| r.secret().clone())
            .or(previous_refresh),
        expires_at: answer.expires_in().map(expiry),
        scope: answer
            .scopes()
            .map(|s| s.iter().map(|x| x.as_str()).collect::<Vec<_>>().join(" "))
            .or_else(|| requested_scope.map(str::to_string)),
        client: reg.clone(),
        key: None,
    }
}

/// A token-endpoint failure, without anything secret in it.
pub(crate) fn token_error(
    e: RequestTokenError<
        HttpFailure,
        oauth2::StandardErrorResponse<oauth2::basic::BasicErrorResponseType>,
    >,
) -> AuthError {
    match e {
        RequestTokenError::ServerResponse(r) => AuthError::Token(format!(
            "the server answered `{}`",
            printable(r.error().as_ref(), MAX_ERROR_TEXT)
        )),
        // Already an `AuthError` without secrets (a redirect, a timeout, a failure).
        RequestTokenError::Request(HttpFailure(e)) => e,
        RequestTokenError::Parse(_, _) => AuthError::Token("unreadable token response".into()),
        RequestTokenError::Other(m) => AuthError::Token(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_redirect_registers_a_native_client() {
        let kind = |u: &str| application_type(&Url::parse(u).unwrap());
        assert_eq!(kind("http://127.0.0.1:41234/callback"), "native");
        assert_eq!(kind("http://[::1]:41234/callback"), "native");
        assert_eq!(kind("http://localhost:41234/callback"), "native");
        assert_eq!(kind("https://app.example.com/callback"), "web");
        assert_eq!(kind("http://127.0.0.2.example.com/callback"), "web");
    }

    #[test]
    fn the_response_issuer_is_compared_as_a_plain_string() {
        let found = |advertised: bool| Discovered {
            resource: "https://mcp.example.com/mcp".into(),
            resource_scopes: None,
            issuer: "https://as.example.com/tenant".into(),
            authorization_endpoint: Url::parse("https://as.example.com/authorize").unwrap(),
            token_endpoint: Url::parse("https://as.example.com/token").unwrap(),
            registration_endpoint: None,
            metadata: Some(crate::discovery::ServerMetadata {
                issuer: Some("https://as.example.com/tenant".into()),
                authorization_endpoint: None,
                token_endpoint: None,
                registration_endpoint: None,
                scopes_supported: None,
                token_endpoint_auth_methods_supported: None,
                code_challenge_methods_supported: None,
                client_id_metadata_document_supported: false,
                authorization_response_iss_parameter_supported: advertised,
            }),
        };
        assert!(check_response_issuer(&found(true), Some("https://as.example.com/tenant")).is_ok());
        // What a URL parser would take for the same issuer is another one here.
        for variant in [
            "https://as.example.com/tenant/",
            "HTTPS://AS.example.com/tenant",
            "https://as.example.com:443/tenant",
            "https://as.example.com/%74enant",
            "https://evil.example.com/tenant",
        ] {
            assert!(
                matches!(
                    check_response_issuer(&found(true), Some(variant)),
                    Err(AuthError::IssuerMismatch { .. })
                ),
                "{variant}"
            );
        }
        // Advertised but missing is refused; not advertised and missing is not.
        assert!(check_response_issuer(&found(true), None).is_err());
        assert!(check_response_issuer(&found(false), None).is_ok());
    }
}
