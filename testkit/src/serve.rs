//! `mcpvisor serve` as a test runs it: in its own empty directory and home,
//! stopped with SIGTERM (and killed if it hangs), its stderr collected.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// From start to the serving line.
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(30);
/// From SIGTERM to the exit of `serve`.
pub const EXIT_TIMEOUT: Duration = Duration::from_secs(15);

/// A new empty directory for one test, named by file and test.
pub fn empty_dir(file: &str, tag: &str) -> PathBuf {
    crate::scratch_dir(&format!("{file}-{tag}"))
}

/// Waits for `child` up to `within`; `None` when it is still running then.
pub fn wait_timeout(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait for a child") {
            return Some(status);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `mcpvisor` run in `dir` with its home in `dir/home`, in its own process group.
pub fn mcpvisor(dir: &Path) -> Command {
    let mut cmd = Command::new(crate::mcpvisor_exe());
    cmd.current_dir(dir)
        .env("MCPVISOR_HOME", dir.join("home"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .process_group(0);
    cmd
}

/// Runs `cmd` (from [`mcpvisor`], in its own process group) to its end within
/// `within`, reading its output as it comes so a full pipe never stalls it.
/// One that runs longer is killed with its group and fails the test.
pub fn finish(cmd: &mut Command, within: Duration) -> std::process::Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcpvisor");
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut all = Vec::new();
            let _ = pipe.read_to_end(&mut all);
            all
        })
    };
    let stdout = read(Box::new(child.stdout.take().expect("piped")));
    let stderr = read(Box::new(child.stderr.take().expect("piped")));
    let Some(status) = wait_timeout(&mut child, within) else {
        // Its group when it leads one; the child itself in any case.
        let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
        let _ = child.kill();
        let _ = child.wait();
        panic!("{cmd:?} did not finish within {within:?}");
    };
    std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// A run's status and both streams, for an assertion's message.
pub fn text(out: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A running `mcpvisor serve … --http …`; stopped (and killed on a hang) when dropped.
pub struct HttpServe {
    child: Child,
    /// The endpoint it printed: `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// The bearer token its clients send, read from the file it named
    /// (`None` with `--no-token`).
    pub token: Option<String>,
    stderr: Arc<Mutex<String>>,
}

impl HttpServe {
    /// `mcpvisor serve <args>` in `dir` (the args include `--http ADDR`), with
    /// `RUST_LOG` set to `log` when given; returns once it printed its address.
    pub fn start(dir: &Path, args: &[&str], log: Option<&str>) -> HttpServe {
        HttpServe::try_start(dir, args, log).unwrap_or_else(|why| panic!("{why}"))
    }

    /// [`HttpServe::start`], with why it did not start (its stderr) as an error.
    pub fn try_start(dir: &Path, args: &[&str], log: Option<&str>) -> Result<HttpServe, String> {
        let mut cmd = mcpvisor(dir);
        if let Some(log) = log {
            cmd.env("RUST_LOG", log);
        }
        let mut child = cmd
            .arg("serve")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start mcpvisor serve --http");
        let pipe = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (url_tx, url_rx) = mpsc::channel();
        let (token_tx, token_rx) = mpsc::channel();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("mcpvisor: serving ") {
                    let _ = url_tx.send(url.trim().to_string());
                }
                if let Some((_, rest)) = line.split_once("Bearer <the token in ")
                    && let Some((path, _)) = rest.split_once('>')
                {
                    let _ = token_tx.send(PathBuf::from(path));
                }
                let mut sink = sink.lock().unwrap();
                sink.push_str(&line);
                sink.push('\n');
            }
        });
        let mut serve = HttpServe {
            child,
            url: String::new(),
            token: None,
            stderr,
        };
        match url_rx.recv_timeout(LISTEN_TIMEOUT) {
            Ok(url) => {
                serve.url = url;
                // The token line comes before the serving line.
                serve.token = token_rx.try_recv().ok().map(|path| {
                    std::fs::read_to_string(&path)
                        .unwrap_or_else(|e| panic!("read the token {}: {e}", path.display()))
                        .trim()
                        .to_string()
                });
            }
            Err(_) => {
                return Err(format!(
                    "serve printed no serving line within {LISTEN_TIMEOUT:?}\nstderr:\n{}",
                    serve.output()
                ));
            }
        }
        Ok(serve)
    }

    /// An HTTP client that sends the token (when there is one) with every request.
    pub fn client(&self) -> reqwest::Client {
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(token) = &self.token {
            let value = format!("Bearer {token}");
            headers.insert(reqwest::header::AUTHORIZATION, value.parse().unwrap());
        }
        reqwest::Client::builder()
            .default_headers(headers)
            .build()
            .unwrap()
    }

    /// `Authorization: Bearer …` for clients built elsewhere.
    pub fn authorization(&self) -> Option<String> {
        self.token.as_ref().map(|t| format!("Bearer {t}"))
    }

    /// The address it serves HTTP on.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .parse()
            .expect("serve prints http://IP:PORT/mcp")
    }

    /// A raw TCP connection to it, for what an HTTP client would not send
    /// (reads give up after 20 s).
    pub fn connect_raw(&self) -> std::net::TcpStream {
        let stream = std::net::TcpStream::connect(self.addr()).expect("connect to serve");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        stream
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What it wrote to stderr so far.
    pub fn output(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// SIGTERM; the exit status (fails the test after [`EXIT_TIMEOUT`]).
    pub fn terminate(&mut self) -> ExitStatus {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM).expect("SIGTERM serve");
        match wait_timeout(&mut self.child, EXIT_TIMEOUT) {
            Some(status) => status,
            None => {
                let _ = killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGKILL);
                let _ = self.child.wait();
                panic!(
                    "serve still running {EXIT_TIMEOUT:?} after SIGTERM\nstderr:\n{}",
                    self.output()
                );
            }
        }
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM);
            if wait_timeout(&mut self.child, EXIT_TIMEOUT).is_none() {
                let _ = killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGKILL);
                let _ = self.child.wait();
            }
        }
    }
}

/// Runs `testkit/peers/clients/<script> <script_args…> <mcpvisor> serve --stdio
/// --config <config> --home <home> <serve_flags…>` (a Python SDK client in front
/// of `serve --stdio`; the SDK starts its server with a minimal environment, so
/// the home goes as a flag) and returns the one JSON object it printed.
pub fn python_client_of_serve(
    script: &str,
    script_args: &[&str],
    config: &Path,
    home: &Path,
    serve_flags: &[&str],
) -> serde_json::Value {
    let peers = super::peers_dir();
    let mut child = Command::new(peers.join("venv/bin/python"))
        .arg(peers.join("clients").join(script))
        .args(script_args)
        .arg(crate::mcpvisor_exe())
        .args(["serve", "--stdio", "--config", config.to_str().unwrap()])
        .args(["--home", home.to_str().unwrap()])
        .args(serve_flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if wait_timeout(&mut child, Duration::from_secs(90)).is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the Python client {script} did not finish");
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}
