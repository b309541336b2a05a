//! How long a change of one server's tools takes to reach the host's routes.

use std::pin::pin;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use futures::StreamExt;
use mcpvisor::{CallOptions, Host, HostEvent};

use super::super::calls::ms;

/// Calls `grow` on `server` (which then lists `new_tool` too and sends
/// `notifications/tools/list_changed`) and returns the milliseconds until
/// the host announces `server`'s routes with `new_tool` among them: the
/// notification, the re-list, the registry's rebuild and the publication.
pub(super) async fn change_published(
    host: &Host,
    server: &str,
    new_tool: &str,
) -> anyhow::Result<f64> {
    let wanted = format!("mcp__{server}__{new_tool}");
    // Subscribed before the change, so its announcement cannot be missed.
    let mut events = pin!(host.events());
    let start = Instant::now();
    // The request is sent now; holding the call keeps it from being cancelled.
    let call = host.call(
        &format!("mcp__{server}__grow"),
        serde_json::json!({}),
        CallOptions::default(),
    );
    let published = async {
        while let Some(event) = events.next().await {
            // The announcement carries every route of the server; the table
            // is checked instead, which is one lookup however many there are.
            if let HostEvent::ToolsChanged {
                server: changed, ..
            } = &event
                && &**changed == server
                && host.routes().get(&wanted).is_some()
            {
                return Ok(());
            }
        }
        bail!("the event stream ended")
    };
    tokio::time::timeout(Duration::from_secs(120), published)
        .await
        .with_context(|| format!("{wanted} not routed within 120 s"))??;
    let elapsed = ms(start.elapsed());
    let answer = call.await?;
    ensure!(!answer.is_error, "grow failed: {}", answer.text());
    Ok(elapsed)
}
