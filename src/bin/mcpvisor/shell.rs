//! `mcpvisor completions <shell>` and `mcpvisor man`: generated from the
//! command definitions, so they never drift from them. For bash and fish
//! the script also completes `call` and `describe` with the qualified tool
//! names of a running `serve` (`mcpvisor tool-names`, which never starts a
//! server: without a running serve it prints nothing).

use std::io::Write;
use std::process::ExitCode;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::Failure;
use crate::cli::Cli;

/// Prints the completion script for `shell`.
pub(crate) fn completions(shell: Shell) -> Result<ExitCode, Failure> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "mcpvisor", &mut script);
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
    _mcpvisor "$@"
}
complete -F _mcpvisor_with_tools -o bashdefault -o default mcpvisor
"#;

const FISH_TOOLS: &str = r#"
# Qualified tool names from a running `mcpvisor serve`, after `call` and `describe`.
complete -c mcpvisor -n '__fish_seen_subcommand_from call describe' -f -a '(mcpvisor tool-names 2>/dev/null)'
"#;
