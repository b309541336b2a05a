//! The CLI's integration tests, one binary: the `mcpvisor` binary as a user
//! runs it.

mod chaos;
mod child_environment;
mod commands;
mod config;
mod demo_server;
mod host_requests;
mod login;
mod oneshot;
mod resources_prompts;
mod servers;
mod watch;
