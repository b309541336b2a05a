//! Fault injection on a running host: [`Host::inject`] and [`Host::clear_faults`].

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::oneshot;

use super::Host;
use crate::events::HostEvent;
use crate::fault::{Fault, FaultError};
use crate::fault_board::{LiveConnection, ServerFaults};
use crate::messages::{TransportFault, TransportMsg};

impl Host {
    /// Deals `fault` to the server named `server` and returns once it is
    /// applied (a signal sent, malformed lines delivered, a wire fault set);
    /// [`HostEvent::FaultInjected`] follows. Wire faults set while the server
    /// restarts meet its next connection.
    ///
    /// Teams use it to prove that their agent survives misbehaving servers: the
    /// supervisor isolates and restarts the server as it would for the real fault.
    pub async fn inject(&self, server: &str, fault: Fault) -> Result<(), FaultError> {
        if self.0.shut_down.load(Ordering::Relaxed) {
            return Err(FaultError::Shutdown);
        }
        let Some(name) = self.server_name(server) else {
            return Err(FaultError::UnknownServer(shown(server)));
        };
        fault
            .check()
            .map_err(|e| FaultError::OutOfRange(e.to_string()))?;
        let faults = self.0.faults.server(&name);
        let kind = fault.kind();
        let Some(http) = faults.is_http() else {
            return Err(FaultError::NotRunning(name.to_string()));
        };
        if !kind.applies_to(http) {
            return Err(FaultError::NotApplicable {
                server: name.to_string(),
                fault: kind,
                transport: if http { "http" } else { "stdio" },
                applies: if kind.is_process() {
                    "stdio servers (their process)"
                } else {
                    "HTTP servers"
                },
            });
        }
        match fault {
            Fault::Kill => drop(signal(&name, &faults, TransportFault::Kill).await?),
            Fault::CloseStdin => drop(signal(&name, &faults, TransportFault::CloseStdin).await?),
            Fault::ResetConnections => drop(signal(&name, &faults, TransportFault::Reset).await?),
            Fault::Stop { duration } => {
                let transport = live(&name, &faults)?.transport;
                let (tell, applied) = oneshot::channel();
                // One detached task stops and later continues the server, so a
                // caller that walks away (a cancelled request) cannot leave it
                // stopped with nothing to continue it.
                let timer = self.0.runtime.spawn(async move {
                    let (reply, done) = oneshot::channel();
                    let stop = TransportMsg::Fault(TransportFault::Stop, Some(reply));
                    if transport.cast(stop).is_err() {
                        return;
                    }
                    let result = done.await;
                    let stopped = matches!(result, Ok(Ok(())));
                    let _ = tell.send(result);
                    if stopped {
                        tokio::time::sleep(duration).await;
                        let _ = transport.cast(TransportMsg::Fault(TransportFault::Continue, None));
                    }
                });
                faults.set_resume(timer);
                match applied.await {
                    Ok(Ok(Ok(()))) => {}
                    Ok(Ok(Err(reason))) => {
                        return Err(FaultError::Failed {
                            server: name.to_string(),
                            reason,
                        });
                    }
                    _ => return Err(FaultError::NotRunning(name.to_string())),
                }
            }
            Fault::ExitDuringInitialize => faults.arm_exit_on_initialize(),
            Fault::Garbage { lines } => {
                let live = live(&name, &faults)?;
                if !live.sink.garbage(lines).await {
                    return Err(FaultError::NotRunning(name.to_string()));
                }
            }
            Fault::Oversize => faults.wire.oversize_next(),
            Fault::DelayAnswers { by, during } => faults.wire.delay_answers(by, during),
            Fault::DropAnswers { count } => faults.wire.drop_answers(count),
            Fault::CutStream => faults.wire.cut_next_stream(),
        }
        tracing::info!(server = %name, %fault, "fault injected");
        self.0.bus.emit(HostEvent::FaultInjected {
            server: name,
            fault,
        });
        Ok(())
    }

    /// Ends every fault set on `server`: wire faults, an armed start, a stop
    /// (the server continues at once).
    pub async fn clear_faults(&self, server: &str) -> Result<(), FaultError> {
        let Some(name) = self.server_name(server) else {
            return Err(FaultError::UnknownServer(shown(server)));
        };
        self.0.faults.server(&name).clear();
        Ok(())
    }

    fn server_name(&self, server: &str) -> Option<Arc<str>> {
        self.0
            .status
            .snapshot()
            .into_iter()
            .find(|s| &*s.name == server)
            .map(|s| s.name)
    }
}

fn live(name: &Arc<str>, faults: &ServerFaults) -> Result<LiveConnection, FaultError> {
    faults
        .live()
        .ok_or_else(|| FaultError::NotRunning(name.to_string()))
}

/// Has the connection's transport actor apply `fault`; the connection it reached.
async fn signal(
    name: &Arc<str>,
    faults: &ServerFaults,
    fault: TransportFault,
) -> Result<LiveConnection, FaultError> {
    let live = live(name, faults)?;
    let (reply, applied) = oneshot::channel();
    if live
        .transport
        .cast(TransportMsg::Fault(fault, Some(reply)))
        .is_err()
    {
        return Err(FaultError::NotRunning(name.to_string()));
    }
    match applied.await {
        Ok(Ok(())) => Ok(live),
        Ok(Err(reason)) => Err(FaultError::Failed {
            server: name.to_string(),
            reason,
        }),
        // The transport stopped before it got to the fault.
        Err(_) => Err(FaultError::NotRunning(name.to_string())),
    }
}

/// A server name as the caller wrote it, for an error: bounded, escaped.
fn shown(server: &str) -> String {
    server
        .chars()
        .take(64)
        .flat_map(char::escape_debug)
        .collect()
}
