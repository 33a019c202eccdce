//! Argument validation against the contract's verbatim schemas, compiled once per process.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use crate::errors::{Kind, McpError};
use crate::tools::TOOLS;

struct Compiled {
    input: Value,
    output: Value,
    validator: jsonschema::Validator,
}

fn compiled() -> &'static HashMap<&'static str, Compiled> {
    static CELL: OnceLock<HashMap<&'static str, Compiled>> = OnceLock::new();
    CELL.get_or_init(|| {
        TOOLS
            .iter()
            .filter_map(|t| {
                // The schema files are embedded at build time and checked by tests; a broken one
                // leaves its tool unavailable rather than taking the server down.
                let input: Value = serde_json::from_str(t.input_schema).ok()?;
                let output: Value = serde_json::from_str(t.output_schema).ok()?;
                let validator = jsonschema::validator_for(&input).ok()?;
                Some((
                    t.name,
                    Compiled {
                        input,
                        output,
                        validator,
                    },
                ))
            })
            .collect()
    })
}

/// The input schema of a tool as JSON.
pub fn input_schema(tool: &str) -> Option<&'static Value> {
    compiled().get(tool).map(|c| &c.input)
}

/// The output schema of a tool as JSON.
pub fn output_schema(tool: &str) -> Option<&'static Value> {
    compiled().get(tool).map(|c| &c.output)
}

/// Checks `args` against the tool's schema; the error names the offending field.
pub fn validate(tool: &str, args: &Value) -> Result<(), McpError> {
    let c = compiled()
        .get(tool)
        .ok_or_else(|| McpError::new(Kind::Internal, format!("no schema for {tool}")))?;
    let Some(first) = c.validator.iter_errors(args).next() else {
        return Ok(());
    };
    let at = first
        .instance_path()
        .as_str()
        .trim_start_matches('/')
        .replace('/', ".");
    let message = if at.is_empty() {
        format!("invalid arguments: {first}")
    } else {
        format!("invalid argument '{at}': {first}")
    };
    Err(McpError::new(Kind::InvalidArgs, message)
        .with_hint(format!("See the inputSchema of {tool} in tools/list.")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_tool_has_compiled_schemas() {
        for t in TOOLS {
            assert!(input_schema(t.name).is_some(), "{} input", t.name);
            assert!(output_schema(t.name).is_some(), "{} output", t.name);
        }
    }

    #[test]
    fn errors_name_the_field() {
        let e = validate("kb_search", &json!({"query": "x", "limit": 0})).unwrap_err();
        assert_eq!(e.kind, Kind::InvalidArgs);
        assert!(e.message.contains("'limit'"), "{}", e.message);
        let e = validate("kb_get_page", &json!({"path": "a.md", "extra": 1})).unwrap_err();
        assert!(e.message.contains("extra"), "{}", e.message);
        let e = validate("kb_add_tag", &json!({"path": "a.md", "tag": "has space"})).unwrap_err();
        assert!(e.message.contains("'tag'"), "{}", e.message);
        assert!(validate("kb_graph", &json!({"path": null})).is_ok());
    }
}
