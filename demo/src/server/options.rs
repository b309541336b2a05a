//! Command-line options of `mcpvisor demo-server`.

use std::path::PathBuf;

use super::hostile::Hostile;

/// Tools per `tools/list` page unless `--page-size` says otherwise.
pub const DEFAULT_PAGE_SIZE: usize = 3;

/// How the demo server behaves, including the faults it injects on purpose.
///
/// Derives [`clap::Args`] so the CLI can embed it as a subcommand. The
/// [`Default`] value equals what an empty command line gives. The fault knobs
/// are for tests and fault drills, so `--help` does not show them.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct DemoServerOptions {
    /// Tools per `tools/list` page (at least 1).
    #[arg(
        long,
        value_name = "N",
        default_value_t = DEFAULT_PAGE_SIZE,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
    )]
    pub page_size: usize,

    /// Also list a tool with exactly this name that behaves like `echo`.
    ///
    /// Repeatable. Names are not validated, so tests can present names that
    /// a client must reject ("bad name!") or duplicates ("echo").
    #[arg(long = "extra-tool", value_name = "NAME", hide = true)]
    pub extra_tools: Vec<String>,

    /// Never answer `initialize`, but keep reading and serving other requests.
    #[arg(long, hide = true)]
    pub hang_initialize: bool,

    /// Exit with code 4 when `initialize` arrives, without answering it.
    #[arg(long, hide = true)]
    pub exit_during_initialize: bool,

    /// Start `sleep 1000` in the server's process group and report its pid
    /// through the `grandchild_pid` tool.
    ///
    /// The grandchild is left running when the server exits, so only a client
    /// that signals the whole process group cleans it up.
    #[arg(long, hide = true)]
    pub grandchild: bool,

    /// Write a few lines to stderr at startup, as chatty real servers do.
    #[arg(long, hide = true)]
    pub stderr_banner: bool,

    /// Send `notifications/tools/list_changed` before answering `initialize`,
    /// as some real servers do.
    #[arg(long, hide = true)]
    pub list_changed_early: bool,

    /// Declare no tools (only logging) and refuse `tools/list`, as servers that
    /// offer only resources or prompts do.
    #[arg(long)]
    pub no_tools: bool,

    /// Misbehave on purpose in one way, for the hostile-server tests.
    #[arg(long, value_enum, value_name = "BEHAVIOUR", hide = true)]
    pub hostile: Option<Hostile>,

    /// Also list the fault tools `garbage` (garbage lines on stdout, then the
    /// answer) and `cut_answer` (half an answer line, then exit).
    #[arg(long, hide = true)]
    pub fault_tools: bool,

    /// Read this file when `initialize` arrives: `exit` exits with code 4,
    /// `hang` never answers; anything else (or no file) answers normally.
    ///
    /// Lets a harness turn startup faults on and off for later restarts of a
    /// server it already runs.
    #[arg(long, value_name = "PATH", hide = true)]
    pub fault_file: Option<PathBuf>,
}

impl Default for DemoServerOptions {
    fn default() -> Self {
        DemoServerOptions {
            page_size: DEFAULT_PAGE_SIZE,
            extra_tools: Vec::new(),
            hang_initialize: false,
            exit_during_initialize: false,
            grandchild: false,
            stderr_banner: false,
            list_changed_early: false,
            no_tools: false,
            hostile: None,
            fault_tools: false,
            fault_file: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        opts: DemoServerOptions,
    }

    #[test]
    fn empty_command_line_equals_default() {
        let cli = Cli::try_parse_from(["demo"]).expect("empty args parse");
        assert_eq!(cli.opts, DemoServerOptions::default());
    }

    #[test]
    fn flags_parse_and_page_size_zero_is_refused() {
        let cli = Cli::try_parse_from([
            "demo",
            "--page-size",
            "5",
            "--extra-tool",
            "bad name!",
            "--extra-tool",
            "echo",
            "--grandchild",
            "--hostile",
            "out-of-order",
            "--fault-file",
            "/tmp/f",
        ])
        .expect("flags parse");
        assert_eq!(cli.opts.page_size, 5);
        assert_eq!(cli.opts.extra_tools, vec!["bad name!", "echo"]);
        assert!(cli.opts.grandchild);
        assert!(!cli.opts.hang_initialize);
        assert_eq!(cli.opts.hostile, Some(Hostile::OutOfOrder));
        assert_eq!(cli.opts.fault_file, Some(PathBuf::from("/tmp/f")));
        assert!(Cli::try_parse_from(["demo", "--hostile", "polite"]).is_err());
        assert!(Cli::try_parse_from(["demo", "--page-size", "0"]).is_err());
    }
}
