//! The library's integration tests, one binary: a `Host` supervising real
//! servers (the demo server from the built binary, the pinned third-party
//! peers, the in-process HTTP and OAuth fixtures).

mod deadlines;
mod failures;
mod host_api;
mod host_calls;
mod host_death;
mod host_events;
mod host_requests;
mod http_fixture;
mod http_hardening;
mod http_transport;
mod interop;
mod oauth;
mod oauth_browser_callback;
mod oauth_client_assertion;
mod oauth_config_grants;
mod oauth_hardening;
mod oauth_https_only;
mod oauth_oidc_provider;
mod oauth_storage;
mod oauth_storage_hardening;
mod protocol_versions;
mod reload;
mod resources_prompts;
mod resources_prompts_deadlines;
mod routes;
mod stateless;
mod stateless_http;
mod stateless_streams;
mod teardown;
mod unreadable_answers;
mod url_elicitation;
