//! The hot path alone, for a profiler: sequential echo calls of one client to
//! the rmcp echo server, and nothing else in the process.
//!
//! ```sh
//! valgrind --tool=callgrind target/release/harness profile-calls mcpvisor 2000
//! ```

use std::time::Instant;

use anyhow::bail;

use crate::clients::{Client, Connection};
use crate::servers::ServerTarget;

/// The argument that makes the harness run [`profile_calls`].
pub const PROFILE_ARG: &str = "profile-calls";

/// Opens `client`'s connection to the rmcp echo server (this binary), makes
/// 100 warm-up calls and then `calls` sequential calls, and returns the
/// mean round trip in microseconds.
pub async fn profile_calls(client: &str, calls: usize) -> anyhow::Result<f64> {
    let client = match client {
        "mcpvisor" => Client::Mcpvisor,
        "rmcp" => Client::Rmcp,
        "floor" => Client::Floor,
        "tokio-floor" => Client::TokioFloor,
        other => bail!("unknown client {other:?}"),
    };
    let target = ServerTarget::rmcp_echo(&std::env::current_exe()?);
    let mut connection = Connection::open(client, &target).await?;
    connection.sequential(100).await?;
    let start = Instant::now();
    connection.sequential(calls).await?;
    let mean = start.elapsed().as_secs_f64() * 1e6 / calls.max(1) as f64;
    connection.close().await;
    Ok(mean)
}
