//! The client side of a connection as state machines driven by values: the
//! session (handshake, negotiated revision, what the server offers), the call
//! table, a tool call run as a task, the bounds on a paged listing.

pub mod calls;
pub mod era;
pub mod listing;
pub mod session;
pub mod setup_deadlines;
pub mod task_call;
