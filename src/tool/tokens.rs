//! What a tool's definition costs in a model's context, estimated.
//!
//! The heuristic: one token per 4 bytes of the definition as a host sends it to a model API
//! (`{"name":…,"description":…,"input_schema":…}`, compact JSON). Measured against a BPE
//! tokenizer (the one Anthropic published with its SDK for its earlier models) on the 39 tools of
//! four real servers (server-everything, filesystem, memory, sequential-thinking), it
//! over-estimates by a tenth in total (mean error 11% per tool, at worst 25%): the side a budget
//! wants to err on. A tokenizer was not taken in: each model family has its own, and none of
//! them is small.

use serde::Serialize;
use serde_json::Value;

/// The bytes one estimated token stands for.
pub const BYTES_PER_TOKEN: usize = 4;

/// The estimated tokens of `bytes` bytes of definition text.
pub fn estimated_tokens(bytes: usize) -> usize {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

#[derive(Serialize)]
struct Definition<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

/// Counts bytes written, keeping none.
struct Count(usize);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The estimated tokens of a definition (see the module docs).
pub(crate) fn definition_tokens(name: &str, description: &str, parameters: &Value) -> usize {
    let mut count = Count(0);
    let definition = Definition {
        name,
        description,
        input_schema: parameters,
    };
    let _ = serde_json::to_writer(&mut count, &definition);
    estimated_tokens(count.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_definition_costs_a_token_per_four_bytes_of_its_json() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        let text = serde_json::to_string(
            &json!({"name": "read", "description": "Reads a file.", "input_schema": schema}),
        )
        .unwrap();
        assert_eq!(
            definition_tokens("read", "Reads a file.", &schema),
            text.len().div_ceil(4)
        );
        assert_eq!(estimated_tokens(0), 0);
        assert_eq!(estimated_tokens(5), 2);
    }
}
