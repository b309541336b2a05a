//! One server entry: as written (structure only), and resolved into a spec
//! (expansion and runtime validation) when it is enabled.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::time::Duration;

use mcpvisor_actors::ServerSpec;
use mcpvisor_auth::{Grant, OAuthConfig};
use mcpvisor_protocol::mcp::names::validate_server_name;
use mcpvisor_protocol::mcp::revision::Versions;
use mcpvisor_transports::{
    HttpHeaders, HttpSpec, SecretString, StdioSpec, endpoint_url, redact_url,
};

use super::error::EntryProblem;
use super::expand::{expand, is_variable_name};
use super::identity_provider::IdentityProviderEntry;
use super::key_file::read_key_file;
use super::raw::RawEntry;

/// Which transport an entry uses.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportKind {
    /// A child process (`command`).
    Stdio,
    /// Streamable HTTP (`"type": "http"`).
    Http,
    /// Anything else, kept as written (`"sse"`, a typo, a future type).
    Other(String),
}

impl fmt::Display for TransportKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportKind::Stdio => f.write_str("stdio"),
            TransportKind::Http => f.write_str("http"),
            TransportKind::Other(k) => f.write_str(k),
        }
    }
}

/// One entry as written, before expansion. Environment and header values are
/// secrets: `Debug` shows their names only.
#[derive(Clone, PartialEq)]
pub struct ServerEntry {
    /// The entry's key: the route component `mcp__<name>__…`.
    pub name: String,
    /// Its transport.
    pub kind: TransportKind,
    /// Stdio: the program (unexpanded).
    pub command: Option<String>,
    /// Stdio: arguments (unexpanded).
    pub args: Vec<String>,
    /// Stdio: extra environment (unexpanded values).
    pub env: BTreeMap<String, SecretString>,
    /// Stdio: working directory (unexpanded; relative to the file's directory).
    pub cwd: Option<String>,
    /// Stdio: host variables this server also gets, by name (`envPassthrough`).
    pub env_passthrough: Vec<String>,
    /// HTTP: the endpoint (unexpanded).
    pub url: Option<String>,
    /// HTTP: headers (unexpanded values).
    pub headers: BTreeMap<String, SecretString>,
    /// HTTP: OAuth settings (every HTTP server can log in; this block configures how).
    pub oauth: Option<OAuthEntry>,
    /// Request timeout override.
    pub timeout: Option<Duration>,
    /// Startup timeout override.
    pub startup_timeout: Option<Duration>,
    /// `"disabled": true` in the file.
    pub disabled: bool,
    /// Protocol revisions to offer, first preferred (`protocolVersions`), as written.
    pub protocol_versions: Option<Vec<String>>,
}

impl fmt::Debug for ServerEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Vec<String> = self.env.keys().map(|k| format!("{k}=[redacted]")).collect();
        let headers: Vec<String> = self
            .headers
            .keys()
            .map(|k| format!("{k}: [redacted]"))
            .collect();
        f.debug_struct("ServerEntry")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &env)
            .field("cwd", &self.cwd)
            .field("env_passthrough", &self.env_passthrough)
            .field("url", &self.url.as_deref().map(redact_url))
            .field("headers", &headers)
            .field("oauth", &self.oauth)
            .field("timeout", &self.timeout)
            .field("startup_timeout", &self.startup_timeout)
            .field("disabled", &self.disabled)
            .field("protocol_versions", &self.protocol_versions)
            .finish()
    }
}

