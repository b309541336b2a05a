//! The chaos engine's node-kill fault: the run's host joins a cluster with
//! another node (`mcpvisor serve --cluster-listen …`, a real process with its
//! own demo server), and every other cycle kills that node with SIGKILL under
//! load, with probe calls waiting on it, then starts it again. The engine
//! checks that the probes fail as lost within the bound, the node's routes
//! leave and return, and no call to the host's own servers fails.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use mcpvisor::cluster::{ClusterOptions, Cookie};
use mcpvisor_chaos::{ChaosNode, ChaosOptions, NODE_KILL, Progress};
use serde_json::json;
use testkit::demo;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_nodes_leave_and_return_and_the_hosts_servers_never_notice() {
    let dir = testkit::serve::empty_dir("chaos-nodes", "kill");
    let cookie = dir.join("cookie");
    std::fs::write(&cookie, "chaos-node-cookie-0123456789abcdef0123\n").unwrap();
    std::fs::set_permissions(&cookie, std::fs::Permissions::from_mode(0o600)).unwrap();
    let node_dir = dir.join("node");
    std::fs::create_dir_all(&node_dir).unwrap();
    let demo_server = json!({"command": testkit::mcpvisor_exe(), "args": ["demo-server"]});
    std::fs::write(
        node_dir.join(".mcp.json"),
        json!({"mcpServers": {"remote": demo_server}}).to_string(),
    )
    .unwrap();
    let out = testkit::attached::run(&node_dir, &["enable", "remote"]);
    assert!(out.status.success(), "{out:?}");

    let host_listen: SocketAddr = format!("127.0.0.1:{}", testkit::peers::free_port())
        .parse()
        .unwrap();
    let node_listen = format!("127.0.0.1:{}", testkit::peers::free_port());
    let start = {
        let (node_dir, cookie, node_listen) =
            (node_dir.clone(), cookie.clone(), node_listen.clone());
        Arc::new(move || {
            Command::new(testkit::mcpvisor_exe())
                .current_dir(&node_dir)
                .env("MCPVISOR_HOME", node_dir.join("home"))
                .env_remove("RUST_LOG")
                .args([
                    "serve",
                    "--cluster-listen",
                    &node_listen,
                    "--node-name",
                    "n1",
                ])
                .arg("--cookie-file")
                .arg(&cookie)
                .args(["--join", &host_listen.to_string()])
                .args(["--heartbeat-ms", "100", "--node-lost-ms", "1000"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
        })
    };

    let mut cluster = ClusterOptions::new(host_listen, Cookie::from_file(&cookie).unwrap());
    cluster.node_name = Some("chaos".into());
    cluster.heartbeat = Duration::from_millis(100);
    cluster.lost_after = Duration::from_secs(1);
    let mut chaos = ChaosOptions::default();
    chaos.seed = 0x6e6f_6465;
    chaos.cycles = Some(4);
    chaos.faults = vec!["kill".parse().unwrap()];
    chaos.call_timeout = Duration::from_secs(3);
    chaos.cluster = Some(cluster);
    chaos.nodes = vec![ChaosNode {
        name: "n1".into(),
        start,
        probe: Some(("mcp__remote__sleep".into(), json!({"ms": 30_000}))),
    }];
    chaos.node_kill_every = 2;
    chaos.on_progress = Some(Arc::new(|p: &Progress| eprintln!("chaos: {p:?}")));
    let servers = vec![demo("a", &[]), demo("b", &[])];

    let report = mcpvisor_chaos::run(servers, mcpvisor_chaos::brisk_supervisor_options(), chaos)
        .await
        .unwrap();
    eprintln!("{report}");
    assert!(report.passed(), "{report}");
    assert_eq!(report.cycles, 4);
    let kills = &report.faults[NODE_KILL];
    assert_eq!((kills.dealt, kills.recovered), (2, 2), "{report}");
    assert_eq!(report.faults["kill"].dealt, 2, "{report}");
    assert_eq!(report.calls.healthy_failed, 0, "{report}");
    assert!(report.calls.healthy_ok > 0, "{report}");
}
