//! The client credentials grant, for unattended agents: a client secret
//! (`client_secret_basic`) or a signed assertion (`private_key_jwt`, RFC 7523).

use oauth2::basic::BasicClient;
use oauth2::{AuthType, ClientId, ClientSecret, Scope, TokenUrl};
use serde::Serialize;

use crate::discovery::Discovered;
use crate::error::AuthError;
use crate::http::OAuthHttp;
use crate::login::{stored, token_error};
use crate::tokens::{ClientRegistration, StoredTokens, now};

/// How the client proves who it is.
#[derive(Clone)]
pub(crate) enum Proof {
    Secret(String),
    /// A PEM private key (PKCS#8) and the JWS algorithm (`ES256` or `RS256`).
    PrivateKey {
        pem: String,
        algorithm: String,
    },
}

#[derive(Serialize)]
struct AssertionClaims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
    jti: String,
}

/// A signed client assertion: iss = sub = client id, aud = the issuer.
fn assertion(
    client_id: &str,
    audience: &str,
    pem: &str,
    algorithm: &str,
) -> Result<String, AuthError> {
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    let (alg, key) = match algorithm {
        "ES256" => (Algorithm::ES256, EncodingKey::from_ec_pem(pem.as_bytes())),
        "RS256" => (Algorithm::RS256, EncodingKey::from_rsa_pem(pem.as_bytes())),
        other => {
            return Err(AuthError::Config(format!(
                "signing algorithm `{other}` is not supported (ES256, RS256)"
            )));
        }
    };
    let key =
        key.map_err(|_| AuthError::Config("the private key is not a PEM key of that kind".into()))?;
    let iat = now();
    let claims = AssertionClaims {
        iss: client_id,
        sub: client_id,
        aud: audience,
        iat,
        exp: iat + 300,
        jti: format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..)),
    };
    jsonwebtoken::encode(&Header::new(alg), &claims, &key)
        .map_err(|e| AuthError::Config(format!("signing the assertion: {e}")))
}

/// Gets a token with the client credentials grant.
pub(crate) async fn acquire(
    http: &reqwest::Client,
    found: &Discovered,
    client_id: &str,
    proof: &Proof,
    scope: Option<&str>,
) -> Result<StoredTokens, AuthError> {
    let mut client = BasicClient::new(ClientId::new(client_id.to_string()))
        .set_token_uri(TokenUrl::from_url(found.token_endpoint.clone()));
    let (auth_method, secret) = match proof {
        Proof::Secret(s) => {
            client = client
                .set_client_secret(ClientSecret::new(s.clone()))
                .set_auth_type(AuthType::BasicAuth);
            ("client_secret_basic", Some(s.clone()))
        }
        Proof::PrivateKey { .. } => {
            client = client.set_auth_type(AuthType::RequestBody);
            ("private_key_jwt", None)
        }
    };
    let mut request = client
        .exchange_client_credentials()
        .add_extra_param("resource", found.resource.clone());
    if let Proof::PrivateKey { pem, algorithm } = proof {
        let audience = found.issuer.clone();
        request = request
            .add_extra_param(
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            )
            .add_extra_param(
                "client_assertion",
                assertion(client_id, &audience, pem, algorithm)?,
            );
    }
    if let Some(scope) = scope {
        request = request.add_scopes(scope.split_whitespace().map(|s| Scope::new(s.to_string())));
    }
    let answer = request
        .request_async(&OAuthHttp(http))
        .await
        .map_err(token_error)?;
    let reg = ClientRegistration {
        client_id: client_id.to_string(),
        client_secret: secret,
        auth_method: auth_method.to_string(),
        token_endpoint: found.token_endpoint.to_string(),
    };
    Ok(stored(found, &reg, &answer, None, scope))
}