impl ServerEntry {
    pub(super) fn from_raw(name: &str, raw: RawEntry) -> ServerEntry {
        let kind = match raw.kind.as_deref() {
            Some("stdio") => TransportKind::Stdio,
            // Some hosts write the transport's full name.
            Some("http" | "streamable-http") => TransportKind::Http,
            Some(other) => TransportKind::Other(other.to_string()),
            None if raw.url.is_some() && raw.command.is_none() => TransportKind::Http,
            None => TransportKind::Stdio,
        };
        let secrets = |m: Option<BTreeMap<String, String>>| {
            m.unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, SecretString::new(v)))
                .collect()
        };
        ServerEntry {
            name: name.to_string(),
            kind,
            command: raw.command,
            args: raw.args.unwrap_or_default(),
            env: secrets(raw.env),
            cwd: raw.cwd,
            env_passthrough: raw.env_passthrough.unwrap_or_default(),
            url: raw.url,
            headers: secrets(raw.headers),
            oauth: raw.oauth.map(|o| OAuthEntry {
                client_id: o.client_id,
                client_secret: o.client_secret.map(SecretString::new),
                scope: o.scope,
                callback_port: o.callback_port,
                client_metadata_url: o.client_metadata_url,
                grant: o.grant,
                private_key_file: o.private_key_file,
                signing_algorithm: o.signing_algorithm,
                identity_provider: o.identity_provider.map(Into::into),
            }),
            timeout: raw.timeout.map(Duration::from_millis),
            startup_timeout: raw.startup_timeout.map(Duration::from_millis),
            disabled: raw.disabled.unwrap_or(false),
            protocol_versions: raw.protocol_versions,
        }
    }

    /// Problems that do not depend on the environment: the name and the type.
    /// Checked for every entry, enabled or not.
    pub fn structural_problems(&self) -> Vec<EntryProblem> {
        let mut problems = Vec::new();
        if let Err(error) = validate_server_name(&self.name) {
            problems.push(EntryProblem::InvalidName {
                server: self.name.clone(),
                error,
            });
        }
        if let TransportKind::Other(kind) = &self.kind {
            problems.push(EntryProblem::UnsupportedTransport {
                server: self.name.clone(),
                kind: kind.clone(),
            });
        }
        problems
    }

    /// Expands `${VAR}` references (once) and validates what the transport will
    /// use. Every problem is reported, not just the first.
    pub fn resolve(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
        base_dir: &Path,
    ) -> Result<ServerSpec, Vec<EntryProblem>> {
        let mut problems = self.structural_problems();
        let mut field = |field: String, value: &str| match expand(value, lookup) {
            Ok(v) => Some(v),
            Err(error) => {
                problems.push(EntryProblem::Expansion {
                    server: self.name.clone(),
                    field,
                    error,
                });
                None
            }
        };
        let transport = match self.kind {
            TransportKind::Stdio => {
                let command = self
                    .command
                    .as_deref()
                    .and_then(|c| field("command".into(), c));
                let args: Vec<Option<String>> = self
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| field(format!("args[{i}]"), a))
                    .collect();
                let env: Vec<(String, Option<String>)> = self
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), field(format!("env.{k}"), v.expose())))
                    .collect();
                let cwd = self.cwd.as_deref().map(|c| field("cwd".into(), c));
                Some(Transport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                })
            }
            TransportKind::Http => {
                let url = self.url.as_deref().map(|u| field("url".into(), u));
                let headers: Vec<(String, Option<String>)> = self
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), field(format!("headers.{k}"), v.expose())))
                    .collect();
                Some(Transport::Http { url, headers })
            }
            TransportKind::Other(_) => None,
        };
        let spec = match transport {
            Some(Transport::Stdio {
                command,
                args,
                env,
                cwd,
            }) => self.stdio_spec(command, args, env, cwd, base_dir, &mut problems),
            Some(Transport::Http { url, headers }) => self.http_spec(url, headers, &mut problems),
            None => None,
        };
        let versions = match &self.protocol_versions {
            Some(names) => match Versions::parse(names) {
                Ok(versions) => Some(versions),
                Err(e) => {
                    problems.push(EntryProblem::InvalidProtocolVersions {
                        server: self.name.clone(),
                        reason: e.to_string(),
                    });
                    None
                }
            },
            None => None,
        };
        match spec {
            Some(spec) if problems.is_empty() => Ok(spec
                .with_request_timeout(self.timeout)
                .with_startup_timeout(self.startup_timeout)
                .with_protocol_versions(versions)),
            _ => Err(problems),
        }
    }

    fn stdio_spec(
        &self,
        command: Option<String>,
        args: Vec<Option<String>>,
        env: Vec<(String, Option<String>)>,
        cwd: Option<Option<String>>,
        base_dir: &Path,
        problems: &mut Vec<EntryProblem>,
    ) -> Option<ServerSpec> {
        // An absent command, or one that expands to nothing; a failed expansion
        // is already reported as such.
        let empty = match (&self.command, &command) {
            (None, _) => true,
            (Some(_), Some(c)) => c.trim().is_empty(),
            (Some(_), None) => false,
        };
        if empty {
            problems.push(EntryProblem::MissingCommand {
                server: self.name.clone(),
            });
        }
        let command = command.filter(|c| !c.trim().is_empty());
        for name in self.env_passthrough.iter().filter(|n| !is_variable_name(n)) {
            problems.push(EntryProblem::InvalidPassthrough {
                server: self.name.clone(),
                name: name.clone(),
            });
        }
        let spec = StdioSpec {
            command: command?,
            args: args.into_iter().collect::<Option<Vec<_>>>()?,
            args_as_written: Some(self.args.clone()),
            env_passthrough: self.env_passthrough.clone(),
            env: env
                .into_iter()
                .map(|(k, v)| v.map(|v| (k, SecretString::new(v))))
                .collect::<Option<Vec<_>>>()?,
            // A server runs where its file is, as the host that reads the same
            // file runs it, not wherever the command was typed.
            cwd: match cwd {
                Some(c) => Some(base_dir.join(c?)),
                None => Some(base_dir.to_path_buf()),
            },
        };
        Some(ServerSpec::stdio(self.name.clone(), spec))
    }

    fn http_spec(
        &self,
        url: Option<Option<String>>,
        headers: Vec<(String, Option<String>)>,
        problems: &mut Vec<EntryProblem>,
    ) -> Option<ServerSpec> {
        let url = match url {
            None => {
                problems.push(EntryProblem::InvalidUrl {
                    server: self.name.clone(),
                    reason: "`url` is missing".into(),
                });
                None
            }
            Some(None) => None,
            Some(Some(u)) => match endpoint_url(&u) {
                Ok(_) => Some(u),
                Err(e) => {
                    problems.push(EntryProblem::InvalidUrl {
                        server: self.name.clone(),
                        reason: e.to_string(),
                    });
                    None
                }
            },
        };
        let headers = headers
            .into_iter()
            .map(|(k, v)| v.map(|v| (k, SecretString::new(v))))
            .collect::<Option<Vec<_>>>();
        if let Some(Err(error)) = headers.as_ref().map(|h| HttpHeaders::new(h)) {
            problems.push(EntryProblem::InvalidHeader {
                server: self.name.clone(),
                error,
            });
        }
        if self.oauth.is_some() && self.static_authorization() {
            problems.push(EntryProblem::OAuth {
                server: self.name.clone(),
                reason: "a static `Authorization` header and an `oauth` block are both \
                         configured; keep one"
                    .into(),
            });
        }
        Some(ServerSpec::http(
            self.name.clone(),
            HttpSpec {
                url: url?,
                headers: headers?,
                oauth: None,
            },
        ))
    }
}

