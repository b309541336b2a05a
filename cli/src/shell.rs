//! `mcpvisor completions <shell>` and `mcpvisor man`: generated from the
//! command definitions, so they never drift from them. For bash and fish
//! the script also completes `call` and `describe` with the qualified tool
//! names of a running `serve` (`mcpvisor tool-names`, which never starts a
//! server: without a running serve it prints nothing), and the commands that
//! take a server with the configuration's entries (`mcpvisor server-names`).

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::Failure;
use crate::cli::Cli;

/// Prints the completion script for `shell`.
pub(crate) fn completions(shell: Shell) -> Result<ExitCode, Failure> {
    let mut command = Cli::command();
    let mut generated = Vec::new();
    clap_complete::generate(shell, &mut command, "mcpvisor", &mut generated);
    let script = without_hidden(&String::from_utf8_lossy(&generated)).into_bytes();
    let extra = match shell {
        Shell::Bash => BASH_TOOLS,
        Shell::Fish => FISH_TOOLS,
        _ => "",
    };
    let mut out = std::io::stdout().lock();
    let written = out
        .write_all(&script)
        .and_then(|()| out.write_all(extra.as_bytes()));
    finished(written, "the script")
}

/// The commands only completion scripts run.
const HIDDEN: [&str; 2] = ["tool-names", "server-names"];

/// `script` without the lines and words that would offer a [`HIDDEN`]
/// command (the generators list hidden subcommands too): bash's `opts`
/// words, and the one line per candidate of the other shells.
fn without_hidden(script: &str) -> String {
    let offers = |line: &str, name: &str| {
        let t = line.trim_start();
        t.contains(&format!("-a \"{name}\""))
            || t.starts_with(&format!("'{name}:"))
            || t.starts_with(&format!("cand {name} "))
            || t.contains(&format!("CompletionResult]::new('{name}'"))
    };
    let mut out = String::with_capacity(script.len());
    for line in script.lines() {
        if HIDDEN.iter().any(|name| offers(line, name)) {
            continue;
        }
        if line.trim_start().starts_with("opts=\"") {
            let mut kept = line.to_string();
            for name in HIDDEN {
                kept = kept.replace(&format!(" {name} "), " ");
            }
            out.push_str(&kept);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// Prints the man page (roff) of `mcpvisor`, its commands listed.
pub(crate) fn man() -> Result<ExitCode, Failure> {
    let page = clap_mangen::Man::new(Cli::command());
    let mut roff = Vec::new();
    page.render(&mut roff)
        .map_err(|e| Failure(format!("cannot render the man page: {e}"), 1))?;
    let written = std::io::stdout().lock().write_all(&roff);
    finished(written, "the man page")
}

/// A reader that stopped early (`| head`) is no failure.
fn finished(written: std::io::Result<()>, what: &str) -> Result<ExitCode, Failure> {
    match written {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::from(141)),
        Err(e) => Err(Failure(format!("cannot write {what}: {e}"), 1)),
    }
}

const BASH_TOOLS: &str = r#"
# Qualified tool names from a running `mcpvisor serve`, after `call` and `describe`.
_mcpvisor_with_tools() {
    local prev="${COMP_WORDS[COMP_CWORD-1]}" config=() i
    # The names of the serve for the file this command line names.
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [[ "${COMP_WORDS[i]}" == "--config" ]]; then config=(--config "${COMP_WORDS[i+1]}"); fi
    done
    if [[ "$prev" == "call" || "$prev" == "describe" ]]; then
        COMPREPLY=( $(compgen -W "$(mcpvisor "${config[@]}" tool-names 2>/dev/null)" -- "${COMP_WORDS[COMP_CWORD]}") )
        return 0
    fi
    case "$prev" in
        tools|restart|get|remove|enable|disable|login|logout|resources|prompts|inject)
            COMPREPLY=( $(compgen -W "$(mcpvisor "${config[@]}" server-names 2>/dev/null)" -- "${COMP_WORDS[COMP_CWORD]}") )
            return 0
            ;;
    esac
    _mcpvisor "$@"
}
complete -F _mcpvisor_with_tools -o bashdefault -o default mcpvisor
"#;

const FISH_TOOLS: &str = r#"
# Qualified tool names from a running `mcpvisor serve`, after `call` and `describe`.
complete -c mcpvisor -n '__fish_seen_subcommand_from call describe' -f -a '(mcpvisor tool-names 2>/dev/null)'
# Server names from the configuration, after the commands that take one.
complete -c mcpvisor -n '__fish_seen_subcommand_from tools restart get remove enable disable login logout resources prompts inject' -f -a '(mcpvisor server-names 2>/dev/null)'
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_script_offers_the_hidden_commands() {
        for shell in [
            Shell::Bash,
            Shell::Zsh,
            Shell::Fish,
            Shell::Elvish,
            Shell::PowerShell,
        ] {
            let mut generated = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "mcpvisor", &mut generated);
            let generated = String::from_utf8(generated).unwrap();
            assert!(
                generated.contains("tool-names"),
                "{shell}: the generator lists it"
            );
            let script = without_hidden(&generated);
            for line in script.lines() {
                for name in HIDDEN {
                    let offered = line.contains(&format!(" {name} "))
                        && line.trim_start().starts_with("opts=")
                        || line.contains(&format!("-a \"{name}\""))
                        || line.trim_start().starts_with(&format!("'{name}:"))
                        || line.trim_start().starts_with(&format!("cand {name} "))
                        || line.contains(&format!("new('{name}'"));
                    assert!(!offered, "{shell} offers {name}: {line}");
                }
            }
            assert!(
                script.contains("describe"),
                "{shell}: the visible ones stay"
            );
        }
    }
}
