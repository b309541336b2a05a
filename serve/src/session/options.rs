//! The session's own options (`mcpvisor/session`): short names and which faults
//! it may deal, set before `initialize` and fixed after.

use mcpvisor_protocol::wire::jsonrpc::error_codes;
use serde_json::{Value, json};

use crate::ingress::Ingress;
use crate::outcome::Outcome;
use crate::tools::Naming;

use super::{Session, error};

impl Session {
    /// How tools are named to this client.
    pub(super) fn naming(&self) -> Naming {
        match self.naming.load(std::sync::atomic::Ordering::Relaxed) {
            n if n == Naming::Short as u8 => Naming::Short,
            n if n == Naming::Original as u8 => Naming::Original,
            _ => Naming::Qualified,
        }
    }

    /// [`extension::SESSION`]: a relayed client's own options, before it
    /// initializes; what this gateway cannot honour is refused, not ignored.
    pub(super) fn set_options(&self, params: Option<&Value>) -> Outcome {
        if !matches!(self.ingress, Ingress::Local) {
            return Err(error(
                error_codes::INVALID_REQUEST,
                "session options are for the local socket",
            ));
        }
        if self.state.lock().greeted {
            return Err(error(
                error_codes::INVALID_REQUEST,
                "session options come before `initialize`",
            ));
        }
        let names = params.and_then(|p| p.get("names")).and_then(Value::as_str);
        let Some(naming) = names.map_or(Some(Naming::Qualified), Naming::parse) else {
            return Err(error(
                error_codes::INVALID_PARAMS,
                "`names` is `original`, `short` or `qualified`",
            ));
        };
        let faults = params
            .and_then(|p| p.get("faults"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if faults && !self.gateway.options().allow_faults {
            return Err(error(
                error_codes::INVALID_PARAMS,
                "the running serve was started without --allow-faults; stop it, or start this one without the flag",
            ));
        }
        self.naming
            .store(naming as u8, std::sync::atomic::Ordering::Relaxed);
        self.faults_off
            .store(!faults, std::sync::atomic::Ordering::Relaxed);
        Ok(json!({}))
    }
}
