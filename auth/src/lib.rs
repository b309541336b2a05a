//! OAuth for mcpvisor's HTTP servers.
//!
//! [`OAuth`] is the facade: the HTTP transport asks it for a bearer token before
//! each request and tells it about `401` and `403 insufficient_scope`; the CLI
//! logs in and out through it. Behind it:
//! - discovery: protected-resource metadata (RFC 9728), authorization-server
//!   metadata (RFC 8414, OpenID discovery), and the 2025-03-26 fallbacks;
//! - login: authorization code with PKCE S256 and the RFC 8707 `resource`
//!   parameter, through a pluggable [`AuthorizationDriver`] (a browser with a
//!   loopback listener, or headless); client registration: pre-registered, a
//!   client ID metadata document, or RFC 7591;
//! - client credentials (`client_secret_basic`, `private_key_jwt`);
//! - enterprise-managed authorization: the host's ID token exchanged at its
//!   identity provider for an ID-JAG (RFC 8693), and that for an access token
//!   with the JWT bearer grant (RFC 7523);
//! - storage (private): token files under `<home>/oauth/`, 0700/0600, replaced
//!   atomically, with a per-server lock across read–refresh–write, one key per
//!   server (its name and configured URL), opened without following symbolic
//!   links; a configured client secret stays in the configuration. The file
//!   rules themselves are public as [`private_file`], for other state kept
//!   beside the tokens (the facade's approvals).
//!
//! Every OAuth request has a total timeout and follows no redirect: a 3xx is
//! [`AuthError::Redirected`]. Discovery checks the metadata's `issuer`
//! (RFC 8414 §3.3) and the callback's `iss` (RFC 9207), and accepts only https
//! URLs off loopback. Tokens and secrets never appear in `Debug`, errors or
//! logs, nor does a URL's query: URLs are shown through [`display_url`].
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

mod challenge;
mod client_credentials;
mod discovery;
mod display;
mod driver;
mod error;
mod http;
mod identity_assertion;
mod login;
mod oauth;
pub mod private_file;
mod storage;
mod tokens;

pub use challenge::Challenge;
pub use display::display_url;
pub use driver::{AuthorizationDriver, BrowserDriver, DriverFuture, HeadlessDriver, open_browser};
pub use error::AuthError;
pub use identity_assertion::{IdTokenSource, IdentityProvider};
pub use oauth::{AuthState, Grant, MAX_STEP_UPS, OAuth, OAuthConfig};
