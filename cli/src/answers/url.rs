//! URL-mode elicitation at the terminal: the server's reason, the whole URL
//! and its host apart, then the person's choice. Nothing is opened without
//! it; "Open" starts the browser (or says to open the URL by hand) and tells
//! the server the person went there. Off a terminal the request is declined.

use std::io::IsTerminal;

use mcpvisor::{ElicitAction, UrlRequest};
use mcpvisor_protocol::mcp::url_elicitation::UrlElicitation;
use mcpvisor_protocol::wire::jsonrpc::ErrorObject;

use super::elicit::{on_terminal, stopped};
use crate::output::{clean, clean_line};

/// Answers one `elicitation/create` in URL mode.
pub(super) async fn open(request: UrlRequest) -> Result<ElicitAction, ErrorObject> {
    let server = clean_line(&request.server);
    let asked = request.elicitation;
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        eprintln!(
            "mcpvisor: {server} asks to open a page at {}; declined: not a terminal",
            clean_line(asked.host())
        );
        return Ok(ElicitAction::Decline);
    }
    on_terminal(ElicitAction::Cancel, move |_| choose(&server, &asked)).await
}

fn choose(server: &str, asked: &UrlElicitation) -> ElicitAction {
    eprintln!("\nmcpvisor: server `{server}` asks you to open a page. It says:");
    // The server's words, each line marked as theirs: they cannot pass for
    // the host and URL lines below.
    for line in clean(&asked.message).lines() {
        eprintln!("  │ {line}");
    }
    let host = clean_line(asked.host());
    eprintln!("  host: {host}");
    eprintln!("  URL:  {}", clean_line(&asked.url));
    let choices = vec!["Open it", "Decline"];
    let question = format!("Open this page on {host} for `{server}`?");
    match inquire::Select::new(&question, choices)
        .without_filtering()
        .with_help_message("Only if you trust the host above; Esc cancels")
        .prompt()
    {
        Ok("Open it") => {
            if !mcpvisor::auth::open_browser(&asked.url) {
                eprintln!("mcpvisor: no browser could be started; open the URL above yourself");
            }
            ElicitAction::Accept
        }
        Ok(_) => ElicitAction::Decline,
        Err(e) => {
            stopped(server, e);
            ElicitAction::Cancel
        }
    }
}
