//! The browser driver's loopback callback accepts exactly one answer: the
//! authorization server's redirect for this login. The test plays the browser
//! (it reads the authorization URL, follows it to the fixture, and gets the
//! redirect back) and, before the real answer, sends the callback what a stale
//! tab or another site could: another path, a wrong `state`, no `code`, an
//! `error` with a wrong `state`. Each one is refused, and since each would end
//! the login in failure were it taken, the login succeeding with one code
//! exchange shows none was. After the answer the listener is gone.
//! The URL as `mcpvisor login` prints it: cli/tests/it/login.rs.

use std::time::Duration;

use mcpvisor::auth::{AuthState, AuthorizationDriver, BrowserDriver, DriverFuture};
use reqwest::Url;
use testkit::auth_server::ClientKind;
use testkit::auth_server::client::{http, notes_server};

/// A browser driver that hands the authorization URL to the test.
struct Relay {
    browser: BrowserDriver,
    urls: tokio::sync::mpsc::UnboundedSender<Url>,
}

impl AuthorizationDriver for Relay {
    fn redirect_uri(&self) -> Url {
        self.browser.redirect_uri()
    }

    fn authorize(&self, url: Url) -> DriverFuture<'_> {
        let _ = self.urls.send(url.clone());
        self.browser.authorize(url)
    }
}

/// `url` with its query replaced by `pairs`.
fn with_query(url: &Url, path: &str, pairs: &[(&str, &str)]) -> Url {
    let mut url = url.clone();
    url.set_path(path);
    url.set_query(None);
    for (k, v) in pairs {
        url.query_pairs_mut().append_pair(k, v);
    }
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callback_takes_only_this_logins_answer_and_then_closes() {
    let (auth, _home, notes) = notes_server(ClientKind::Public, "callback-once").await;
    let browser = BrowserDriver::bind(0, Duration::from_secs(60))
        .await
        .unwrap()
        .without_browser();
    let (urls, mut authorize_urls) = tokio::sync::mpsc::unbounded_channel();
    let relay = Relay { browser, urls };
    let redirect = relay.redirect_uri();
    let notes_login = notes.clone();
    let login = tokio::spawn(async move { notes_login.login(&http(), &relay).await });

    // The browser's part: the authorization server redirects back at once.
    let authorize = authorize_urls.recv().await.unwrap();
    let state = authorize
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
        .expect("the authorization URL carries a state");
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let answer = browser.get(authorize).send().await.unwrap();
    assert_eq!(answer.status(), 302);
    let back = redirect
        .join(answer.headers()["location"].to_str().unwrap())
        .unwrap();
    let code = back
        .query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
        .expect("the fixture's answer carries a code");
    let path = redirect.path().to_string();

    // Each of these, taken as the answer, would fail the login: a code the
    // fixture never issued, a state not ours, no code, an error.
    let strays = [
        with_query(
            &redirect,
            "/elsewhere",
            &[("code", "forged"), ("state", &state)],
        ),
        with_query(&redirect, &path, &[("code", &code), ("state", "not-ours")]),
        with_query(&redirect, &path, &[("code", &code)]),
        with_query(&redirect, &path, &[("state", &state)]),
        with_query(
            &redirect,
            &path,
            &[("code", &code), ("state", &state), ("state", "not-ours")],
        ),
        with_query(
            &redirect,
            &path,
            &[("error", "access_denied"), ("state", "not-ours")],
        ),
    ];
    for stray in strays {
        let status = http().get(stray.clone()).send().await.unwrap().status();
        assert!(status.is_client_error(), "{stray} was answered {status}");
        assert!(!login.is_finished(), "{stray} ended the login");
    }
    let posted = http().post(back.clone()).send().await.unwrap().status();
    assert!(posted.is_client_error(), "a POST was answered {posted}");

    assert_eq!(http().get(back.clone()).send().await.unwrap().status(), 200);
    tokio::time::timeout(Duration::from_secs(20), login)
        .await
        .expect("the answer ends the login")
        .unwrap()
        .expect("the login succeeds with its own answer");
    assert_eq!(auth.counts().code_exchanges, 1);
    assert!(matches!(notes.state().unwrap(), AuthState::LoggedIn { .. }));

    // The listener is closed: a second answer reaches nothing.
    assert!(
        http().get(back).send().await.is_err(),
        "the callback still listens"
    );
    assert_eq!(auth.counts().code_exchanges, 1);
    assert_eq!(auth.counts().token_requests, 1);
}
