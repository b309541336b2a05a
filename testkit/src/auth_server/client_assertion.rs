//! `private_key_jwt` clients (RFC 7523 §2.2, OpenID Connect Core §9) at the
//! fixture's token endpoint: a client registered with a public key proves
//! itself with a JWT signed by its private key. The fixture checks the
//! signature with the public key, the algorithm, `iss` = `sub` = the client id,
//! `aud` (the issuer or the token endpoint), `exp` in the future, and a `jti`
//! it has not seen before; it records the claims of each assertion it took.
//! [`KeyPair`] makes a fresh key per test, as a PKCS#8 PEM file would hold it.

use std::collections::HashMap;

use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use super::{AuthServer, Client, State, lock};

/// The assertion type of RFC 7523.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A fresh key pair: the private half as mcpvisor reads it, the public half
/// for the fixture.
pub struct KeyPair {
    /// `ES256` or `RS256`.
    pub algorithm: &'static str,
    /// PKCS#8 PEM (`BEGIN PRIVATE KEY`).
    pub private_pem: String,
    /// SubjectPublicKeyInfo PEM (`BEGIN PUBLIC KEY`).
    pub public_pem: String,
}

impl KeyPair {
    /// A P-256 key for `ES256`.
    pub fn es256() -> KeyPair {
        use aws_lc_rs::encoding::AsDer;
        use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).expect("a P-256 key");
        let private = pair.to_pkcs8v1().expect("PKCS#8");
        let public = pair.public_key().as_der().expect("SPKI");
        KeyPair {
            algorithm: "ES256",
            private_pem: pem("PRIVATE KEY", private.as_ref()),
            public_pem: pem("PUBLIC KEY", public.as_ref()),
        }
    }

    /// A 2048-bit RSA key for `RS256`.
    pub fn rs256() -> KeyPair {
        use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der, PublicKeyX509Der};
        use aws_lc_rs::rsa::{KeyPair as RsaKeyPair, KeySize};
        use aws_lc_rs::signature::KeyPair as _;
        let pair = RsaKeyPair::generate(KeySize::Rsa2048).expect("an RSA key");
        let private: Pkcs8V1Der<'static> = pair.as_der().expect("PKCS#8");
        let public: PublicKeyX509Der<'static> = pair.public_key().as_der().expect("SPKI");
        KeyPair {
            algorithm: "RS256",
            private_pem: pem("PRIVATE KEY", private.as_ref()),
            public_pem: pem("PUBLIC KEY", public.as_ref()),
        }
    }
}

fn pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

/// A registered public key.
#[derive(Clone)]
pub(super) struct PublicKey {
    algorithm: Algorithm,
    key: DecodingKey,
}

impl AuthServer {
    /// A client registered out of band with the public half of `key`
    /// (`token_endpoint_auth_method` `private_key_jwt`), for client credentials.
    pub fn preregister_key(&self, client_id: &str, key: &KeyPair) {
        let (algorithm, decoding) = match key.algorithm {
            "ES256" => (
                Algorithm::ES256,
                DecodingKey::from_ec_pem(key.public_pem.as_bytes()),
            ),
            "RS256" => (
                Algorithm::RS256,
                DecodingKey::from_rsa_pem(key.public_pem.as_bytes()),
            ),
            other => panic!("no such algorithm in the fixture: {other}"),
        };
        let mut state = lock(&self.shared.state);
        state.clients.insert(
            client_id.to_string(),
            Client {
                redirect_uris: Vec::new(),
                secret: None,
            },
        );
        state.assertion_keys.insert(
            client_id.to_string(),
            PublicKey {
                algorithm,
                key: decoding.expect("the public key PEM"),
            },
        );
    }

    /// The claims of every client assertion the token endpoint accepted, oldest first.
    pub fn client_assertions(&self) -> Vec<Value> {
        lock(&self.shared.state).assertion_claims.clone()
    }
}

/// The client a `client_assertion` proves, when it holds; `None` refuses it.
pub(super) fn authenticate(
    state: &mut State,
    base: &str,
    form: &HashMap<String, String>,
) -> Option<String> {
    if form.get("client_assertion_type").map(String::as_str) != Some(JWT_BEARER) {
        return None;
    }
    let assertion = form.get("client_assertion")?;
    // The client named inside, before the signature says whether to believe it.
    let header = jsonwebtoken::decode_header(assertion).ok()?;
    let unverified: Value = {
        let payload = assertion.split('.').nth(1)?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .ok()?;
        serde_json::from_slice(&bytes).ok()?
    };
    let client_id = unverified["iss"].as_str()?.to_string();
    let registered = state.assertion_keys.get(&client_id)?.clone();
    if header.alg != registered.algorithm {
        return None;
    }
    let mut validation = Validation::new(registered.algorithm);
    validation.set_required_spec_claims(&["exp", "iss", "sub", "aud"]);
    validation.set_issuer(&[&client_id]);
    validation.set_audience(&[base.to_string(), format!("{base}/token")]);
    validation.leeway = 0;
    let claims: Value = jsonwebtoken::decode(assertion, &registered.key, &validation)
        .ok()?
        .claims;
    if claims["sub"].as_str() != Some(client_id.as_str()) {
        return None;
    }
    if form.get("client_id").is_some_and(|id| *id != client_id) {
        return None;
    }
    // A `jti` is good once (RFC 7523 §3, item 7): a replayed assertion is refused.
    let jti = claims["jti"].as_str()?.to_string();
    if !state.assertion_jtis.insert(jti) {
        return None;
    }
    state.assertion_claims.push(claims);
    Some(client_id)
}
