//! `mcpvisor login` and `logout`, the real binary against the auth fixture.
//! The test is the person with the browser: it reads the authorization URL the
//! CLI prints (no browser can start: `PATH` holds none), follows it to the
//! fixture, and brings the redirect back to the CLI's loopback listener. The
//! tokens are stored and serve a call; `logout` removes them, and the next call
//! needs a login again.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::json;
use testkit::auth_server::client::TempHome;
use testkit::auth_server::{AuthServer, ClientKind};
use testkit::serve::{finish, text};

fn mcpvisor(dir: &Path) -> Command {
    let mut cmd = testkit::serve::mcpvisor(dir);
    // No `xdg-open` or `open` to find: the printed URL is the only way in.
    cmd.env("PATH", dir.join("no-programs"));
    cmd
}

fn run(dir: &Path, args: &[&str]) -> Output {
    finish(mcpvisor(dir).args(args), Duration::from_secs(60))
}

/// The files in `<home>/oauth` that hold tokens (not locks).
fn token_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir.join("home/oauth"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".json"))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_prints_the_url_stores_tokens_and_logout_removes_them() {
    let auth = AuthServer::start(ClientKind::Public).await;
    let home = TempHome::new("cli-login");
    let dir = home.0.clone();
    let config = json!({"mcpServers": {"notes": {"type": "http", "url": auth.mcp_url()}}});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let enabled = run(&dir, &["enable", "notes"]);
    assert!(enabled.status.success(), "{}", text(&enabled));
    let call = [
        "--no-attach",
        "call",
        "mcp__notes__echo",
        "text=after login",
    ];
    let before = run(&dir, &call);
    assert!(
        !before.status.success(),
        "a call before any login: {}",
        text(&before)
    );

    let mut login = mcpvisor(&dir)
        .args(["login", "notes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = login.stderr.take().unwrap();
    let (urls, printed) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = urls.send(line);
        }
    });
    let mut said = Vec::new();
    let url = loop {
        let line = printed
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no authorization URL printed: {said:?}"));
        if let Some(url) = line
            .trim()
            .strip_prefix(&format!("{}/authorize?", auth.base))
        {
            break format!("{}/authorize?{url}", auth.base);
        }
        said.push(line);
    };

    // The browser: the fixture authorizes at once and redirects to the CLI.
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = browser.get(&url).send().await.unwrap();
    assert_eq!(answer.status(), 302);
    let back = answer.headers()["location"].to_str().unwrap().to_string();
    assert!(back.starts_with("http://127.0.0.1:"), "{back}");
    let done = browser.get(&back).send().await.unwrap();
    assert_eq!(done.status(), 200);

    let out = tokio::task::spawn_blocking(move || login.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("logged in to `notes`"),
        "{}",
        text(&out)
    );
    assert_eq!(auth.counts().code_exchanges, 1);
    assert_eq!(token_files(&dir).len(), 1, "{:?}", token_files(&dir));

    let after = run(&dir, &call);
    assert!(after.status.success(), "{}", text(&after));
    assert!(
        String::from_utf8_lossy(&after.stdout).contains("after login"),
        "{}",
        text(&after)
    );
    let token = auth.access_tokens()[0].clone();
    assert!(
        auth.resource_requests()
            .iter()
            .any(|r| r.accepted && r.token.as_deref() == Some(&token)),
        "the stored token served the call"
    );

    // `servers` shows the login, then its absence after logout.
    let listed = run(&dir, &["servers"]);
    assert!(listed.status.success(), "{}", text(&listed));
    let line = |out: &Output| -> String {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find(|l| l.contains("notes"))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no line for notes: {}", text(out)))
    };
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("    login: logged in"),
        "{}",
        text(&listed)
    );

    let out = run(&dir, &["logout", "notes"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("logged out of `notes`"),
        "{}",
        text(&out)
    );
    assert!(token_files(&dir).is_empty(), "{:?}", token_files(&dir));
    let listed = run(&dir, &["servers"]);
    assert!(listed.status.success(), "{}", text(&listed));
    assert!(line(&listed).contains("notes"));
    assert!(
        !String::from_utf8_lossy(&listed.stdout).contains("login:"),
        "{}",
        text(&listed)
    );
    let requests = auth.resource_requests().len();
    let again = run(&dir, &call);
    assert!(
        !again.status.success(),
        "a call after logout: {}",
        text(&again)
    );
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("login"),
        "{}",
        text(&again)
    );
    assert!(
        auth.resource_requests().len() > requests,
        "the call was tried"
    );
    assert!(
        auth.resource_requests()[requests..]
            .iter()
            .all(|r| r.token.is_none()),
        "no token after logout"
    );
    assert_eq!(auth.counts().code_exchanges, 1);
}