/// Expanded transport fields; `None` where expansion failed.
enum Transport {
    Stdio {
        command: Option<String>,
        args: Vec<Option<String>>,
        env: Vec<(String, Option<String>)>,
        cwd: Option<Option<String>>,
    },
    Http {
        url: Option<Option<String>>,
        headers: Vec<(String, Option<String>)>,
    },
}

/// The `oauth` block of an HTTP entry, as written (the secret is a secret).
#[derive(Clone, PartialEq, Default)]
pub struct OAuthEntry {
    /// A pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret (may reference `${VAR}`).
    pub client_secret: Option<SecretString>,
    /// Scopes to request instead of discovering them.
    pub scope: Option<String>,
    /// The loopback port for `mcpvisor login` (random when absent).
    pub callback_port: Option<u16>,
    /// A client ID metadata document URL.
    pub client_metadata_url: Option<String>,
    /// `client_credentials` for unattended agents; the authorization code flow otherwise.
    pub grant: Option<String>,
    /// A PEM private key file for `private_key_jwt` (relative to the file's directory).
    pub private_key_file: Option<String>,
    /// `ES256` or `RS256`.
    pub signing_algorithm: Option<String>,
    /// Enterprise-managed authorization through this identity provider
    /// (`grant` `identity_assertion`, which its presence implies).
    pub identity_provider: Option<IdentityProviderEntry>,
}

