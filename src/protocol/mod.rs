//! MCP types, by topic, and the protocol versions we speak.
//!
//! Every type keeps what it does not model: unknown fields land in an `extra` map and schemas
//! stay raw JSON, so a host gets back exactly what the server sent.

mod apps;
mod content;
pub(crate) mod frontmatter;
mod lifecycle;
pub(crate) mod member;
mod notifications;
mod requests;
mod resources;
mod skills;
pub(crate) mod stateless;
mod tools;
pub(crate) mod top_level;
mod version;

/// The tasks extension's name (SEP-2663, 2026-07-28): a `tools/call` the server runs as a
/// task, followed with `tasks/get`, answered with `tasks/update`, cancelled with
/// `tasks/cancel`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

pub use apps::{ResourceUi, ToolUi, UiCsp, APP_MIME_TYPE, UI_EXTENSION};
pub use content::{ContentBlock, EmbeddedResource};
pub(crate) use lifecycle::InitializeParams;
pub(crate) use lifecycle::InitializeResult;
pub use lifecycle::{ClientCapabilities, Implementation, ServerCapabilities};
pub(crate) use notifications::LoggingMessageParams;
pub use notifications::{LoggingLevel, Progress};
pub(crate) use requests::check_elicitation_mode;
pub use requests::{Root, UrlElicitation};
pub(crate) use resources::CompleteResult;
pub use resources::{
    Completion, CompletionRef, GetPromptResult, Prompt, PromptArgument, PromptMessage,
    ReadResourceResult, Resource, ResourceTemplate,
};
pub use skills::{
    frontmatter, verify_file, verify_frontmatter, Skill, SkillFile, SKILLS_EXTENSION,
};
pub(crate) use stateless::{DiscoverResult, ResultType};
pub use tools::{json_kind, CallToolResult, Listing, Tool, ToolAnnotations};
// What a handler answers a server's request with when it refuses it. The messages themselves
// are internal: the in-memory pipe carries them as JSON values.
pub use crate::jsonrpc::RpcError;
pub use version::{
    ProtocolVersion, LATEST_PROTOCOL_VERSION, STATELESS_PROTOCOL_VERSIONS,
    SUPPORTED_PROTOCOL_VERSIONS,
};

/// The MCP method names this crate sends or handles.
pub(crate) mod methods {
    /// Client → server: what the server is and speaks (2026-07-28; the stateless era probe).
    pub const SERVER_DISCOVER: &str = "server/discover";
    /// Client → server: open a stream of change notifications (2026-07-28).
    pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
    /// Client → server: the handshake request.
    pub const INITIALIZE: &str = "initialize";
    /// Client → server: the handshake's closing notification.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// Either direction: liveness check.
    pub const PING: &str = "ping";
    /// Client → server: list tools (paginated).
    pub const TOOLS_LIST: &str = "tools/list";
    /// Client → server: call a tool.
    pub const TOOLS_CALL: &str = "tools/call";
    /// Client → server: list resources (paginated).
    pub const RESOURCES_LIST: &str = "resources/list";
    /// Client → server: list resource templates (paginated).
    pub const RESOURCE_TEMPLATES_LIST: &str = "resources/templates/list";
    /// Client → server: read a resource.
    pub const RESOURCES_READ: &str = "resources/read";
    /// A server's skills (the skills extension).
    pub const SKILLS_LIST: &str = "skills/list";
    /// Client → server: be told when a resource changes.
    pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
    /// Client → server: stop being told.
    pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
    /// Server → client: the resource list changed.
    pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
    /// Client → server: list prompts (paginated).
    pub const PROMPTS_LIST: &str = "prompts/list";
    /// Client → server: get a prompt with its arguments filled in.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// Server → client: the prompt list changed.
    pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
    /// Client → server: completion values for a prompt argument or template variable.
    pub const COMPLETION_COMPLETE: &str = "completion/complete";
    /// Client → server: the level of the log messages the server sends.
    pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
    /// The requests that only read or list: sending one twice does no harm, so one is sent
    /// again where it may not have reached the server (on a new session; on a new connection
    /// when the server closed a kept one as the request was written).
    pub const IDEMPOTENT: &[&str] = &[
        PING,
        TOOLS_LIST,
        RESOURCES_LIST,
        RESOURCE_TEMPLATES_LIST,
        RESOURCES_READ,
        PROMPTS_LIST,
        PROMPTS_GET,
        COMPLETION_COMPLETE,
    ];
    /// Client → server: a task's status (2025-11-25; and the tasks extension of 2026-07-28,
    /// where it carries the result too).
    pub const TASKS_GET: &str = "tasks/get";
    /// Client → server: answers to a task's `inputRequests` (the tasks extension).
    pub const TASKS_UPDATE: &str = "tasks/update";
    /// Client → server: a task's result, waiting until it is done (2025-11-25).
    pub const TASKS_RESULT: &str = "tasks/result";
    /// Client → server: cancel a task (2025-11-25, and the tasks extension).
    pub const TASKS_CANCEL: &str = "tasks/cancel";
    /// Server → client: the tool list changed.
    pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
    /// Either direction: a request was cancelled.
    pub const CANCELLED: &str = "notifications/cancelled";
    /// Either direction: progress on a request that carried a progress token.
    pub const PROGRESS: &str = "notifications/progress";
    /// Server → client: a log message.
    pub const LOG_MESSAGE: &str = "notifications/message";
    /// Server → client: list the client's roots.
    pub const ROOTS_LIST: &str = "roots/list";
    /// Server → client: ask the client's model for a completion.
    pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
    /// Server → client: ask the user for input.
    pub const ELICITATION_CREATE: &str = "elicitation/create";
}

/// `skip_serializing_if` helper for optional raw values.
pub(crate) fn is_none<T>(v: &Option<T>) -> bool {
    v.is_none()
}
