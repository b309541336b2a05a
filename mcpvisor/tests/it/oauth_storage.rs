//! The token store behind the OAuth facade, against an in-process authorization
//! server (testkit/src/auth_server): two processes, or two tasks, refreshing the
//! same nearly expired token make one refresh; token files are private and
//! replaced atomically; a file damaged by hand is reported, never reset.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor::ServerState;
use mcpvisor::auth::{AuthError, AuthState, HeadlessDriver, OAuth};
use testkit::auth_server::client::{
    TempHome, expires_at, file_mode, http, login, login_expiring_in, notes_server, oauth,
    oauth_config, protected, start_host, token_dir_names, unix_now, wait_login_required,
};
use testkit::auth_server::{AuthServer, ClientKind};
use testkit::eventually;

/// Set in the child processes of `two_processes_refreshing_at_once_make_one_refresh`.
const CHILD_HOME: &str = "MCPVISOR_OAUTH_TEST_CHILD_HOME";
const CHILD_URL: &str = "MCPVISOR_OAUTH_TEST_CHILD_URL";
const CHILD_ID: &str = "MCPVISOR_OAUTH_TEST_CHILD_ID";
/// How a child prints the bearer token it got.
pub(crate) const TOKEN_LINE: &str = "child bearer: ";

/// Starts child `id` of a concurrent-refresh test: a process of this binary
/// that takes the login in `home` for the server at `url`, waits for a `go`
/// file there, asks for a bearer token and prints it after [`TOKEN_LINE`].
pub(crate) fn refresh_child(home: &Path, url: &str, id: usize) -> std::process::Child {
    let (home, id) = (home.to_string_lossy(), id.to_string());
    testkit::rerun_alone(
        module_path!(),
        "refresh_child_process",
        &[(CHILD_HOME, &home), (CHILD_URL, url), (CHILD_ID, &id)],
    )
}

