//! MCP types and their validation at the protocol/client boundary: the
//! revisions and what each changes, messages, qualified names, tools and their
//! schemas, prompts, resources, completion, icons, logging, tasks, sampling,
//! elicitation forms and answers.

pub mod arguments_check;
pub mod caching;
pub mod client_offers;
pub mod completion;
pub mod discover;
pub mod elicit_answer;
pub mod elicitation;
pub mod icons;
pub mod input_required;
pub mod logging;
pub mod messages;
pub mod modern_errors;
pub mod names;
pub mod output_schema;
pub mod pages;
pub mod param_headers;
pub mod prompts;
pub mod request_meta;
pub mod resources;
pub mod result_type;
pub mod revision;
pub mod route_headers;
pub mod sampling;
pub mod subscriptions;
pub mod tasks;
pub mod tool_schema;
pub mod url_elicitation;
