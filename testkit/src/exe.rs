//! The built `mcpvisor` binary the tests run: the CLI itself, and the demo
//! server (`mcpvisor demo-server`) most tests supervise.
//!
//! Only the CLI's own tests are told where cargo put it (`CARGO_BIN_EXE_*`
//! exists for a package's own binaries); every other crate's tests find it
//! beside their own executable, in the profile's directory. A workspace test
//! run (`cargo test --workspace`) builds it before any test runs; a run of one
//! crate's tests does not, so a missing binary, or one older than the sources
//! it is built from, stops the test with the command that fixes it, instead
//! of testing what the code was.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::SystemTime;

/// The crates compiled into the binary, relative to the workspace root.
const SOURCES: [&str; 10] = [
    "protocol",
    "transports",
    "actors",
    "auth",
    "cluster",
    "mcpvisor",
    "serve",
    "cli",
    "demo",
    "chaos",
];

/// The path of the built `mcpvisor` binary (checked once per test binary).
pub fn mcpvisor_exe() -> &'static str {
    static EXE: OnceLock<String> = OnceLock::new();
    EXE.get_or_init(|| {
        let exe = locate();
        if let Err(why) = fresh(&exe) {
            panic!(
                "{why}: build it first with `cargo build -p mcpvisor-cli` \
                 (`cargo test --workspace` builds it)"
            );
        }
        exe.to_str()
            .expect("the target directory's path is UTF-8")
            .to_string()
    })
}

/// `target/<profile>/mcpvisor`: a test executable is `target/<profile>/deps/<test>-<hash>`.
fn locate() -> PathBuf {
    let test = std::env::current_exe().expect("the test's own executable");
    let profile = test
        .parent()
        .and_then(Path::parent)
        .expect("a test executable lives in <target>/<profile>/deps");
    profile.join(format!("mcpvisor{}", std::env::consts::EXE_SUFFIX))
}

fn fresh(exe: &Path) -> Result<(), String> {
    let built = std::fs::metadata(exe)
        .and_then(|m| m.modified())
        .map_err(|_| format!("the CLI binary {} is not built", exe.display()))?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in SOURCES {
        let dir = root.join(krate);
        let newest = [newest(&dir.join("src")), newest(&dir.join("Cargo.toml"))]
            .into_iter()
            .flatten()
            .max();
        if let Some((when, path)) = newest
            && when > built
        {
            return Err(format!(
                "the CLI binary {} is older than {}",
                exe.display(),
                path.display()
            ));
        }
    }
    Ok(())
}

/// The newest modification time under `path`, and the file that has it.
fn newest(path: &Path) -> Option<(SystemTime, PathBuf)> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return Some((meta.modified().ok()?, path.to_path_buf()));
    }
    std::fs::read_dir(path)
        .ok()?
        .flatten()
        .filter_map(|entry| newest(&entry.path()))
        .max_by_key(|(when, _)| *when)
}