/// The child side: waits for the parent's go, asks for a bearer token, prints it.
/// Not a test of its own: ignored, and run (with `--ignored`) by its parent.
#[tokio::test]
#[ignore = "the child side of the tests of two processes refreshing at once"]
async fn refresh_child_process() {
    let (Ok(home), Ok(url), Ok(id)) = (
        std::env::var(CHILD_HOME),
        std::env::var(CHILD_URL),
        std::env::var(CHILD_ID),
    ) else {
        panic!("run by its parent test, which sets {CHILD_HOME}");
    };
    let home = Path::new(&home);
    let notes = oauth("notes", &url, home);
    std::fs::write(home.join(format!("ready-{id}")), b"").unwrap();
    let go = home.join("go");
    assert!(
        eventually(Duration::from_secs(60), || go.exists()).await,
        "no go from the parent"
    );
    let token = notes
        .bearer(&http())
        .await
        .expect("a bearer token")
        .expect("a stored login");
    println!("{TOKEN_LINE}{}", token.expose());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_refreshing_at_once_make_one_refresh() {
    let (auth, home, notes) = notes_server(ClientKind::Public, "processes").await;
    login_expiring_in(&auth, &notes, 30).await;
    let expiring = auth.access_tokens()[0].clone();
    // Long enough that the second process asks while the first one's refresh is out.
    auth.set_refresh_delay(Duration::from_millis(400));

    let children: Vec<_> = (0..2)
        .map(|id| refresh_child(&home.0, &auth.mcp_url(), id))
        .collect();
    let ready = |id: usize| home.0.join(format!("ready-{id}")).exists();
    assert!(
        eventually(Duration::from_secs(60), || ready(0) && ready(1)).await,
        "the children did not start"
    );
    std::fs::write(home.0.join("go"), b"").unwrap();
    let mut tokens = Vec::new();
    for child in children {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let token = stdout
            .lines()
            .find_map(|l| l.strip_prefix(TOKEN_LINE))
            .unwrap_or_else(|| panic!("no token printed:\n{stdout}"));
        tokens.push(token.to_string());
    }

    assert_eq!(auth.counts().refresh_requests, 1);
    assert_eq!(auth.counts().refresh_refusals, 0);
    let refreshed = auth.access_tokens()[1].clone();
    assert_ne!(refreshed, expiring);
    assert_eq!(tokens, [refreshed.clone(), refreshed.clone()]);
    assert!(auth.accepts(&refreshed, &auth.mcp_url()));
    assert!(expires_at(&notes) > unix_now() + 3000);
    let bearer = notes.bearer(&http()).await.unwrap().unwrap();
    assert_eq!(bearer.expose(), refreshed);
    assert_eq!(auth.counts().refresh_requests, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_refreshing_at_once_make_one_refresh() {
    let auth = AuthServer::start(ClientKind::Public).await;
    let home = TempHome::new("tasks");
    let first = oauth("notes", &auth.mcp_url(), &home.0);
    login_expiring_in(&auth, &first, 30).await;
    auth.set_refresh_delay(Duration::from_millis(400));
    // Another facade for the same server and file, as a second host in this process would have.
    let second = oauth("notes", &auth.mcp_url(), &home.0);

    let tasks: Vec<_> = [first.clone(), first.clone(), second.clone()]
        .into_iter()
        .map(|o| tokio::spawn(async move { o.bearer(&http()).await }))
        .collect();
    let mut tokens = Vec::new();
    for task in tasks {
        tokens.push(task.await.unwrap().unwrap().unwrap().expose().to_string());
    }

    assert_eq!(auth.counts().refresh_requests, 1);
    let refreshed = auth.access_tokens()[1].clone();
    assert_eq!(
        tokens,
        [refreshed.clone(), refreshed.clone(), refreshed.clone()]
    );
    assert!(auth.accepts(&refreshed, &auth.mcp_url()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_files_are_private_and_replaced_without_leftovers() {
    let (auth, home, notes) = notes_server(ClientKind::Public, "modes").await;
    let dir = home.0.join("oauth");
    assert!(!dir.exists());
    login_expiring_in(&auth, &notes, 30).await;
    // A refresh replaces the file written by the login.
    notes.bearer(&http()).await.unwrap();
    assert_eq!(auth.counts().refresh_requests, 1);

    assert_eq!(file_mode(&dir), 0o700);
    assert_eq!(notes.token_path().parent(), Some(dir.as_path()));
    let names = token_dir_names(&home.0);
    // The token file and its lock: no temporary file left by either write.
    let token_file = notes.token_path();
    let stem = token_file.file_stem().unwrap().to_string_lossy();
    assert_eq!(names, [format!("{stem}.json"), format!("{stem}.lock")]);
    for name in &names {
        assert_eq!(file_mode(&dir.join(name)), 0o600, "{name}");
    }
    let stored = std::fs::read_to_string(&token_file).unwrap();
    assert!(stored.contains(&auth.access_tokens()[1]));
    assert!(!stored.contains(&auth.access_tokens()[0]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_file_corrupted_by_hand_is_reported_and_never_reset() {
    let auth = AuthServer::start(ClientKind::Public).await;
    let home = TempHome::new("corrupt");
    login(&oauth("notes", &auth.mcp_url(), &home.0)).await;
    // A process started after the file was damaged; even one that may log in
    // without a person must not paper over it.
    let mut config = oauth_config("notes", &auth.mcp_url(), &home.0);
    config.unattended = Some(Arc::new(HeadlessDriver::new().unwrap()));
    let notes = Arc::new(OAuth::new(config).unwrap());
    let path = notes.token_path();
    assert!(path.exists());
    let garbage = "{\n  \"resource\": \"http://127.0.0.1/mcp\",\n  \"access_token\": oops\n";
    std::fs::write(&path, garbage).unwrap();
    let counts = auth.counts();

    let corrupt = |e: &AuthError| matches!(e, AuthError::CorruptTokenFile { path: p, line: 3, .. } if *p == path);
    let error = notes.state().unwrap_err();
    assert!(corrupt(&error), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("corrupt"), "{message}");
    assert!(message.contains("mcpvisor logout notes"), "{message}");
    let error = notes.bearer(&http()).await.unwrap_err();
    assert!(corrupt(&error), "{error:?}");

    let (host, _events) = start_host(protected("notes", &auth.mcp_url(), &notes)).await;
    let ServerState::LoginRequired { reason } = wait_login_required(&host, "notes").await else {
        unreachable!()
    };
    assert!(reason.to_string().contains("corrupt"), "{reason}");
    host.shutdown().await;

    assert_eq!(std::fs::read_to_string(&path).unwrap(), garbage);
    assert_eq!(auth.counts(), counts, "nothing was refreshed or logged in");
    assert!(notes.logout().unwrap());
    assert_eq!(notes.state().unwrap(), AuthState::LoggedOut);
}
