//! Argument validation against the contract's verbatim schemas, compiled once per process.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

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
        return match unrepresentable_integer(&c.input, args, String::new()) {
            None => Ok(()),
            Some(at) => Err(McpError::new(
                Kind::InvalidArgs,
                format!(
                    "invalid argument '{at}': not an integer this server can represent \
                     (a whole number up to 18446744073709551615, without fraction or exponent)"
                ),
            )
            .with_hint(format!("See the inputSchema of {tool} in tools/list."))),
        };
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

/// Checks `args` against the tool's schema ([`validate`]) and returns them with the schema's
/// `default` of every property left out filled in: the one place a default is written.
pub fn checked(tool: &str, args: Value) -> Result<Map<String, Value>, McpError> {
    validate(tool, &args)?;
    let Value::Object(mut args) = args else {
        return Err(McpError::new(
            Kind::InvalidArgs,
            "arguments must be an object",
        ));
    };
    let properties = input_schema(tool)
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    for (name, property) in properties.into_iter().flatten() {
        if let Some(default) = property.get("default")
            && !args.contains_key(name)
        {
            args.insert(name.clone(), default.clone());
        }
    }
    Ok(args)
}

/// The first value (by its dotted path) that its schema types `"integer"` but that was not read
/// as one: past `u64`/`i64` (parsed as a float, so JSON Schema would still call it an integer if
/// its fraction is zero), or written with a fraction or exponent (`1.0`, `1e3`). Such values pass
/// the schema, yet no handler could use them: they are refused for every tool here, once.
fn unrepresentable_integer(schema: &Value, value: &Value, at: String) -> Option<String> {
    let integer = match schema.get("type") {
        Some(Value::String(t)) => t == "integer",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
        _ => false,
    };
    match value {
        Value::Number(n) if integer && n.as_u64().is_none() && n.as_i64().is_none() => Some(at),
        Value::Object(fields) => {
            let props = schema.get("properties").and_then(Value::as_object)?;
            fields.iter().find_map(|(k, v)| {
                let sub = props.get(k)?;
                let path = if at.is_empty() {
                    k.clone()
                } else {
                    format!("{at}.{k}")
                };
                unrepresentable_integer(sub, v, path)
            })
        }
        Value::Array(items) => {
            let sub = schema.get("items")?;
            items
                .iter()
                .enumerate()
                .find_map(|(i, v)| unrepresentable_integer(sub, v, format!("{at}.{i}")))
        }
        _ => None,
    }
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

    #[test]
    fn integers_past_u64_or_written_as_floats_are_refused() {
        let past_u64: Value =
            serde_json::from_str(r#"{"query":"a","offset":18446744073709551616}"#).unwrap();
        let e = validate("kb_search", &past_u64).unwrap_err();
        assert_eq!(e.kind, Kind::InvalidArgs);
        assert!(e.message.contains("'offset'"), "{}", e.message);
        for args in [
            json!({"query": "a", "offset": 1.0}),
            json!({"query": "a", "offset": 1.5}),
            json!({"query": "a", "offset": -1}),
            json!({"query": "a", "limit": 1e3}),
            json!({"depth": 2.0}),
        ] {
            let tool = if args.get("depth").is_some() {
                "kb_graph"
            } else {
                "kb_search"
            };
            let e = validate(tool, &args).unwrap_err();
            assert_eq!(e.kind, Kind::InvalidArgs, "{args}");
        }
        assert!(validate("kb_search", &json!({"query": "a", "offset": u64::MAX})).is_ok());
        assert!(validate("kb_graph", &json!({"depth": 3})).is_ok());
    }
}