impl fmt::Debug for OAuthEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthEntry")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("scope", &self.scope)
            .field("callback_port", &self.callback_port)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("grant", &self.grant)
            .field("private_key_file", &self.private_key_file)
            .field("identity_provider", &self.identity_provider)
            .finish()
    }
}

impl ServerEntry {
    /// The names of the variables this stdio server starts with, given the
    /// settings' passthrough names (the host's values are not read, only whether
    /// they are set; nothing is expanded). Empty for HTTP entries.
    pub fn environment_names(&self, passthrough: &[String]) -> Vec<String> {
        if self.kind != TransportKind::Stdio {
            return Vec::new();
        }
        let own: Vec<(String, SecretString)> = self
            .env
            .keys()
            .map(|k| (k.clone(), SecretString::new(String::new())))
            .collect();
        let names = passthrough.iter().chain(&self.env_passthrough);
        mcpvisor_transports::child_environment_names(names.map(String::as_str), &own, |n| {
            std::env::var_os(n)
        })
    }

    /// True when the entry sends its own `Authorization` header: then it does not
    /// log in with OAuth (and may not have an `oauth` block).
    pub fn static_authorization(&self) -> bool {
        self.headers
            .keys()
            .any(|k| k.eq_ignore_ascii_case("authorization"))
    }

    /// OAuth for this HTTP entry (every HTTP server may need a login; the `oauth`
    /// block only says how). `None` for stdio entries.
    pub fn oauth_config(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
        base_dir: &Path,
        home: &Path,
    ) -> Result<Option<OAuthConfig>, Vec<EntryProblem>> {
        if self.kind != TransportKind::Http || (self.oauth.is_none() && self.static_authorization())
        {
            return Ok(None);
        }
        let problem = |reason: String| EntryProblem::OAuth {
            server: self.name.clone(),
            reason,
        };
        let url = match self.url.as_deref().map(|u| expand(u, lookup)) {
            Some(Ok(u)) => u,
            _ => return Err(vec![problem("`url` does not resolve".into())]),
        };
        let o = self.oauth.clone().unwrap_or_default();
        let secret = match &o.client_secret {
            Some(s) => Some(expand(s.expose(), lookup).map_err(|e| {
                vec![EntryProblem::Expansion {
                    server: self.name.clone(),
                    field: "oauth.clientSecret".into(),
                    error: e,
                }]
            })?),
            None => None,
        };
        let grant = match (
            o.grant.as_deref(),
            &o.private_key_file,
            &o.identity_provider,
        ) {
            (None | Some("identity_assertion"), None, Some(idp)) => Grant::IdentityAssertion(
                idp.resolve(&self.name, lookup, base_dir)
                    .map_err(|p| vec![p])?,
            ),
            (Some("identity_assertion"), _, None) => {
                return Err(vec![problem(
                    "`grant` `identity_assertion` needs an `identityProvider`".into(),
                )]);
            }
            (_, _, Some(_)) => {
                return Err(vec![problem(
                    "an `identityProvider` goes with the `identity_assertion` grant alone".into(),
                )]);
            }
            (None | Some("authorization_code"), None, None) => Grant::AuthorizationCode,
            (Some("client_credentials"), None, None) => Grant::ClientSecret,
            (None | Some("client_credentials"), Some(file), None) => {
                let pem = read_key_file(&base_dir.join(file)).map_err(|e| {
                    vec![problem(format!("cannot read `oauth.privateKeyFile`: {e}"))]
                })?;
                Grant::PrivateKeyJwt {
                    pem: SecretString::new(pem),
                    algorithm: o
                        .signing_algorithm
                        .clone()
                        .unwrap_or_else(|| "ES256".into()),
                }
            }
            (Some(other), _, None) => {
                return Err(vec![problem(format!(
                    "`oauth.grant` `{other}` is not supported"
                ))]);
            }
        };
        Ok(Some(OAuthConfig {
            server: self.name.clone(),
            url,
            home: home.to_path_buf(),
            client_id: o.client_id.clone(),
            client_secret: secret.map(SecretString::new),
            client_metadata_url: o.client_metadata_url.clone(),
            scope: o.scope.clone(),
            grant,
            unattended: None,
        }))
    }
}
