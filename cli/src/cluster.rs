//! `mcpvisor serve --cluster-listen …`: the serving process as a node of a
//! cluster of supervisors.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use mcpvisor::cluster::{Cluster, ClusterOptions, Cookie, TlsFiles};
use mcpvisor::{Host, JoinCluster};

use crate::Failure;
use crate::output;

/// Options of a cluster node.
#[derive(Args)]
pub(crate) struct ClusterArgs {
    /// Make this serve a cluster node listening for other nodes at ADDR.
    #[arg(long, value_name = "ADDR")]
    cluster_listen: Option<SocketAddr>,
    /// A node to join, `host:port` (repeatable; tried until reached).
    #[arg(long, value_name = "ADDR", requires = "cluster_listen")]
    join: Vec<String>,
    /// A 0600 file holding the cookie every node of the cluster shares.
    #[arg(long, value_name = "PATH", requires = "cluster_listen")]
    cookie_file: Option<PathBuf>,
    /// This node's name, unique in the cluster (default: the listen address).
    #[arg(long, value_name = "NAME", requires = "cluster_listen")]
    node_name: Option<String>,
    /// This node's TLS certificate (PEM); with --tls-key and --tls-ca, nodes
    /// talk over mutual TLS.
    #[arg(long, value_name = "PATH", requires_all = ["tls_key", "tls_ca", "cluster_listen"])]
    tls_cert: Option<PathBuf>,
    /// This node's TLS key (PEM).
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// The CA that signs every node's certificate (PEM).
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    tls_ca: Option<PathBuf>,
    /// Allow plain TCP on an address other than loopback (without TLS anyone
    /// on the network reads and can alter the cluster's traffic).
    #[arg(long, requires = "cluster_listen")]
    insecure_plaintext: bool,
    /// How often nodes tell each other they are alive, in milliseconds.
    #[arg(long, default_value_t = 250, value_name = "MS")]
    heartbeat_ms: u64,
    /// A node silent this long is lost: its routes withdrawn, calls to it failed.
    #[arg(long, default_value_t = 2000, value_name = "MS")]
    node_lost_ms: u64,
}

impl ClusterArgs {
    /// Joins the cluster when --cluster-listen is given, telling the other
    /// nodes this one serves HTTP at `http` (when it does).
    pub(crate) async fn join(
        &self,
        host: &Host,
        http: Option<SocketAddr>,
    ) -> Result<Option<Cluster>, Failure> {
        let Some(listen) = self.cluster_listen else {
            return Ok(None);
        };
        let Some(cookie_file) = &self.cookie_file else {
            return Err(Failure(
                "--cluster-listen needs --cookie-file (a 0600 file holding the cluster's shared cookie)".into(),
                2,
            ));
        };
        let cookie = Cookie::from_file(cookie_file).map_err(|e| Failure(e.to_string(), 2))?;
        let mut options = ClusterOptions::new(listen, cookie);
        options.node_name = self.node_name.clone();
        options.join = self.join.clone();
        options.insecure_plaintext = self.insecure_plaintext;
        options.heartbeat = Duration::from_millis(self.heartbeat_ms);
        options.lost_after = Duration::from_millis(self.node_lost_ms);
        options.http = http;
        if let (Some(cert), Some(key), Some(ca)) = (&self.tls_cert, &self.tls_key, &self.tls_ca) {
            options.tls = Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                ca: ca.clone(),
            });
        }
        let tls = options.tls.is_some();
        let cluster = host
            .join_cluster(options)
            .await
            .map_err(|e| Failure(e.to_string(), 2))?;
        eprintln!(
            "mcpvisor: cluster node {} listening on {listen}{}",
            output::clean_line(cluster.node()),
            if tls { " (TLS)" } else { "" }
        );
        Ok(Some(cluster))
    }
}
