//! Elicitation at the terminal: the server's message, one prompt per field of
//! its form, then send, decline or cancel.
//!
//! Prompts are drawn on stderr (stdout carries results) by `inquire`, which
//! blocks, so a form is filled on a blocking thread; one form at a time holds
//! the terminal, so two servers' questions never interleave. Enter keeps a
//! field's default or leaves an optional field out (the library fills the
//! defaults before the answer goes back); Esc or Ctrl-C on any prompt cancels.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use inquire::InquireError;
use mcpvisor::{ElicitAnswer, Form, FormRequest};
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, error_codes};
use serde_json::Map;

use super::fields;
use crate::output::{clean, clean_line};

/// The terminal: one form at a time.
static TERMINAL: Mutex<()> = Mutex::new(());
/// A form is on the terminal (its raw mode must be undone if the process ends first).
static PROMPTING: AtomicBool = AtomicBool::new(false);

/// Answers one `elicitation/create`: asks the person on a terminal, else declines.
pub(super) async fn elicit(request: FormRequest) -> Result<ElicitAnswer, ErrorObject> {
    let server = clean_line(&request.server);
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        eprintln!(
            "mcpvisor: {server} asked for input ({}); declined: not a terminal",
            clean_line(&request.message)
        );
        return Ok(ElicitAnswer::decline());
    }
    let message = clean(&request.message);
    let form = request.form;
    on_terminal(ElicitAnswer::cancel(), move |withdrawn| {
        fill(&server, &message, &form, withdrawn)
    })
    .await
}

/// Runs `prompt` on a blocking thread (`inquire` blocks) once the terminal is
/// free: one prompt at a time. `prompt` can ask whether the request was
/// withdrawn meanwhile; one withdrawn before its turn is cancelled unseen.
pub(super) async fn on_terminal<T, F>(cancelled: T, prompt: F) -> Result<T, ErrorObject>
where
    T: Send + 'static,
    F: FnOnce(&dyn Fn() -> bool) -> T + Send + 'static,
{
    let withdrawn = Withdrawn::default();
    let flag = withdrawn.0.clone();
    let asked = tokio::task::spawn_blocking(move || {
        let _turn = TERMINAL.lock().unwrap_or_else(PoisonError::into_inner);
        if flag.load(Ordering::SeqCst) {
            return cancelled;
        }
        PROMPTING.store(true, Ordering::SeqCst);
        let answer = prompt(&|| flag.load(Ordering::SeqCst));
        PROMPTING.store(false, Ordering::SeqCst);
        answer
    })
    .await;
    drop(withdrawn);
    asked.map_err(|e| ErrorObject {
        code: error_codes::INTERNAL_ERROR,
        message: format!("the terminal prompt failed: {e}"),
        data: None,
    })
}

/// Set when the request's future is dropped (the server stopped waiting, the
/// host timed it out, the command ended): a form not yet shown is not shown.
#[derive(Default)]
struct Withdrawn(Arc<AtomicBool>);

impl Drop for Withdrawn {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Fills the form at the terminal; returns the answer for the server.
fn fill(server: &str, message: &str, form: &Form, withdrawn: &dyn Fn() -> bool) -> ElicitAnswer {
    eprintln!("\nmcpvisor: server `{server}` asks for input:");
    for line in message.lines() {
        eprintln!("  {line}");
    }
    eprintln!("  (Enter keeps a default or leaves an optional field out; Esc cancels)");
    let mut content = Map::new();
    for field in &form.fields {
        if withdrawn() {
            eprintln!("mcpvisor: `{server}` no longer waits for this answer");
            return ElicitAnswer::cancel();
        }
        match fields::prompt(field) {
            Ok(Some(value)) => {
                content.insert(field.name.clone(), value);
            }
            Ok(None) => {}
            Err(e) => {
                stopped(server, e);
                return ElicitAnswer::cancel();
            }
        }
    }
    let choices = vec![Final::Send, Final::Decline, Final::Cancel];
    let question = format!("Send this answer to `{server}`?");
    match inquire::Select::new(&question, choices)
        .without_filtering()
        .with_help_message("Enter sends; decline tells the server no; Esc cancels")
        .prompt()
    {
        Ok(Final::Send) => ElicitAnswer::accept(content),
        Ok(Final::Decline) => ElicitAnswer::decline(),
        Ok(Final::Cancel) => ElicitAnswer::cancel(),
        Err(e) => {
            stopped(server, e);
            ElicitAnswer::cancel()
        }
    }
}

/// A prompt that ended without an answer: Esc and Ctrl-C cancel; a terminal
/// that fails is reported and cancels too (the person made no choice).
pub(super) fn stopped(server: &str, e: InquireError) {
    match e {
        InquireError::OperationCanceled | InquireError::OperationInterrupted => {
            eprintln!("mcpvisor: input for `{server}` cancelled");
        }
        e => eprintln!("mcpvisor: cannot ask for `{server}`'s input: {e}"),
    }
}

#[derive(Clone, Copy)]
enum Final {
    Send,
    Decline,
    Cancel,
}

impl std::fmt::Display for Final {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Final::Send => "Send",
            Final::Decline => "Decline",
            Final::Cancel => "Cancel",
        })
    }
}

/// Gives the terminal back if the process ends while a form is on it (a call
/// that timed out under the person's hands): cooked mode, a cursor, a new line.
pub(crate) fn release_terminal() {
    if PROMPTING.load(Ordering::SeqCst) {
        let _ = crossterm::terminal::disable_raw_mode();
        let _ = crossterm::execute!(
            std::io::stderr(),
            crossterm::event::DisableBracketedPaste,
            crossterm::cursor::Show
        );
        eprintln!();
    }
}
