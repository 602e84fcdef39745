//! The tools layer: how MCP tools are presented to a host: exposed names and text rendering.

pub mod naming;
pub mod render;

pub use naming::{exposed_name, exposed_names};
pub use render::render_text;
